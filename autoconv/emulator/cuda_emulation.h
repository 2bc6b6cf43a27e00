// autoconv CUDA emulation header: the CUDA vocabulary autoconv's templates use, on the CPU.
//
// Included ahead of the unchanged rendered kernel source (g++ -include cuda_emulation.h).
// Execution model, as CUDA defines it:
//   - every CUDA thread of a block is a fiber (ucontext) on one OS thread, so all threads of
//     a block are alive at once and __syncthreads() is a real barrier: a thread that reaches
//     it yields, and the block's threads are released only when every thread that has not
//     returned has arrived (returned threads no longer hold a barrier up). Warp-level syncs
//     (__syncwarp(), the wmma::*_sync operations of mma.h) wait likewise for the live lanes
//     of the warp; lanes of one warp waiting at different kinds of barrier are a fault;
//   - an mbarrier (templates/mbarrier.cuh) keeps its state in its own 8 bytes of shared
//     memory (pending and expected arrivals, phase parity, and a tag, so the 0xFF poison reads
//     as "not initialised"; its transaction count, which arrive_expect_bytes raises and TMA
//     copies lower, beside it in the block's state); a thread that waits for a phase not yet
//     complete yields until it is. A block whose threads all wait for something that can no
//     longer happen faults ("hang"), naming the mbarrier and the phase;
//   - a TMA copy (templates/tma.cuh) reads its box through the emulator's own encoding of a
//     tensor map (autoconv/emulator/tensor_maps.py) when it is issued, counts its bytes on its
//     mbarrier at once, and lands in shared memory, swizzled, when a wait sees the phase it
//     completed in complete;
//   - between barriers the threads run one after the other, in index order in even phases
//     and in reverse order in odd ones: a thread that reads what another thread writes in
//     the same phase (a missing barrier) reads the old, often poisoned, value in one of the
//     two orders;
//   - __shared__ is thread_local: one copy per OS thread, and an OS thread runs one block at
//     a time, so shared memory is shared by the threads of a block and private to it. The
//     dynamic shared memory `smem` is refilled with 0xFF bytes (NaN as float) before every
//     block and everything past the launch's dynamic size is poisoned for AddressSanitizer;
//   - blocks run on a small pool of OS threads (see emulator_runtime.cpp).
// A CUDA feature not modelled here either fails to compile with a message that names it
// ("autoconv emulator: ... is not modelled") or is an undeclared name; it never silently
// means something else.
#pragma once

// Lets a project header choose its emulator model over its inline PTX (templates/mma_tf32.cuh).
#define AUTOCONV_EMULATOR 1

#include <math.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef AUTOCONV_EMU_MAX_SHARED_BYTES
// Dynamic shared memory one block may use after opting in: the H100's 227 KiB.
#define AUTOCONV_EMU_MAX_SHARED_BYTES (227 * 1024)
#endif

// ---- vector and index types -------------------------------------------------------------
struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// Alignments as in CUDA's vector_types.h: a float4 access must be 16-byte aligned (UBSan
// reports a misaligned one, as the GPU would fault on it).
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };

constexpr float2 make_float2(float x, float y) { return float2{x, y}; }
constexpr float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }
constexpr int2 make_int2(int x, int y) { return int2{x, y}; }
constexpr int4 make_int4(int x, int y, int z, int w) { return int4{x, y, z, w}; }
constexpr uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
    return uint4{x, y, z, w};
}

// ---- qualifiers ---------------------------------------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __shared__ thread_local
// A kernel's by-value parameter the GPU keeps in constant memory (a TMA tensor map): here the
// parameter is an ordinary by-value copy, and its address is as good as the GPU's.
#define __grid_constant__
// __restrict__ is a g++ keyword already; `#pragma unroll` is an unknown pragma, ignored.

// ---- the runtime's interface (emulator_runtime.cpp) and the built-in index variables ------
namespace autoconv_emu {

//! Bytes of dynamic shared memory a launch may ask for.
constexpr std::size_t max_shared_bytes = AUTOCONV_EMU_MAX_SHARED_BYTES;

// Set by the block scheduler before it resumes a CUDA thread (a fiber on this OS thread).
inline thread_local uint3 thread_idx{0, 0, 0};
inline thread_local uint3 block_idx{0, 0, 0};
inline thread_local dim3 block_dim{1, 1, 1};
inline thread_local dim3 grid_dim{1, 1, 1};

//! __syncthreads(): yields to the block scheduler until every live thread of the block has
//! arrived.
void barrier();
//! bar.sync id, threads (a named barrier: named_barrier::sync of templates/mbarrier.cuh): yields
//! until `threads` threads of the block wait at barrier `id`; threads that can never be joined
//! are a "hang" fault.
void named_barrier_sync(unsigned id, unsigned threads);

//! A warp-level sync (wmma::*_sync, __syncwarp): yields until every live lane of the
//! calling thread's warp (32 consecutive threads in linear order) has arrived at one.
void warp_barrier();

//! Bytes of dynamic shared memory the running launch asked for.
std::size_t shared_bytes();

//! Reports a fault of the running kernel, with the kernel, block and thread, and ends the
//! program (exit status 3).
[[noreturn]] void fault(const char* format, ...) __attribute__((format(printf, 1, 2)));

// cp.async, for cuda_pipeline.h.
void async_copy(void* destination, const void* source, std::size_t size_and_align, std::size_t zfill);
void async_commit();
void async_wait_prior(std::size_t pending);

// mbarriers (shared-memory barrier objects with phases), for templates/mbarrier.cuh. Each
// faults on a barrier that is not an initialised mbarrier in the block's dynamic shared memory.
void mbarrier_init(unsigned long long* barrier, unsigned count);
void mbarrier_arrive(unsigned long long* barrier);
//! Arrives once this thread's earlier cp.async copies have landed (.noinc: one of the
//! barrier's counted arrivals); the copies land when a wait observes the completed phase.
void mbarrier_arrive_when_copies_land(unsigned long long* barrier);
//! One arrival that also expects `bytes` more transaction bytes in the current phase
//! (mbarrier.arrive.expect_tx): the phase completes when its arrivals are all in and the TMA
//! copies counted on it brought exactly the bytes expected.
void mbarrier_arrive_expect_bytes(unsigned long long* barrier, unsigned bytes);
//! Returns once the phase of parity `parity` has completed; until then the thread yields.
void mbarrier_wait(unsigned long long* barrier, unsigned parity);

// TMA copies, for templates/tma.cuh: `map` points at a tensor map in the emulator's encoding
// (autoconv/emulator/tensor_maps.py; anything else is a fault). The box is read when the copy is
// issued, its bytes count as completed transactions on `barrier` at once, and it lands in shared
// memory (in the 128-byte swizzle) when a wait sees that phase complete.
void tma_copy_im2col(void* destination, const void* map, unsigned long long* barrier, int c, int w, int h, int n,
                     unsigned offset_w, unsigned offset_h);
void tma_copy_tiled(void* destination, const void* map, unsigned long long* barrier, int x0, int x1, int x2);
//! prefetch.tensormap: a hint that changes nothing here; `map` must be a map in the emulator's
//! encoding all the same (anything else is a fault), as a copy through it would need.
void tma_prefetch(const void* map);

// ---- calling kernels by name (the generated main file lists them) ----------------------------
struct KernelEntry {
    const char* name;
    void (*invoke)(void* const* args);
    int arity;
    //! Per parameter: 0 for a pointer (the buffer's address is passed), else the bytes of a
    //! by-value struct (the buffer must be exactly that long; its bytes are passed).
    const std::size_t* value_bytes;
};

//! A parameter passed by value: a trivially copyable struct (a tensor map); 0 for a pointer.
template <class T>
constexpr std::size_t parameter_value_bytes() {
    static_assert(std::is_pointer_v<T> || (std::is_class_v<T> && std::is_trivially_copyable_v<T>),
                  "autoconv emulator: a kernel's parameters must be pointers or trivially copyable structs "
                  "(tensor maps) (autoconv's template convention: problem sizes are compile-time constants)");
    if constexpr (std::is_pointer_v<T>)
        return 0;
    else
        return sizeof(T);
}

template <class Function>
struct KernelSignature;

template <class... Args>
struct KernelSignature<void (*)(Args...)> {
    static constexpr int arity = sizeof...(Args);
    static constexpr std::size_t value_bytes[sizeof...(Args) + 1] = {parameter_value_bytes<Args>()..., 0};

    template <class T>
    static T argument(void* pointer) {
        if constexpr (std::is_pointer_v<T>)
            return static_cast<T>(pointer);
        else
            return *static_cast<const std::remove_cv_t<T>*>(pointer);
    }

    template <auto Kernel, std::size_t... I>
    static void call(void* const* args, std::index_sequence<I...>) {
        Kernel(argument<Args>(args[I])...);
    }
};

//! Calls `Kernel` with the pointers in `args`, each converted to its parameter's type (a
//! pointer parameter gets the pointer, a by-value one the object it points at).
template <auto Kernel>
void invoke([[maybe_unused]] void* const* args) {
    using Signature = KernelSignature<decltype(Kernel)>;
    Signature::template call<Kernel>(args, std::make_index_sequence<Signature::arity>{});
}

#define AUTOCONV_EMU_KERNEL(name)                                                                 \
    ::autoconv_emu::KernelEntry {                                                                 \
        #name, &::autoconv_emu::invoke<&name>, ::autoconv_emu::KernelSignature<decltype(&name)>::arity, \
            ::autoconv_emu::KernelSignature<decltype(&name)>::value_bytes                         \
    }

//! A file-scope `__constant__ int` of the source (a size it takes at run time), set by name
//! from the manifest before the first launch.
struct ConstantEntry {
    const char* name;
    int* value;
};

#define AUTOCONV_EMU_CONSTANT(name) ::autoconv_emu::ConstantEntry { #name, &name }

//! The host program: runs the launches of a manifest (see emulator_runtime.cpp).
int host_main(int argc, char** argv, const KernelEntry* kernels, std::size_t kernel_count,
              const ConstantEntry* constants = nullptr, std::size_t constant_count = 0);

}  // namespace autoconv_emu

// The dynamic shared memory of the block this OS thread is running. Templates declare it as
// `extern __shared__ __align__(16) unsigned char smem[];`, which this header turns into
// `extern thread_local ... smem[]`: a reference to this array. On the GPU a kernel without
// static __shared__ variables (autoconv's convention) finds its dynamic shared memory at the
// start of the block's shared window, aligned far beyond any __align__ a template declares;
// so is this array.
alignas(1024) inline thread_local unsigned char smem[AUTOCONV_EMU_MAX_SHARED_BYTES];

#define threadIdx (static_cast<const uint3&>(::autoconv_emu::thread_idx))
#define blockIdx (static_cast<const uint3&>(::autoconv_emu::block_idx))
#define blockDim (static_cast<const dim3&>(::autoconv_emu::block_dim))
#define gridDim (static_cast<const dim3&>(::autoconv_emu::grid_dim))
constexpr int warpSize = 32;

inline void __syncthreads() { autoconv_emu::barrier(); }

//! Only the full-warp form is modelled (every lane of the warp takes part).
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    if (mask != 0xffffffffu)
        autoconv_emu::fault("__syncwarp(0x%08x): only __syncwarp() of the whole warp is modelled", mask);
    autoconv_emu::warp_barrier();
}

// ---- device functions ---------------------------------------------------------------------
template <class T>
inline T __ldg(const T* pointer) { return *pointer; }
//! A load that bypasses the SM's L1 (data other blocks wrote during the launch); memory is one here.
template <class T>
inline T __ldcg(const T* pointer) { return *pointer; }

// CUDA's min/max: integer overloads compare in the common type (int with unsigned compares
// unsigned, as CUDA's do); floating-point ones are fminf/fmaxf (a NaN operand is ignored).
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
    using T = std::common_type_t<A, B>;
    static_assert(std::is_arithmetic_v<T>, "autoconv emulator: min() of non-arithmetic types");
    if constexpr (std::is_floating_point_v<T>)
        return fmin(T(a), T(b));
    else
        return T(b) < T(a) ? T(b) : T(a);
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
    using T = std::common_type_t<A, B>;
    static_assert(std::is_arithmetic_v<T>, "autoconv emulator: max() of non-arithmetic types");
    if constexpr (std::is_floating_point_v<T>)
        return fmax(T(a), T(b));
    else
        return T(a) < T(b) ? T(b) : T(a);
}
// fmaf, fminf, fmaxf, sqrtf, expf... are <math.h>'s, correctly rounded like the GPU's.

// Reinterpreting a float's bits as an integer and back.
inline unsigned int __float_as_uint(float value) {
    unsigned int bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}
inline float __uint_as_float(unsigned int bits) {
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

// ---- integer atomics and the device-wide fence ---------------------------------------------
// Blocks run concurrently on the pool's OS threads, so these are real atomics: atomicAdd is a
// sequentially consistent read-modify-write, __threadfence() a sequentially consistent fence
// (at least as strong as the GPU's fence.sc/fence.acq_rel at gpu scope). Only the integer forms
// are modelled; a floating-point atomicAdd (whose result depends on the blocks' order) is not.
template <class T, class V>
inline T atomicAdd(T* address, V value) {
    static_assert(std::is_same_v<T, int> || std::is_same_v<T, unsigned int> ||
                      std::is_same_v<T, unsigned long long>,
                  "autoconv emulator: atomicAdd (floating-point atomic) is not modelled; the CPU emulator "
                  "models atomicAdd on int, unsigned int and unsigned long long only "
                  "(see autoconv/emulator/cuda_emulation.h)");
    return __atomic_fetch_add(address, static_cast<T>(value), __ATOMIC_SEQ_CST);
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---- TF32 tensor-core arithmetic, for the models of <mma.h> and templates/mma_tf32.cuh ------
namespace autoconv_emu {
//! The value the tensor cores read from a TF32 operand: its top 19 bits.
inline float tf32_operand(float value) { return __uint_as_float(__float_as_uint(value) & 0xFFFFE000u); }

//! A sum rounded to float toward zero, as the tensor cores' adder does (once per MMA here).
inline float round_toward_zero(double value) {
    float rounded = static_cast<float>(value);
    if (fabs(static_cast<double>(rounded)) > fabs(value))
        rounded = nextafterf(rounded, 0.0f);
    return rounded;
}

//! Rounds to TF32 (10 mantissa bits), to nearest with ties away from zero: cvt.rna.tf32.f32.
inline float tf32_round(float value) {
    if (!isfinite(value))
        return value;
    // adding half an ulp to the magnitude: ties go up
    return __uint_as_float((__float_as_uint(value) + 0x1000u) & 0xFFFFE000u);
}
}  // namespace autoconv_emu

// ---- what is not modelled: a compile error that names the feature -------------------------
namespace autoconv_emu {
template <class... T>
struct not_modelled : std::false_type {};
}  // namespace autoconv_emu

#define AUTOCONV_EMU_NOT_MODELLED(name, what)                                                        \
    template <class... T>                                                                            \
    inline int name(T...) {                                                                          \
        static_assert(autoconv_emu::not_modelled<T...>::value,                                       \
                      "autoconv emulator: " #name " (" what ") is not modelled; the CPU emulator "   \
                      "cannot check this kernel (see autoconv/emulator/cuda_emulation.h)");          \
        return 0;                                                                                    \
    }

AUTOCONV_EMU_NOT_MODELLED(__shfl_sync, "warp shuffle")
AUTOCONV_EMU_NOT_MODELLED(__shfl_up_sync, "warp shuffle")
AUTOCONV_EMU_NOT_MODELLED(__shfl_down_sync, "warp shuffle")
AUTOCONV_EMU_NOT_MODELLED(__shfl_xor_sync, "warp shuffle")
AUTOCONV_EMU_NOT_MODELLED(__ballot_sync, "warp vote")
AUTOCONV_EMU_NOT_MODELLED(__all_sync, "warp vote")
AUTOCONV_EMU_NOT_MODELLED(__any_sync, "warp vote")
AUTOCONV_EMU_NOT_MODELLED(__activemask, "warp vote")
AUTOCONV_EMU_NOT_MODELLED(__match_any_sync, "warp match")
AUTOCONV_EMU_NOT_MODELLED(__match_all_sync, "warp match")
AUTOCONV_EMU_NOT_MODELLED(__reduce_add_sync, "warp reduction")
AUTOCONV_EMU_NOT_MODELLED(__syncthreads_count, "counting barrier")
AUTOCONV_EMU_NOT_MODELLED(__syncthreads_and, "voting barrier")
AUTOCONV_EMU_NOT_MODELLED(__syncthreads_or, "voting barrier")
AUTOCONV_EMU_NOT_MODELLED(__threadfence_block, "memory fence")
AUTOCONV_EMU_NOT_MODELLED(__threadfence_system, "memory fence")
AUTOCONV_EMU_NOT_MODELLED(atomicSub, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicExch, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicMin, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicMax, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicInc, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicDec, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicCAS, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicAnd, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicOr, "atomic")
AUTOCONV_EMU_NOT_MODELLED(atomicXor, "atomic")
AUTOCONV_EMU_NOT_MODELLED(clock64, "cycle counter")
AUTOCONV_EMU_NOT_MODELLED(__nanosleep, "sleep")
AUTOCONV_EMU_NOT_MODELLED(__cvta_generic_to_shared, "address-space conversion for inline PTX")
#undef AUTOCONV_EMU_NOT_MODELLED

// Inline PTX, `asm(...)` or `asm volatile(...)`, becomes a failed static_assert naming it.
// Defined after every system header, which spell it __asm__.
#define asm                                                                                          \
    static_assert(false, "autoconv emulator: asm (inline PTX) is not modelled; the CPU emulator "    \
                         "cannot check this kernel (see autoconv/emulator/cuda_emulation.h)");
