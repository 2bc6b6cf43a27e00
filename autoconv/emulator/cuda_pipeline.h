// autoconv CUDA emulation of <cuda_pipeline.h>: cp.async copies from global to shared memory.
//
// A template's `#include <cuda_pipeline.h>` finds this file (the emulator compiles with
// -I on this folder), so these functions exist under emulation exactly when the template
// includes the header, as on the GPU.
//
// Model: a copy reads its source when issued (so AddressSanitizer reports an out-of-bounds
// source at the issuing line) and writes its destination as late as CUDA allows: when
// __pipeline_wait_prior() retires its batch, when a wait on an mbarrier sees the phase its
// arrival (mbarrier::arrive_when_copies_land) completed, or when the thread returns. A thread that
// reads the destination before waiting therefore reads the poisoned value, so a missing
// wait shows up as NaN, not as a lucky right answer.
#pragma once

#include "cuda_emulation.h"

//! Copies `size_and_align` bytes (4, 8 or 16) from global to shared memory, of which the
//! last `zfill` bytes are zeros instead of source bytes (the src-size form of cp.async).
inline void __pipeline_memcpy_async(void* __restrict__ dst_shared, const void* __restrict__ src_global,
                                    std::size_t size_and_align, std::size_t zfill = 0) {
    autoconv_emu::async_copy(dst_shared, src_global, size_and_align, zfill);
}

//! Closes the batch of copies this thread issued since its last commit.
inline void __pipeline_commit() { autoconv_emu::async_commit(); }

//! Waits until at most `pending` of this thread's committed batches are in flight.
inline void __pipeline_wait_prior(std::size_t pending) { autoconv_emu::async_wait_prior(pending); }
