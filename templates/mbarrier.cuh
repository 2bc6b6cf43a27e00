// mbarrier.cuh: Hopper's shared-memory barriers with phases (mbarrier), for pipelines in which
// some warps produce a stage of shared memory and others consume it (sm_90).
//
// Plain CUDA, pulled in by a template's Jinja include (as wgmma_f16.cuh): the character pairs
// that open a Jinja tag (a brace followed by %, { or #) must not occur in it. It stands alone.
//
// An mbarrier is an 8-byte object in shared memory (unsigned long long, 8-byte aligned; autoconv
// keeps it in the dynamic shared memory `smem`). It counts arrivals in phases: init(count) starts
// phase 0 expecting `count` arrivals; the count-th arrival completes the phase, and the next one
// begins, expecting `count` again. Phases are told apart by their parity (0, 1, 0, ...).
//   init(barrier, count)   one thread sets it up; the block then calls __syncthreads() before any
//                          thread uses it (the init is a CTA-scope write, visible to the other
//                          threads only through that barrier).
//   arrive(barrier)        one arrival, with release semantics at CTA scope: what this thread wrote
//                          before it is visible to a thread whose wait sees the phase complete.
//   arrive_expect_bytes(barrier, bytes)
//                          one arrival (as arrive) that also expects `bytes` transaction bytes in
//                          the current phase: the bytes the TMA copies issued for it bring
//                          (tma.cuh), counted on completion. The phase then completes when its
//                          arrivals are all in and the copies brought exactly the bytes expected.
//   arrive_when_copies_land(barrier)
//                          one arrival, made when every cp.async copy this thread issued before it
//                          (committed or not) has landed in shared memory. It is one of the `count`
//                          arrivals (.noinc: the barrier's expected count is not raised for it), so
//                          init's count must include these arrivals.
//   wait(barrier, parity)  returns once the phase of parity `parity` has completed, i.e. while the
//                          barrier's current phase has the other parity (acquire semantics at CTA
//                          scope). On a fresh barrier (phase 0) wait(parity 1) returns at once and
//                          wait(parity 0) blocks until `count` arrivals complete phase 0. Round r
//                          of a ring of stages waits on "full" with parity r & 1, and (before
//                          refilling) on "empty" with parity (r & 1) ^ 1.
// Data that cp.async copied and a wait made visible is visible to the generic proxy only: before
// the tensor cores read it (wgmma), a thread must execute wgmma_f16::fence_shared_for_tensor_cores()
// (fence.proxy.async.shared::cta) after its wait.
//
// Under the CPU emulator (the #else half) the model is autoconv_emu's (emulator_runtime.cpp): the
// state lives in the barrier's 8 bytes (a barrier used before init is a fault), a wait for a phase
// not yet complete yields to the block's other threads, copies that arrive on a barrier (cp.async
// through arrive_when_copies_land, TMA copies through their transaction bytes) land when a wait sees
// their phase complete (so a read without the wait sees the poison), and a block whose threads all
// wait for phases that can no longer complete faults with "hang".
#ifndef AUTOCONV_MBARRIER_CUH  // a guard, not #pragma once: inlined into a source, that one warns
#define AUTOCONV_MBARRIER_CUH

namespace mbarrier {

#ifndef AUTOCONV_EMULATOR

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "mbarrier.cuh's try_wait needs sm_90 or later"
#endif

namespace detail {
//! The 32-bit shared-window address of the barrier (what the .shared::cta instructions take).
__device__ __forceinline__ unsigned shared_address(const unsigned long long* barrier)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(barrier));
}
}  // namespace detail

__device__ __forceinline__ void init(unsigned long long* barrier, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(detail::shared_address(barrier)), "r"(count) : "memory");
}

__device__ __forceinline__ void arrive(unsigned long long* barrier)
{
    // `_`: the returned state (for mbarrier.test_wait) is not needed, waits go by parity.
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(detail::shared_address(barrier)) : "memory");
}

//! One arrival that also expects `bytes` more transaction bytes in the current phase (what the
//! TMA copies issued for it will complete, tma.cuh): the phase completes when its arrivals are
//! all in and those bytes have landed.
__device__ __forceinline__ void arrive_expect_bytes(unsigned long long* barrier, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(detail::shared_address(barrier)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void arrive_when_copies_land(unsigned long long* barrier)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(detail::shared_address(barrier)) : "memory");
}

__device__ __forceinline__ void wait(unsigned long long* barrier, unsigned parity)
{
    const unsigned address = detail::shared_address(barrier);
    unsigned completed = 0;
    // try_wait blocks for a while (a hardware time limit) and returns false if the phase is still
    // incomplete then: ask again until it completes.
    while (!completed) {
        asm volatile(
            "{\n"
            ".reg .pred phase_completed;\n"
            "mbarrier.try_wait.parity.shared::cta.b64 phase_completed, [%1], %2;\n"
            "selp.u32 %0, 1, 0, phase_completed;\n"
            "}\n"
            : "=r"(completed)
            : "r"(address), "r"(parity)
            : "memory");
    }
}

#else  // the CPU emulator's model

__device__ __forceinline__ void init(unsigned long long* barrier, unsigned count)
{
    autoconv_emu::mbarrier_init(barrier, count);
}
__device__ __forceinline__ void arrive(unsigned long long* barrier) { autoconv_emu::mbarrier_arrive(barrier); }
__device__ __forceinline__ void arrive_expect_bytes(unsigned long long* barrier, unsigned bytes)
{
    autoconv_emu::mbarrier_arrive_expect_bytes(barrier, bytes);
}
__device__ __forceinline__ void arrive_when_copies_land(unsigned long long* barrier)
{
    autoconv_emu::mbarrier_arrive_when_copies_land(barrier);
}
__device__ __forceinline__ void wait(unsigned long long* barrier, unsigned parity)
{
    autoconv_emu::mbarrier_wait(barrier, parity);
}

#endif

}  // namespace mbarrier

// A named barrier: bar.sync id, threads. The first `threads` threads of the block to reach barrier
// `id` (1-15; 0 is __syncthreads()) wait for each other, whole warps; the others do not take part.
// For a group of warps that synchronises apart from the rest (a consumer warpgroup, say).
namespace named_barrier {
#ifndef AUTOCONV_EMULATOR
__device__ __forceinline__ void sync(unsigned id, unsigned threads)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#else  // the CPU emulator's model (emulator_runtime.cpp)
__device__ __forceinline__ void sync(unsigned id, unsigned threads) { autoconv_emu::named_barrier_sync(id, threads); }
#endif
}  // namespace named_barrier

#endif  // AUTOCONV_MBARRIER_CUH
