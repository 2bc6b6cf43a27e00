// autoconv CUDA emulation runtime: the block scheduler and the host program that runs launches.
//
// Compiled once (per compiler, flags and header version) and linked with each emulated
// program, whose generated main file is
//     #include "<kernel>.cu"                         // the rendered source, unchanged
//     static const autoconv_emu::KernelEntry kernels[] = {AUTOCONV_EMU_KERNEL(name), ...};
//     static const autoconv_emu::ConstantEntry constants[] = {AUTOCONV_EMU_CONSTANT(name), ...};  // if any
//     int main(int argc, char** argv) { return autoconv_emu::host_main(argc, argv, kernels, n, constants, m); }
// (both compiled with -include cuda_emulation.h). The program reads a manifest naming
// buffers (files of raw bytes) and launches, runs the launches in order like one CUDA
// stream, and writes every buffer back to its file. Manifest lines (names without spaces):
//     workers <n>                                        OS threads that run blocks
//     order <forward|reverse>                            the order blocks are taken in (default forward)
//     buffer <name> <bytes> <path>
//     address <map> <buffer> <offset>                    writes the address `offset` bytes into buffer
//                                                        into the tensor map in buffer <map>
//                                                        (tensor_maps.py's encoding)
//     constant <name> <value>                            sets the source's `__constant__ int name`
//     launch <kernel> <gx> <gy> <gz> <bx> <by> <bz> <shared_bytes> <buffer name>...
// A launch passes each pointer parameter its buffer's address, and each by-value parameter (a
// tensor map) its buffer's bytes, which must be exactly the parameter's size.
// Exit status: 0 done; 2 a bad manifest or launch (message on stderr); 3 a kernel fault the
// emulator detects itself; otherwise AddressSanitizer's or UBSan's, after their report.
#include "cuda_emulation.h"

#undef asm  // the system headers below may spell inline assembly `asm`

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <deque>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define AUTOCONV_EMU_ASAN 1
#else
#define AUTOCONV_EMU_ASAN 0
#endif

namespace autoconv_emu {
namespace {

// ---- fibers -------------------------------------------------------------------------------
//! A cp.async copy: its source bytes, read when issued, and where they go when it completes.
struct AsyncCopy {
    void* destination;
    unsigned char bytes[16];
    std::size_t total;        // bytes written to the destination (the tail is zero-filled)
    unsigned long long sequence;  // the issuing thread's count of copies before it
};

//! One CUDA thread: a fiber with its own stack.
struct Fiber {
    enum class State { runnable, at_block_barrier, at_warp_barrier, at_mbarrier, at_named_barrier, finished };
    ucontext_t context;
    uint3 thread_idx;
    State state;
    void* stack;
    std::size_t stack_bytes;
    void* asan_fake_stack;
    std::vector<AsyncCopy> uncommitted_copies;
    std::deque<std::vector<AsyncCopy>> committed_copies;
    unsigned long long copies_issued;
    // What a thread at_mbarrier waits for: the phase of this parity of the mbarrier at this
    // offset of shared memory.
    std::size_t mbarrier_offset;
    unsigned mbarrier_parity;
    // What a thread at_named_barrier waits for: `named_barrier_threads` threads at barrier
    // `named_barrier_id` (bar.sync id, threads).
    unsigned named_barrier_id;
    unsigned named_barrier_threads;
};

//! Who initialised the mbarrier at `offset`, and when: until the next __syncthreads() no
//! other thread may use it (its init is not visible to them yet).
struct MbarrierInit {
    std::size_t offset;
    unsigned thread;
    unsigned long long block_barriers_before;
};

//! A cp.async.mbarrier.arrive.noinc: the copies thread `thread` issued before `copies_before`
//! arrive on the mbarrier at `offset` when they land. The arrival is counted at once; the
//! copies land when a wait observes the phase complete (or their thread waits for them or
//! returns), as late as the GPU may land them.
struct CopyArrival {
    std::size_t offset;
    unsigned thread;
    unsigned long long copies_before;
    bool phase_completed;
};

//! The transaction count of the mbarrier at `offset` in its current phase: bytes expected
//! (arrive_expect_bytes) less bytes completed (TMA copies). Kept beside the barrier's 8 bytes,
//! which have no room for it; an init resets it. Absent: 0.
struct MbarrierTransactions {
    std::size_t offset;
    long long count;
};

//! A TMA copy issued but not landed: its box, read and swizzled when issued, lands at shared
//! offset `destination` when a wait sees the phase of the mbarrier at `offset` that its bytes
//! were counted in complete.
struct TmaCopy {
    std::size_t offset;
    std::size_t destination;
    std::vector<unsigned char> bytes;
    bool phase_completed;
};

//! The block an OS thread is running: what it runs, and the scheduler's own context.
struct BlockRun {
    ucontext_t scheduler;
    const void* scheduler_stack_bottom;
    std::size_t scheduler_stack_bytes;
    Fiber* current;
    void (*invoke)(void* const* args);
    void* const* args;
    const char* kernel_name;
    std::size_t shared_bytes;
    Fiber* fibers;
    unsigned long long block_barriers_released;  // __syncthreads() passed so far
    std::vector<MbarrierInit> mbarrier_inits;
    std::vector<CopyArrival> copy_arrivals;
    std::vector<MbarrierTransactions> mbarrier_transactions;
    std::vector<TmaCopy> tma_copies;
};

thread_local BlockRun* block_run = nullptr;

//! Stack of one CUDA thread. Kernels keep little on the stack (AddressSanitizer's redzones
//! included); an overflow hits the guard page below it and is reported as a stack overflow.
constexpr std::size_t fiber_stack_bytes = 128 * 1024;
constexpr unsigned max_threads_per_block = 1024;
constexpr unsigned warp_size = 32;

//! Where the failing OS thread is: for fault messages and the sanitizers' death callback.
void print_location() {
    if (block_run == nullptr)
        return;
    std::fprintf(stderr, "autoconv emulator: in kernel %s, block (%u,%u,%u), thread (%u,%u,%u); "
                 "grid (%u,%u,%u), block size (%u,%u,%u)\n", block_run->kernel_name,
                 block_idx.x, block_idx.y, block_idx.z, thread_idx.x, thread_idx.y, thread_idx.z,
                 grid_dim.x, grid_dim.y, grid_dim.z, block_dim.x, block_dim.y, block_dim.z);
}

[[noreturn]] void launch_error(const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "autoconv emulator: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(2);
}

void switch_to_scheduler(BlockRun& run, Fiber& fiber, bool finished) {
#if AUTOCONV_EMU_ASAN
    // A finished fiber never resumes: a null save slot tells ASan to drop its fake stack.
    __sanitizer_start_switch_fiber(finished ? nullptr : &fiber.asan_fake_stack,
                                   run.scheduler_stack_bottom, run.scheduler_stack_bytes);
#endif
    swapcontext(&fiber.context, &run.scheduler);
#if AUTOCONV_EMU_ASAN
    __sanitizer_finish_switch_fiber(fiber.asan_fake_stack, nullptr, nullptr);
#endif
    (void)finished;
}

void complete(const std::vector<AsyncCopy>& copies) {
    for (const AsyncCopy& copy : copies)
        std::memcpy(copy.destination, copy.bytes, copy.total);
}

void fiber_main() {
    BlockRun& run = *block_run;
#if AUTOCONV_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &run.scheduler_stack_bottom, &run.scheduler_stack_bytes);
#endif
    run.invoke(run.args);
    Fiber& fiber = *run.current;
    // The hardware completes a thread's outstanding cp.async copies even if it never waits.
    for (const auto& batch : fiber.committed_copies)
        complete(batch);
    complete(fiber.uncommitted_copies);
    fiber.state = Fiber::State::finished;
    switch_to_scheduler(run, fiber, true);
    fault("a returned CUDA thread was resumed (emulator bug)");
}

void resume(BlockRun& run, Fiber& fiber) {
    run.current = &fiber;
    thread_idx = fiber.thread_idx;
#if AUTOCONV_EMU_ASAN
    void* fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&fake_stack, fiber.stack, fiber.stack_bytes);
#endif
    swapcontext(&run.scheduler, &fiber.context);
#if AUTOCONV_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// ---- mbarriers ------------------------------------------------------------------------------
// An mbarrier's state lives in its own 8 bytes of shared memory, as on the GPU: bits 0-19 the
// arrivals still pending in the current phase, 20-39 the arrivals each phase expects (init's
// count), bit 40 the current phase's parity, 48-63 a tag. Shared memory starts as 0xFF bytes,
// whose tag is another: a barrier used before init (or written over) is a fault.
constexpr unsigned long long mbarrier_tag = 0xBA52ull << 48;
constexpr unsigned long long mbarrier_tag_mask = 0xFFFFull << 48;
constexpr unsigned mbarrier_max_count = (1u << 20) - 1;  // the PTX ISA's limit on init's count

struct MbarrierState {
    unsigned pending, expected, parity;
};

unsigned long long packed(MbarrierState state) {
    return mbarrier_tag | static_cast<unsigned long long>(state.parity) << 40 |
           static_cast<unsigned long long>(state.expected) << 20 | state.pending;
}

//! The shared-memory offset of an mbarrier; a fault if it is not 8 aligned bytes of the
//! block's dynamic shared memory (where autoconv's kernels keep everything shared).
std::size_t mbarrier_offset(const unsigned long long* barrier, const char* operation) {
    const auto address = reinterpret_cast<std::uintptr_t>(barrier);
    const auto shared_begin = reinterpret_cast<std::uintptr_t>(&smem[0]);
    const std::size_t shared_bytes = block_run->shared_bytes;
    if (address < shared_begin || address + 8 > shared_begin + shared_bytes)
        fault("%s: the mbarrier %p is not in the block's %zu bytes of dynamic shared memory at %p (declare "
              "barriers in `smem`)", operation, static_cast<const void*>(barrier), shared_bytes,
              static_cast<void*>(&smem[0]));
    if (address % 8 != 0)
        fault("%s: the mbarrier at shared offset %zu is not 8-byte aligned", operation,
              static_cast<std::size_t>(address - shared_begin));
    return address - shared_begin;
}

//! The transaction count of the mbarrier at `offset` (bytes expected less bytes completed in
//! its current phase).
long long& transactions(std::size_t offset) {
    std::vector<MbarrierTransactions>& all = block_run->mbarrier_transactions;
    for (MbarrierTransactions& entry : all)
        if (entry.offset == offset)
            return entry.count;
    all.push_back(MbarrierTransactions{offset, 0});
    return all.back().count;
}

MbarrierState read_mbarrier(std::size_t offset, const char* operation) {
    unsigned long long bits;
    std::memcpy(&bits, smem + offset, sizeof(bits));
    const MbarrierState state{static_cast<unsigned>(bits & mbarrier_max_count),
                              static_cast<unsigned>(bits >> 20 & mbarrier_max_count),
                              static_cast<unsigned>(bits >> 40 & 1u)};
    // No arrivals pending: the phase waits for transaction bytes (else it would have completed).
    if ((bits & mbarrier_tag_mask) != mbarrier_tag || packed(state) != bits || state.expected == 0 ||
        (state.pending == 0 && transactions(offset) == 0) || state.pending > state.expected)
        fault("%s: mbarrier used before init: the 8 bytes at shared offset %zu hold 0x%016llx, not an "
              "mbarrier (one thread must mbarrier::init it, and a __syncthreads() follow, before any thread "
              "uses it; and nothing may write over it)", operation, offset, bits);
    return state;
}

void write_mbarrier(std::size_t offset, MbarrierState state) {
    const unsigned long long bits = packed(state);
    std::memcpy(smem + offset, &bits, sizeof(bits));
}

unsigned current_thread(const BlockRun& run) { return static_cast<unsigned>(run.current - run.fibers); }

//! A fault if the calling thread uses the mbarrier at `offset` before a __syncthreads() has
//! made another thread's init of it visible (mbarrier.init is a CTA-scope write like any other).
void check_init_published(const BlockRun& run, std::size_t offset, const char* operation) {
    for (const MbarrierInit& init : run.mbarrier_inits)
        if (init.offset == offset && init.thread != current_thread(run) &&
            init.block_barriers_before == run.block_barriers_released)
            fault("%s: the mbarrier at shared offset %zu is used by thread %u before a __syncthreads() has made "
                  "its init by thread %u visible (call __syncthreads() between init and the first use)",
                  operation, offset, current_thread(run), init.thread);
}

//! Lands (writes the destinations of) the copies `fiber` issued before `copies_before`.
void land_copies_before(Fiber& fiber, unsigned long long copies_before) {
    auto land = [copies_before](std::vector<AsyncCopy>& copies) {
        std::size_t kept = 0;
        for (std::size_t i = 0; i < copies.size(); ++i) {
            if (copies[i].sequence < copies_before)
                std::memcpy(copies[i].destination, copies[i].bytes, copies[i].total);
            else if (kept++ != i)
                copies[kept - 1] = copies[i];
        }
        copies.resize(kept);
    };
    // Emptied batches stay: __pipeline_wait_prior counts batches, landed or not.
    for (std::vector<AsyncCopy>& batch : fiber.committed_copies)
        land(batch);
    land(fiber.uncommitted_copies);
}

//! Lands the copies whose arrivals on the mbarrier at `offset` belong to completed phases, and
//! the TMA copies whose bytes were counted in them: a thread that observes a phase complete
//! must see what arrived in it.
void land_arrived_copies(BlockRun& run, std::size_t offset) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < run.copy_arrivals.size(); ++i) {
        const CopyArrival& arrival = run.copy_arrivals[i];
        if (arrival.offset == offset && arrival.phase_completed)
            land_copies_before(run.fibers[arrival.thread], arrival.copies_before);
        else if (kept++ != i)
            run.copy_arrivals[kept - 1] = arrival;
    }
    run.copy_arrivals.resize(kept);
    kept = 0;
    for (std::size_t i = 0; i < run.tma_copies.size(); ++i) {
        TmaCopy& copy = run.tma_copies[i];
        if (copy.offset == offset && copy.phase_completed)
            std::memcpy(smem + copy.destination, copy.bytes.data(), copy.bytes.size());
        else if (kept++ != i)
            run.tma_copies[kept - 1] = std::move(copy);
    }
    run.tma_copies.resize(kept);
}

//! Completes the current phase of the mbarrier at `offset` if its arrivals are all in and its
//! transaction count is 0: the parity flips and the pending count starts again at the expected
//! one; what arrived in the phase lands when a wait observes it.
void complete_phase_if_done(BlockRun& run, std::size_t offset, MbarrierState& state) {
    if (state.pending != 0 || transactions(offset) != 0)
        return;
    state.pending = state.expected;
    state.parity ^= 1u;
    for (CopyArrival& arrival : run.copy_arrivals)
        arrival.phase_completed |= arrival.offset == offset;
    for (TmaCopy& copy : run.tma_copies)
        copy.phase_completed |= copy.offset == offset;
}

//! One arrival on the mbarrier at `offset`, after raising its transaction count by
//! `expect_bytes` (mbarrier.arrive.expect_tx). The last one of a phase completes it, once the
//! transaction count is 0 too. (An arrival beyond a phase's count therefore counts toward the
//! next phase, as on the GPU: the model cannot tell it from an early arrival for the next
//! phase, which is legitimate; but one while the phase has all its arrivals and waits for
//! transaction bytes is a fault.)
void arrive_at(BlockRun& run, std::size_t offset, const char* operation, unsigned expect_bytes = 0) {
    MbarrierState state = read_mbarrier(offset, operation);
    long long& count = transactions(offset);
    if (state.pending == 0)
        fault("%s: an arrival on the mbarrier at shared offset %zu, whose phase of parity %u has all its %u "
              "arrivals and waits for transaction bytes (%lld %s): more arrivals than init's count in one phase",
              operation, offset, state.parity, state.expected, count < 0 ? -count : count,
              count < 0 ? "more completed by TMA copies than expected" : "expected and not yet completed");
    count += expect_bytes;
    if (count > static_cast<long long>(mbarrier_max_count))
        fault("%s: the transaction count of the mbarrier at shared offset %zu reaches %lld bytes; the PTX ISA's "
              "limit is %u", operation, offset, count, mbarrier_max_count);
    --state.pending;
    complete_phase_if_done(run, offset, state);
    write_mbarrier(offset, state);
}

//! `bytes` completed transactions (a TMA copy's complete_tx) on the mbarrier at `offset`.
void complete_transactions(BlockRun& run, std::size_t offset, unsigned bytes, const char* operation) {
    MbarrierState state = read_mbarrier(offset, operation);
    long long& count = transactions(offset);
    count -= bytes;
    if (count < -static_cast<long long>(mbarrier_max_count))
        fault("%s: the transaction count of the mbarrier at shared offset %zu reaches %lld bytes; the PTX ISA's "
              "limit is -%u (copies without a matching mbarrier::arrive_expect_bytes?)", operation, offset, count,
              mbarrier_max_count);
    complete_phase_if_done(run, offset, state);
    write_mbarrier(offset, state);
}

//! A buffer of the manifest: `bytes` bytes at `data`, read from and written back to `path`.
struct Buffer {
    std::string name, path;
    std::size_t bytes;
    void* data;
};

// ---- TMA tensor maps and copies ------------------------------------------------------------
// The emulator's encoding of a tensor map, in a TensorMap's 128 bytes (autoconv/emulator/
// tensor_maps.py writes it; the GPU's encoding is the driver's and opaque). Sizes, strides and
// corners innermost dimension first, as the driver API takes them.
struct EmulatedTensorMap {
    unsigned char magic[8];           // tensor_map_magic: anything else is not an emulated map
    unsigned long long address;       // the tensor's first element (the `address` manifest line)
    unsigned short kind;              // tensor_map_im2col or tensor_map_tiled
    unsigned short element_bytes;     // 2 (bf16, f16) or 4 (tf32)
    unsigned short swizzle_bytes;     // 128
    unsigned short rounding;          // 0: copies move bits; tensor_map_round_to_tf32: they round to TF32
    unsigned sizes[4];                // im2col: C, W, H, N; tiled: dimensions 0, 1, 2 (and 1)
    unsigned long long strides[3];    // bytes from one index of dimension 1, 2, 3 to the next
    int lower[2], upper[2];           // im2col: the bounding box's corners, W and H
    unsigned element_strides[4];      // im2col: 1, stride W, stride H, 1; tiled: 1, 1, 1, 1
    unsigned box[3];                  // im2col: channels, pixels, 0; tiled: the box
    char name[20];                    // the map's name (NUL-terminated), for messages
};
static_assert(sizeof(EmulatedTensorMap) == 128, "a tensor map is 128 bytes");
static_assert(offsetof(EmulatedTensorMap, address) == 8 && offsetof(EmulatedTensorMap, kind) == 16 &&
                  offsetof(EmulatedTensorMap, sizes) == 24 && offsetof(EmulatedTensorMap, strides) == 40 &&
                  offsetof(EmulatedTensorMap, lower) == 64 && offsetof(EmulatedTensorMap, element_strides) == 80 &&
                  offsetof(EmulatedTensorMap, box) == 96 && offsetof(EmulatedTensorMap, name) == 108,
              "the layout autoconv/emulator/tensor_maps.py writes");
constexpr unsigned char tensor_map_magic[8] = {'a', 'c', 'e', 'm', 'u', 'T', 'M', 'A'};
constexpr unsigned short tensor_map_im2col = 1, tensor_map_tiled = 2;
constexpr unsigned short tensor_map_round_to_tf32 = 1;
//! Bytes of a box row: the 128-byte swizzle's row, the only width modelled.
constexpr std::size_t tma_row_bytes = 128;

//! The 128 bytes at `map`, which must carry the emulator's tag (else a fault naming `operation`).
EmulatedTensorMap read_tagged_map(const void* map, const char* operation) {
    if (map == nullptr)
        fault("%s: the tensor map pointer is null", operation);
    EmulatedTensorMap m;
    std::memcpy(&m, map, sizeof(m));
    if (std::memcmp(m.magic, tensor_map_magic, sizeof(m.magic)) != 0)
        fault("%s: %p is not a tensor map in the emulator's encoding (its first bytes are %02x %02x %02x %02x...): "
              "under emulation a map must come from autoconv.emulator.tensor_maps.encode (EmulatedProgram.run's "
              "tensor_maps), passed to the kernel by value", operation, map, m.magic[0], m.magic[1], m.magic[2],
              m.magic[3]);
    m.name[sizeof(m.name) - 1] = '\0';
    return m;
}

//! Reads the map `map` points at; a fault if it is not the emulator's encoding of a map of
//! this kind, or one the model does not cover.
EmulatedTensorMap read_tensor_map(const void* map, unsigned short kind, const char* operation) {
    EmulatedTensorMap m = read_tagged_map(map, operation);
    const char* const wanted = kind == tensor_map_im2col ? "im2col" : "tiled";
    if (m.kind != kind)
        fault("%s: tensor map %s is not an %s map (kind %u)", operation, m.name, wanted, m.kind);
    if (m.address == 0)
        fault("%s: tensor map %s has no address (the manifest's `address` line for it is missing)", operation,
              m.name);
    if ((m.element_bytes != 2 && m.element_bytes != 4) || m.swizzle_bytes != tma_row_bytes)
        fault("%s: tensor map %s has %u-byte elements and a %u-byte swizzle; the model covers 2- and 4-byte "
              "elements in the 128-byte swizzle", operation, m.name, m.element_bytes, m.swizzle_bytes);
    if (m.rounding != 0 && (m.rounding != tensor_map_round_to_tf32 || m.element_bytes != 4))
        fault("%s: tensor map %s has rounding %u for %u-byte elements; the model covers TF32 rounding (1) of "
              "4-byte elements only", operation, m.name, m.rounding, m.element_bytes);
    for (unsigned d = 0; d < 4; ++d)
        if (m.element_strides[d] < 1 || m.element_strides[d] > 8 || (kind == tensor_map_tiled && m.element_strides[d] != 1))
            fault("%s: tensor map %s has traversal strides (%u, %u, %u, %u); the model covers 1 to 8 (im2col) and 1 "
                  "(tiled)", operation, m.name, m.element_strides[0], m.element_strides[1], m.element_strides[2],
                  m.element_strides[3]);
    const std::size_t row = static_cast<std::size_t>(m.box[0]) * m.element_bytes;
    if (row != tma_row_bytes)
        fault("%s: tensor map %s has box rows of %zu bytes (%u elements); the model covers rows of exactly %zu "
              "bytes, the 128-byte swizzle's row (narrower rows are not modelled)", operation, m.name, row,
              m.box[0], tma_row_bytes);
    return m;
}

//! The shared-memory offset of a copy's destination of `bytes` bytes; a fault unless it lies
//! in the block's dynamic shared memory, 1024-byte aligned (the 128-byte swizzle's pattern
//! repeats every 1024 bytes, and the hardware swizzles on the address bits).
std::size_t tma_destination(const void* destination, std::size_t bytes, const char* map_name, const char* operation) {
    const auto address = reinterpret_cast<std::uintptr_t>(destination);
    const auto shared_begin = reinterpret_cast<std::uintptr_t>(&smem[0]);
    const std::size_t shared_bytes = block_run->shared_bytes;
    if (address < shared_begin || address + bytes > shared_begin + shared_bytes)
        fault("%s (map %s): the destination %p of the %zu-byte box is not within the block's %zu bytes of dynamic "
              "shared memory at %p", operation, map_name, destination, bytes, shared_bytes,
              static_cast<void*>(&smem[0]));
    const std::size_t offset = address - shared_begin;
    if (offset % 1024 != 0)
        fault("%s (map %s): the destination is at shared offset %zu, not 1024-byte aligned (the 128-byte swizzle "
              "needs 1024-byte aligned boxes)", operation, map_name, offset);
    return offset;
}

//! The box, `rows` rows of 128 bytes, as it lands at shared offset `destination` (a multiple of
//! 1024): element e of row r read by `element(r, e, bytes)`, at byte r * 128 + e * element_bytes before the
//! swizzle, whose 16-byte chunk moves to chunk position (chunk ^ r % 8): shared address bits
//! [4:6] ^= bits [7:9].
template <class Element>
std::vector<unsigned char> swizzled_box(std::size_t rows, std::size_t element_bytes, Element element) {
    std::vector<unsigned char> box(rows * tma_row_bytes);
    const std::size_t per_row = tma_row_bytes / element_bytes;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t e = 0; e < per_row; ++e) {
            const std::size_t linear = r * tma_row_bytes + e * element_bytes;
            element(r, e, &box[linear ^ ((linear >> 7 & 7u) << 4)]);
        }
    return box;
}

//! Copies one element of map `m` from `from` to `to`: its bits, or (a TFLOAT32 map) the float32
//! rounded to TF32, 10 mantissa bits, to nearest with ties to even, as the H100's TMA rounds
//! (docs/lab-notes/2026-11-26-tf32-nhwc-through-tma.md). NaN and infinity are kept (an exponent of
//! all ones is not rounded into).
void copy_element(const EmulatedTensorMap& m, const unsigned char* from, unsigned char* to) {
    if (m.rounding != tensor_map_round_to_tf32) {
        std::memcpy(to, from, m.element_bytes);
        return;
    }
    std::uint32_t bits;
    std::memcpy(&bits, from, sizeof(bits));
    if ((bits & 0x7F800000u) != 0x7F800000u) {
        const std::uint32_t dropped = bits & 0x1FFFu, kept_is_odd = bits >> 13 & 1u;
        bits &= ~0x1FFFu;
        if (dropped > 0x1000u || (dropped == 0x1000u && kept_is_odd))
            bits += 0x2000u;   // a carry into the exponent is the right rounding up
    }
    std::memcpy(to, &bits, sizeof(bits));
}

//! Counts the box's bytes on the barrier and keeps the copy until a wait lands it.
void issue_tma_copy(std::size_t destination, std::vector<unsigned char> box, unsigned long long* barrier,
                    const char* operation) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, operation);
    check_init_published(run, offset, operation);
    const auto bytes = static_cast<unsigned>(box.size());
    run.tma_copies.push_back(TmaCopy{offset, destination, std::move(box), false});
    complete_transactions(run, offset, bytes, operation);
}

//! Writes the address `offset` bytes into buffer `data` into the tensor map in buffer `map` (the
//! manifest's `address <map> <buffer> <offset>`).
void set_map_address(const Buffer& map, const Buffer& data, std::size_t offset, const std::string& where) {
    if (map.bytes != sizeof(EmulatedTensorMap) ||
        std::memcmp(map.data, tensor_map_magic, sizeof(tensor_map_magic)) != 0)
        launch_error(where + ": buffer " + map.name + " is not a tensor map in the emulator's encoding");
    if (offset >= data.bytes)
        launch_error(where + ": tensor map " + map.name + " starts " + std::to_string(offset) + " bytes into buffer " +
                     data.name + ", which has " + std::to_string(data.bytes));
    const auto address = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(data.data) + offset);
    std::memcpy(static_cast<unsigned char*>(map.data) + offsetof(EmulatedTensorMap, address), &address,
                sizeof(address));
}

// ---- blocks -------------------------------------------------------------------------------
struct Launch {
    const KernelEntry* kernel;
    dim3 grid, block;
    std::size_t shared_bytes;
    std::vector<void*> args;
};

//! What an OS thread needs to run blocks, one at a time: fibers with their stacks. (Its
//! shared memory is the thread_local `smem`.)
class BlockRunner {
public:
    BlockRunner() : fibers_(new Fiber[max_threads_per_block]()) {}
    BlockRunner(const BlockRunner&) = delete;
    BlockRunner& operator=(const BlockRunner&) = delete;

    ~BlockRunner() {
        for (unsigned i = 0; i < max_threads_per_block; ++i)
            if (fibers_[i].stack != nullptr)
                munmap(static_cast<char*>(fibers_[i].stack) - guard_bytes(), fibers_[i].stack_bytes + guard_bytes());
#if AUTOCONV_EMU_ASAN
        ASAN_UNPOISON_MEMORY_REGION(smem, sizeof(smem));  // this thread's TLS may be reused
#endif
    }

    void run_block(const Launch& launch, uint3 block) {
        const unsigned threads = launch.block.x * launch.block.y * launch.block.z;
        block_idx = block;
        block_dim = launch.block;
        grid_dim = launch.grid;
        poison_shared_memory(launch.shared_bytes);

        BlockRun run{};
        run.invoke = launch.kernel->invoke;
        run.args = launch.args.data();
        run.kernel_name = launch.kernel->name;
        run.shared_bytes = launch.shared_bytes;
        run.fibers = fibers_.get();
        block_run = &run;
        for (unsigned i = 0; i < threads; ++i)
            start_fiber(fibers_[i], uint3{i % launch.block.x, (i / launch.block.x) % launch.block.y,
                                          i / (launch.block.x * launch.block.y)});
        // Each phase runs every runnable thread up to its next barrier or its return; then
        // the barriers that every live thread they wait for has reached are released.
        // Returned threads no longer take part, so a block only stops when all returned, or
        // with a divergence fault when threads wait for others that wait elsewhere.
        for (unsigned phase = 0;; ++phase) {
            for (unsigned k = 0; k < threads; ++k) {
                Fiber& fiber = fibers_[phase % 2 == 0 ? k : threads - 1 - k];
                if (fiber.state == Fiber::State::runnable)
                    resume(run, fiber);
            }
            if (!release_barriers(threads))
                break;
        }
        block_run = nullptr;
    }

private:
    //! Releases one warp whose live lanes all wait at a warp-level sync; failing that, the
    //! block barrier if every live thread waits there. Returns false when all threads
    //! have returned.
    //!
    //! One warp at a time, the same one while it can go on: between two block barriers the
    //! warps run skewed as far as a schedule can skew them, the first warp (in blocks of even
    //! linear index; the last in the others) up to its next __syncthreads() before another
    //! moves. Released all at once, warps that sync the same number of times (wmma calls, say)
    //! would run in lockstep and hide a missing __syncthreads() between warps, which the GPU's
    //! warps, drifting apart, do not.
    bool release_barriers(unsigned threads) {
        bool at_block_barrier = false, at_warp_barrier = false;
        const unsigned warps = (threads + warp_size - 1) / warp_size;
        const unsigned linear_block = block_idx.x + grid_dim.x * (block_idx.y + grid_dim.y * block_idx.z);
        for (unsigned w = 0; w < warps; ++w) {
            const unsigned warp0 = (linear_block % 2 == 0 ? w : warps - 1 - w) * warp_size;
            const unsigned end = std::min(threads, warp0 + warp_size);
            unsigned waiting = 0, live = 0;
            for (unsigned i = warp0; i < end; ++i) {
                live += fibers_[i].state != Fiber::State::finished;
                waiting += fibers_[i].state == Fiber::State::at_warp_barrier;
            }
            if (waiting > 0 && waiting == live) {
                for (unsigned i = warp0; i < end; ++i)
                    if (fibers_[i].state == Fiber::State::at_warp_barrier)
                        fibers_[i].state = Fiber::State::runnable;
                return true;
            }
            // Lanes whose mbarrier phase has completed go on, one warp at a time like the rest.
            bool released = false;
            for (unsigned i = warp0; i < end; ++i) {
                if (fibers_[i].state == Fiber::State::at_mbarrier && mbarrier_phase_completed(fibers_[i])) {
                    fibers_[i].state = Fiber::State::runnable;
                    released = true;
                }
            }
            if (released)
                return true;
        }
        // Named barriers (bar.sync id, threads): released when that many threads wait at the id.
        // One pass counts the waiting threads per id (named_barrier_sync keeps ids to 1-15).
        constexpr unsigned named_barriers = 16;
        unsigned waiting_at[named_barriers] = {}, first_at[named_barriers] = {};
        unsigned at_named_barrier = 0;
        for (unsigned i = 0; i < threads; ++i) {
            if (fibers_[i].state != Fiber::State::at_named_barrier)
                continue;
            ++at_named_barrier;
            const unsigned id = fibers_[i].named_barrier_id;
            if (waiting_at[id]++ == 0) {
                first_at[id] = i;
            } else if (fibers_[i].named_barrier_threads != fibers_[first_at[id]].named_barrier_threads) {
                thread_idx = fibers_[i].thread_idx;
                fault("named barrier %u: thread %u waits for %u threads there, thread %u for %u", id, i,
                      fibers_[i].named_barrier_threads, first_at[id], fibers_[first_at[id]].named_barrier_threads);
            }
        }
        for (unsigned id = 0; id < named_barriers; ++id) {
            if (waiting_at[id] == 0 || waiting_at[id] != fibers_[first_at[id]].named_barrier_threads)
                continue;
            for (unsigned i = 0; i < threads; ++i)
                if (fibers_[i].state == Fiber::State::at_named_barrier && fibers_[i].named_barrier_id == id)
                    fibers_[i].state = Fiber::State::runnable;
            return true;
        }
        unsigned at_mbarrier = 0;
        const Fiber* first_at_mbarrier = nullptr;
        for (unsigned i = 0; i < threads; ++i) {
            at_block_barrier |= fibers_[i].state == Fiber::State::at_block_barrier;
            at_warp_barrier |= fibers_[i].state == Fiber::State::at_warp_barrier;
            if (fibers_[i].state == Fiber::State::at_mbarrier && at_mbarrier++ == 0)
                first_at_mbarrier = &fibers_[i];
        }
        if (first_at_mbarrier != nullptr) {
            // No thread can run, and a thread waits for a phase nobody is left to complete (the
            // others wait too, at barriers that thread holds up, or have returned).
            const Fiber& stuck = *first_at_mbarrier;
            thread_idx = stuck.thread_idx;
            const MbarrierState state = read_mbarrier(stuck.mbarrier_offset, "mbarrier::wait");
            const long long count = transactions(stuck.mbarrier_offset);
            if (count == 0)
                fault("hang: thread %u waits for the phase of parity %u of the mbarrier at shared offset %zu, which "
                      "never completes (arrivals missing?): %u of its %u arrivals are pending and no thread can "
                      "run to make them (%u threads wait on mbarriers)",
                      static_cast<unsigned>(&stuck - fibers_.get()), stuck.mbarrier_parity, stuck.mbarrier_offset,
                      state.pending, state.expected, at_mbarrier);
            fault("hang: thread %u waits for the phase of parity %u of the mbarrier at shared offset %zu, which "
                  "never completes (transaction bytes missing?): %u of its %u arrivals are pending and its TMA "
                  "copies brought %lld bytes %s than mbarrier::arrive_expect_bytes announced (%s); no thread can "
                  "run to change that (%u threads wait on mbarriers)",
                  static_cast<unsigned>(&stuck - fibers_.get()), stuck.mbarrier_parity, stuck.mbarrier_offset,
                  state.pending, state.expected, count < 0 ? -count : count, count < 0 ? "more" : "fewer",
                  count < 0 ? "an arrive_expect_bytes missing or too small?" : "a copy missing, or bytes miscounted?",
                  at_mbarrier);
        }
        if (at_named_barrier) {
            // No thread can run, and threads wait at a named barrier that too few threads reach.
            for (unsigned id = 0; id < named_barriers; ++id) {
                if (waiting_at[id] == 0)
                    continue;
                const Fiber& first = fibers_[first_at[id]];
                thread_idx = first.thread_idx;
                fault("hang: thread %u waits at named barrier %u for %u threads; %u wait there and no thread "
                      "can run to join them", first_at[id], id, first.named_barrier_threads, waiting_at[id]);
            }
        }
        if (at_warp_barrier) {
            // Some lanes of a warp wait at a warp-level sync, the others at __syncthreads():
            // on a GPU this hangs or is undefined.
            for (unsigned i = 0; i < threads; ++i) {
                if (fibers_[i].state == Fiber::State::at_warp_barrier) {
                    thread_idx = fibers_[i].thread_idx;
                    fault("divergent barriers: thread %u waits at a warp-level sync (wmma::*_sync, "
                          "__syncwarp) while other lanes of warp %u wait at __syncthreads()", i, i / warp_size);
                }
            }
        }
        for (unsigned i = 0; i < threads; ++i)
            if (fibers_[i].state == Fiber::State::at_block_barrier)
                fibers_[i].state = Fiber::State::runnable;
        block_run->block_barriers_released += at_block_barrier;
        return at_block_barrier;
    }

    //! Whether the phase a thread at_mbarrier waits for has completed (the barrier's current
    //! phase has the other parity).
    static bool mbarrier_phase_completed(const Fiber& fiber) {
        thread_idx = fiber.thread_idx;  // a fault names the waiting thread
        return read_mbarrier(fiber.mbarrier_offset, "mbarrier::wait").parity != fiber.mbarrier_parity;
    }

    static std::size_t guard_bytes() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

    static void poison_shared_memory(std::size_t shared_bytes) {
#if AUTOCONV_EMU_ASAN
        ASAN_UNPOISON_MEMORY_REGION(smem, sizeof(smem));
#endif
        // 0xFF bytes read as NaN floats: a read of shared memory nobody wrote shows in the result.
        std::memset(smem, 0xFF, shared_bytes);
#if AUTOCONV_EMU_ASAN
        // Past the launch's dynamic size, any access is an AddressSanitizer error.
        ASAN_POISON_MEMORY_REGION(smem + shared_bytes, sizeof(smem) - shared_bytes);
#endif
    }

    void start_fiber(Fiber& fiber, uint3 index) {
        if (fiber.stack == nullptr) {
            const std::size_t guard = guard_bytes();
            void* mapping = mmap(nullptr, fiber_stack_bytes + guard, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (mapping == MAP_FAILED)
                launch_error("cannot map a fiber stack (out of memory?)");
            mprotect(mapping, guard, PROT_NONE);  // stacks grow down: the guard page is below
            fiber.stack = static_cast<char*>(mapping) + guard;
            fiber.stack_bytes = fiber_stack_bytes;
        }
#if AUTOCONV_EMU_ASAN
        ASAN_UNPOISON_MEMORY_REGION(fiber.stack, fiber.stack_bytes);  // redzones of the last fiber
#endif
        fiber.thread_idx = index;
        fiber.state = Fiber::State::runnable;
        fiber.asan_fake_stack = nullptr;
        fiber.uncommitted_copies.clear();
        fiber.committed_copies.clear();
        fiber.copies_issued = 0;
        getcontext(&fiber.context);
        fiber.context.uc_stack.ss_sp = fiber.stack;
        fiber.context.uc_stack.ss_size = fiber.stack_bytes;
        fiber.context.uc_link = nullptr;
        makecontext(&fiber.context, fiber_main, 0);
    }

    std::unique_ptr<Fiber[]> fibers_;
};

std::string dims(dim3 d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
}

//! The launch limits CUDA enforces on every GPU since compute capability 3.0.
void check_launch(const Launch& launch, const std::string& what) {
    const dim3 g = launch.grid, b = launch.block;
    if (g.x < 1 || g.y < 1 || g.z < 1 || b.x < 1 || b.y < 1 || b.z < 1)
        launch_error(what + ": grid " + dims(g) + " and block " + dims(b) +
                     " must be at least 1 in every dimension");
    if (g.x > 2147483647u || g.y > 65535u || g.z > 65535u)
        launch_error(what + ": grid " + dims(g) + " exceeds CUDA's limits (x < 2^31, y and z <= 65535)");
    if (b.x > 1024u || b.y > 1024u || b.z > 64u ||
        static_cast<unsigned long long>(b.x) * b.y * b.z > max_threads_per_block)
        launch_error(what + ": block " + dims(b) + " exceeds CUDA's limits (at most 1024 threads; "
                     "x and y <= 1024, z <= 64)");
    if (launch.shared_bytes > max_shared_bytes)
        launch_error(what + ": asks for " + std::to_string(launch.shared_bytes) +
                     " bytes of dynamic shared memory; a block may use at most " +
                     std::to_string(max_shared_bytes) + " (the device's opt-in maximum)");
}

//! Runs every block of `launch` on up to `workers` OS threads, each taking the next block.
//! `reverse` takes the last block first: a kernel whose blocks communicate (through atomics)
//! must be right in any order, and the two orders put different blocks last.
void run_launch(const Launch& launch, unsigned workers, bool reverse) {
    const unsigned long long blocks = 1ull * launch.grid.x * launch.grid.y * launch.grid.z;
    std::atomic<unsigned long long> next{0};
    auto work = [&]() {
        BlockRunner runner;
        for (unsigned long long taken = next++; taken < blocks; taken = next++) {
            const unsigned long long b = reverse ? blocks - 1 - taken : taken;
            runner.run_block(launch, uint3{static_cast<unsigned>(b % launch.grid.x),
                                           static_cast<unsigned>(b / launch.grid.x % launch.grid.y),
                                           static_cast<unsigned>(b / (1ull * launch.grid.x * launch.grid.y))});
        }
    };
    const unsigned threads = static_cast<unsigned>(std::min<unsigned long long>(workers, blocks));
    if (threads <= 1) {
        work();
        return;
    }
    std::vector<std::thread> pool;
    for (unsigned i = 0; i < threads; ++i)
        pool.emplace_back(work);
    for (std::thread& thread : pool)
        thread.join();
}

// ---- the host program -----------------------------------------------------------------------

void read_buffer(const Buffer& buffer) {
    std::ifstream in(buffer.path, std::ios::binary);
    if (buffer.bytes > 0 && !in.read(static_cast<char*>(buffer.data), static_cast<std::streamsize>(buffer.bytes)))
        launch_error("cannot read " + std::to_string(buffer.bytes) + " bytes of buffer " + buffer.name +
                     " from " + buffer.path);
}

void write_buffer(const Buffer& buffer) {
    std::ofstream out(buffer.path, std::ios::binary | std::ios::trunc);
    if (!out.write(static_cast<const char*>(buffer.data), static_cast<std::streamsize>(buffer.bytes)))
        launch_error("cannot write buffer " + buffer.name + " to " + buffer.path);
}

Launch parse_launch(std::istringstream& fields, const std::string& where, std::size_t index,
                    const KernelEntry* kernels, std::size_t kernel_count, const std::vector<Buffer>& buffers) {
    std::string kernel_name;
    Launch launch{};
    if (!(fields >> kernel_name >> launch.grid.x >> launch.grid.y >> launch.grid.z >> launch.block.x >>
          launch.block.y >> launch.block.z >> launch.shared_bytes))
        launch_error(where + ": expected `launch <kernel> <gx> <gy> <gz> <bx> <by> <bz> <shared_bytes> <buffer>...`");
    const std::string what = "launch " + std::to_string(index) + " (" + kernel_name + ")";
    for (std::size_t k = 0; k < kernel_count && launch.kernel == nullptr; ++k)
        if (kernel_name == kernels[k].name)
            launch.kernel = &kernels[k];
    if (launch.kernel == nullptr) {
        std::string known;
        for (std::size_t k = 0; k < kernel_count; ++k)
            known += std::string(k ? ", " : "") + kernels[k].name;
        launch_error(what + ": no such kernel in this program; it has " + known);
    }
    bool by_value = false;
    for (int i = 0; i < launch.kernel->arity; ++i)
        by_value |= launch.kernel->value_bytes[i] != 0;
    for (std::string name; fields >> name;) {
        auto found = std::find_if(buffers.begin(), buffers.end(), [&](const Buffer& b) { return b.name == name; });
        if (found == buffers.end())
            launch_error(what + ": no buffer named " + name);
        const std::size_t parameter = launch.args.size();
        if (static_cast<int>(parameter) < launch.kernel->arity && launch.kernel->value_bytes[parameter] != 0 &&
            launch.kernel->value_bytes[parameter] != found->bytes)
            launch_error(what + ": parameter " + std::to_string(parameter) + " is a " +
                         std::to_string(launch.kernel->value_bytes[parameter]) +
                         "-byte struct passed by value (a tensor map?), and buffer " + name + " has " +
                         std::to_string(found->bytes) + " bytes");
        launch.args.push_back(found->data);
    }
    if (static_cast<int>(launch.args.size()) != launch.kernel->arity)
        launch_error(what + ": the kernel takes " + std::to_string(launch.kernel->arity) +
                     (by_value ? " arguments" : " pointer arguments") + "; the launch passes " +
                     std::to_string(launch.args.size()));
    check_launch(launch, what);
    return launch;
}

}  // namespace

// ---- the interface cuda_emulation.h declares --------------------------------------------------
[[noreturn]] void fault(const char* format, ...) {
    std::fflush(stdout);
    std::fputs("autoconv emulator: kernel fault: ", stderr);
    va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
    print_location();
    std::fflush(stderr);
    std::_Exit(3);
}

void barrier() {
    BlockRun& run = *block_run;
    Fiber& fiber = *run.current;
    fiber.state = Fiber::State::at_block_barrier;
    switch_to_scheduler(run, fiber, false);
}

void named_barrier_sync(unsigned id, unsigned threads) {
    BlockRun& run = *block_run;
    Fiber& fiber = *run.current;
    const unsigned block_threads = block_dim.x * block_dim.y * block_dim.z;
    if (id < 1 || id > 15)
        fault("named_barrier::sync: barrier %u; it must be 1 to 15 (0 is __syncthreads())", id);
    if (threads == 0 || threads % warp_size != 0 || threads > block_threads)
        fault("named_barrier::sync(%u, %u): the thread count must be a multiple of %u, at most the block's %u", id,
              threads, warp_size, block_threads);
    fiber.state = Fiber::State::at_named_barrier;
    fiber.named_barrier_id = id;
    fiber.named_barrier_threads = threads;
    switch_to_scheduler(run, fiber, false);
}

std::size_t shared_bytes() { return block_run->shared_bytes; }

void mbarrier_init(unsigned long long* barrier, unsigned count) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, "mbarrier::init");
    if (count < 1 || count > mbarrier_max_count)
        fault("mbarrier::init: count %u for the mbarrier at shared offset %zu; it must be 1 to %u", count, offset,
              mbarrier_max_count);
    // Copies that arrived on an earlier barrier here land now: nobody can wait for them any more.
    for (CopyArrival& arrival : run.copy_arrivals)
        arrival.phase_completed |= arrival.offset == offset;
    for (TmaCopy& copy : run.tma_copies)
        copy.phase_completed |= copy.offset == offset;
    land_arrived_copies(run, offset);
    transactions(offset) = 0;
    write_mbarrier(offset, MbarrierState{count, count, 0});
    auto same = [offset](const MbarrierInit& init) { return init.offset == offset; };
    run.mbarrier_inits.erase(std::remove_if(run.mbarrier_inits.begin(), run.mbarrier_inits.end(), same),
                             run.mbarrier_inits.end());
    run.mbarrier_inits.push_back(MbarrierInit{offset, current_thread(run), run.block_barriers_released});
}

void mbarrier_arrive(unsigned long long* barrier) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, "mbarrier::arrive");
    check_init_published(run, offset, "mbarrier::arrive");
    arrive_at(run, offset, "mbarrier::arrive");
}

// On the GPU the arrival happens when the copies land, later; the model counts it at once and
// lands the copies when a thread observes the phase complete. Nobody can tell the two apart
// through the barrier: a waiter returns only after the phase completes, and then sees the
// copies. A thread that reads them without waiting reads the poison.
void mbarrier_arrive_when_copies_land(unsigned long long* barrier) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, "mbarrier::arrive_when_copies_land");
    check_init_published(run, offset, "mbarrier::arrive_when_copies_land");
    Fiber& fiber = *run.current;
    run.copy_arrivals.push_back(CopyArrival{offset, current_thread(run), fiber.copies_issued, false});
    arrive_at(run, offset, "mbarrier::arrive_when_copies_land");
}

void mbarrier_arrive_expect_bytes(unsigned long long* barrier, unsigned bytes) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, "mbarrier::arrive_expect_bytes");
    check_init_published(run, offset, "mbarrier::arrive_expect_bytes");
    if (bytes > mbarrier_max_count)
        fault("mbarrier::arrive_expect_bytes: %u bytes for the mbarrier at shared offset %zu; the PTX ISA's limit "
              "is %u", bytes, offset, mbarrier_max_count);
    arrive_at(run, offset, "mbarrier::arrive_expect_bytes", bytes);
}

void mbarrier_wait(unsigned long long* barrier, unsigned parity) {
    BlockRun& run = *block_run;
    const std::size_t offset = mbarrier_offset(barrier, "mbarrier::wait");
    if (parity > 1)
        fault("mbarrier::wait: parity %u for the mbarrier at shared offset %zu; it must be 0 or 1 (a phase "
              "number's lowest bit)", parity, offset);
    check_init_published(run, offset, "mbarrier::wait");
    Fiber& fiber = *run.current;
    // The phase of this parity is the current one until it completes; the scheduler lets this
    // thread go on once it has. (Should the barrier complete the next phase too before this
    // thread runs, it waits again, as try_wait.parity would.) It yields even if the phase has
    // completed already: the first thread to see the phase complete lands its copies for all,
    // so the other lanes of its warp read before their own waits what they would without one.
    do {
        fiber.state = Fiber::State::at_mbarrier;
        fiber.mbarrier_offset = offset;
        fiber.mbarrier_parity = parity;
        switch_to_scheduler(run, fiber, false);
    } while (read_mbarrier(offset, "mbarrier::wait").parity == parity);
    land_arrived_copies(run, offset);
}

// A TMA copy: the box is read from global memory when the copy is issued (AddressSanitizer
// reports a bad map address at the issuing line) and lands, swizzled, when a wait observes the
// phase its bytes completed (so a read before the wait sees the poison, and a copy whose bytes
// no arrive_expect_bytes announced leaves the phase incomplete: a hang).
void tma_copy_im2col(void* destination, const void* map, unsigned long long* barrier, int c, int w, int h, int n,
                     unsigned offset_w, unsigned offset_h) {
    const char* const operation = "tma::copy_im2col";
    const EmulatedTensorMap m = read_tensor_map(map, tensor_map_im2col, operation);
    const long long pixels = m.box[1];
    const long long size_c = m.sizes[0], size_w = m.sizes[1], size_h = m.sizes[2], size_n = m.sizes[3];
    const long long stride_w = m.element_strides[1], stride_h = m.element_strides[2];
    const long long first_w = m.lower[0], last_w = size_w - 1 + m.upper[0];
    const long long first_h = m.lower[1], last_h = size_h - 1 + m.upper[1];
    const std::size_t to = tma_destination(destination, static_cast<std::size_t>(pixels) * tma_row_bytes, m.name,
                                           operation);
    // The walk goes through the bounding box's base positions; a start off them is not modelled.
    if (w < first_w || w > last_w || (w - first_w) % stride_w != 0 || h < first_h || h > last_h ||
        (h - first_h) % stride_h != 0)
        fault("%s (map %s): the base position (w %d, h %d) is not one of the bounding box's: w from %lld to %lld "
              "stepping %lld, h from %lld to %lld stepping %lld (the model walks from base positions only)",
              operation, m.name, w, h, first_w, last_w, stride_w, first_h, last_h, stride_h);
    // Row j's base position: the j-th of the walk from (w, h, n), W fastest, then H, then N.
    std::vector<long long> base_w(pixels), base_h(pixels), base_n(pixels);
    long long bw = w, bh = h, bn = n;
    for (long long j = 0; j < pixels; ++j) {
        base_w[j] = bw, base_h[j] = bh, base_n[j] = bn;
        if ((bw += stride_w) > last_w) {
            bw = first_w;
            if ((bh += stride_h) > last_h) {
                bh = first_h;
                ++bn;
            }
        }
    }
    const auto* const tensor = reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(m.address));
    std::vector<unsigned char> box =
        swizzled_box(static_cast<std::size_t>(pixels), m.element_bytes, [&](std::size_t r, std::size_t e,
                                                                            unsigned char* out) {
            const long long x_c = c + static_cast<long long>(e), x_w = base_w[r] + offset_w,
                            x_h = base_h[r] + offset_h, x_n = base_n[r];
            if (x_c < 0 || x_c >= size_c || x_w < 0 || x_w >= size_w || x_h < 0 || x_h >= size_h || x_n < 0 ||
                x_n >= size_n) {
                std::memset(out, 0, m.element_bytes);
                return;
            }
            copy_element(m, tensor + x_c * m.element_bytes + x_w * m.strides[0] + x_h * m.strides[1] +
                                x_n * m.strides[2], out);
        });
    issue_tma_copy(to, std::move(box), barrier, operation);
}

void tma_prefetch(const void* map) {
    read_tagged_map(map, "tma::prefetch");
}

void tma_copy_tiled(void* destination, const void* map, unsigned long long* barrier, int x0, int x1, int x2) {
    const char* const operation = "tma::copy_tiled";
    const EmulatedTensorMap m = read_tensor_map(map, tensor_map_tiled, operation);
    const long long b1 = m.box[1], b2 = m.box[2];
    const std::size_t to = tma_destination(destination, static_cast<std::size_t>(b1 * b2) * tma_row_bytes, m.name,
                                           operation);
    const auto* const tensor = reinterpret_cast<const unsigned char*>(static_cast<std::uintptr_t>(m.address));
    // Row r = k * b1 + j holds tensor[x2 + k][x1 + j][x0 .. x0 + b0 - 1].
    std::vector<unsigned char> box =
        swizzled_box(static_cast<std::size_t>(b1 * b2), m.element_bytes, [&](std::size_t r, std::size_t e,
                                                                             unsigned char* out) {
            const long long i0 = x0 + static_cast<long long>(e), i1 = x1 + static_cast<long long>(r) % b1,
                            i2 = x2 + static_cast<long long>(r) / b1;
            if (i0 < 0 || i0 >= m.sizes[0] || i1 < 0 || i1 >= m.sizes[1] || i2 < 0 || i2 >= m.sizes[2]) {
                std::memset(out, 0, m.element_bytes);
                return;
            }
            copy_element(m, tensor + i0 * m.element_bytes + i1 * m.strides[0] + i2 * m.strides[1], out);
        });
    issue_tma_copy(to, std::move(box), barrier, operation);
}

void warp_barrier() {
    BlockRun& run = *block_run;
    Fiber& fiber = *run.current;
    fiber.state = Fiber::State::at_warp_barrier;
    switch_to_scheduler(run, fiber, false);
}

// cp.async: the source is read when the copy is issued (so AddressSanitizer reports a bad
// source at the issuing line); the destination is written as late as CUDA allows, when
// the copy's batch is waited for, when a wait sees the mbarrier phase that the copy arrived
// in complete (mbarrier_arrive_when_copies_land), or when the thread returns. A thread that reads the
// destination before waiting reads the poison, so a missing wait shows as NaN.
void async_copy(void* destination, const void* source, std::size_t size_and_align, std::size_t zfill) {
    if (size_and_align != 4 && size_and_align != 8 && size_and_align != 16)
        fault("__pipeline_memcpy_async: size_and_align is %zu; it must be 4, 8 or 16", size_and_align);
    if (zfill > size_and_align)
        fault("__pipeline_memcpy_async: zfill (%zu) exceeds size_and_align (%zu)", zfill, size_and_align);
    const auto to = reinterpret_cast<std::uintptr_t>(destination);
    const auto shared_begin = reinterpret_cast<std::uintptr_t>(&smem[0]);
    const std::size_t shared_bytes = block_run->shared_bytes;
    if (to < shared_begin || to + size_and_align > shared_begin + shared_bytes)
        fault("__pipeline_memcpy_async: destination %p is outside the block's %zu bytes of dynamic shared "
              "memory at %p", destination, shared_bytes, static_cast<void*>(&smem[0]));
    if (to % size_and_align != 0 || reinterpret_cast<std::uintptr_t>(source) % size_and_align != 0)
        fault("__pipeline_memcpy_async: source %p and destination %p must be aligned to %zu bytes",
              source, destination, size_and_align);
    Fiber& fiber = *block_run->current;
    AsyncCopy copy{destination, {}, size_and_align, fiber.copies_issued++};
    if (size_and_align > zfill)
        std::memcpy(copy.bytes, source, size_and_align - zfill);
    fiber.uncommitted_copies.push_back(copy);
}

void async_commit() {
    Fiber& fiber = *block_run->current;
    fiber.committed_copies.push_back(std::move(fiber.uncommitted_copies));
    fiber.uncommitted_copies.clear();
}

void async_wait_prior(std::size_t pending) {
    Fiber& fiber = *block_run->current;
    while (fiber.committed_copies.size() > pending) {
        complete(fiber.committed_copies.front());
        fiber.committed_copies.pop_front();
    }
}

int host_main(int argc, char** argv, const KernelEntry* kernels, std::size_t kernel_count,
              const ConstantEntry* constants, std::size_t constant_count) {
    if (argc != 2)
        launch_error(std::string("usage: ") + argv[0] + " MANIFEST");
#if AUTOCONV_EMU_ASAN
    __sanitizer_set_death_callback(print_location);
#endif
    std::ifstream manifest(argv[1]);
    if (!manifest)
        launch_error(std::string("cannot open manifest ") + argv[1]);
    unsigned workers = 1;
    bool reverse = false;
    std::vector<Buffer> buffers;
    std::vector<Launch> launches;
    std::vector<std::string> constants_set;
    std::string line;
    for (int number = 1; std::getline(manifest, line); ++number) {
        std::istringstream fields(line);
        std::string kind;
        if (!(fields >> kind))
            continue;
        const std::string where = std::string(argv[1]) + ":" + std::to_string(number);
        if (kind == "workers") {
            if (!(fields >> workers) || workers < 1)
                launch_error(where + ": expected `workers <n>` with n >= 1");
        } else if (kind == "order") {
            std::string order;
            if (!(fields >> order) || (order != "forward" && order != "reverse"))
                launch_error(where + ": expected `order forward` or `order reverse`");
            reverse = order == "reverse";
        } else if (kind == "buffer") {
            Buffer buffer;
            if (!(fields >> buffer.name >> buffer.bytes >> buffer.path))
                launch_error(where + ": expected `buffer <name> <bytes> <path>`");
            // Exactly `bytes` long, so AddressSanitizer reports any access past the end; 256-byte
            // aligned like cudaMalloc, so float4 accesses that are aligned on the GPU are here too.
            if (posix_memalign(&buffer.data, 256, std::max<std::size_t>(buffer.bytes, 1)) != 0)
                launch_error(where + ": cannot allocate " + std::to_string(buffer.bytes) + " bytes");
            read_buffer(buffer);
            buffers.push_back(buffer);
        } else if (kind == "address") {
            std::string map_name, buffer_name;
            std::size_t offset = 0;
            if (!(fields >> map_name >> buffer_name >> offset))
                launch_error(where + ": expected `address <map> <buffer> <offset>`");
            auto named = [&](const std::string& name) {
                auto found = std::find_if(buffers.begin(), buffers.end(), [&](const Buffer& b) { return b.name == name; });
                if (found == buffers.end())
                    launch_error(where + ": no buffer named " + name);
                return *found;
            };
            set_map_address(named(map_name), named(buffer_name), offset, where);
        } else if (kind == "constant") {
            std::string name;
            long long value = 0;
            if (!(fields >> name >> value) || value < INT32_MIN || value > INT32_MAX)
                launch_error(where + ": expected `constant <name> <value>` with a 32-bit value");
            const ConstantEntry* entry = std::find_if(constants, constants + constant_count,
                                                      [&](const ConstantEntry& c) { return name == c.name; });
            if (entry == constants + constant_count)
                launch_error(where + ": the source declares no __constant__ int " + name);
            *entry->value = static_cast<int>(value);
            constants_set.push_back(entry->name);
        } else if (kind == "launch") {
            launches.push_back(parse_launch(fields, where, launches.size(), kernels, kernel_count, buffers));
        } else {
            launch_error(where + ": unknown line kind `" + kind + "`");
        }
    }
    // A size the manifest left unset would silently read 0: refuse instead, as the GPU loader
    // sets every one (autoconv.gpu.kernels).
    for (std::size_t i = 0; i < constant_count; ++i)
        if (std::find(constants_set.begin(), constants_set.end(), constants[i].name) == constants_set.end())
            launch_error(std::string(argv[1]) + ": the manifest does not set __constant__ int " + constants[i].name);
    for (const Launch& launch : launches)
        run_launch(launch, workers, reverse);
    for (const Buffer& buffer : buffers) {
        write_buffer(buffer);
        std::free(buffer.data);
    }
    return 0;
}

}  // namespace autoconv_emu
