// tma.cuh: Hopper's tensor memory accelerator (TMA): box copies from global to shared memory
// through a tensor map, completing on an mbarrier (templates/mbarrier.cuh), sm_90a.
//
// Plain CUDA, pulled in by a template's Jinja include (as wgmma_f16.cuh): the character pairs
// that open a Jinja tag (a brace followed by %, { or #) must not occur in it.
//
// A tensor map (TensorMap, 128 bytes, 64-byte aligned) describes a buffer, its sizes and strides,
// the box a copy brings, and the shared-memory swizzle (autoconv.kernels.tensor_maps lists what a
// plan's maps are; the launcher encodes them for each launch's buffers and passes them by value:
// a kernel takes `const __grid_constant__ tma::TensorMap name`).
//   copy_im2col(destination, map, barrier, c, w, h, n, offset_w, offset_h)
//       an im2col box of a 4-d NHWC map: `pixels` output pixels walked through the map's bounding
//       box from base position (w, h, n), channels c .. c + channels - 1 each, at filter offsets
//       (offset_w, offset_h); what falls outside the tensor is zero.
//   copy_tiled(destination, map, barrier, x0, x1, x2)
//       a box of a 3-d tiled map from coordinate (x0, x1, x2) (x0 innermost); zero outside.
//   prefetch(map)
//       fetch the map into the TMA unit's descriptor cache ahead of its first copy (a hint: it
//       moves no data, and a copy without it fetches the map itself, on its own critical path).
// Both copies write the box in the 128-byte swizzle (16-byte chunk c of box row r at chunk position
// c ^ (r % 8); rows of 128 bytes), so `destination` must be 1024-byte aligned, and both count
// the box's bytes (out-of-bounds zeros included) on `barrier` as completed transactions: the
// phase that mbarrier::arrive_expect_bytes opened for them completes when they all landed. The
// tensor cores may read them after a wait on that phase (no proxy fence: both are async-proxy).
// A map of TF32 elements (float32 in memory) rounds each value to TF32 on the way (10 mantissa
// bits, to nearest, ties to even: the H100's TMA, docs/lab-notes/2026-11-26-tf32-nhwc-through-tma.md).
// One thread issues a copy; the barrier needs no arrival from the other threads for it.
#ifndef AUTOCONV_TMA_CUH  // a guard, not #pragma once: inlined into a source, that one warns
#define AUTOCONV_TMA_CUH

namespace tma {

//! CUtensorMap's size and alignment, without cuda.h (NVRTC has none).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

#ifndef AUTOCONV_EMULATOR

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "cp.async.bulk.tensor needs the sm_90a target (compile with -arch=sm_90a)"
#endif

namespace detail {
__device__ __forceinline__ unsigned shared_address(const void* pointer)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}
}  // namespace detail

__device__ __forceinline__ void copy_im2col(void* destination, const TensorMap* map, unsigned long long* barrier,
                                            int c, int w, int h, int n, unsigned short offset_w,
                                            unsigned short offset_h)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, { %2, %3, %4, %5 }], [%6], { %7, %8 };\n" ::"r"(detail::shared_address(destination)),
                 "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(detail::shared_address(barrier)), "h"(offset_w),
                 "h"(offset_h)
                 : "memory");
}

__device__ __forceinline__ void copy_tiled(void* destination, const TensorMap* map, unsigned long long* barrier,
                                           int x0, int x1, int x2)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, { %2, %3, %4 }], [%5];\n" ::"r"(detail::shared_address(destination)),
                 "l"(map), "r"(x0), "r"(x1), "r"(x2), "r"(detail::shared_address(barrier))
                 : "memory");
}

__device__ __forceinline__ void prefetch(const TensorMap* map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

#else  // the CPU emulator's model

// autoconv_emu's (emulator_runtime.cpp): `map` must be the emulator's encoding of a map
// (autoconv/emulator/tensor_maps.py; anything else is a fault); the box is read when the copy is
// issued, its bytes count on the barrier at once, and it lands in shared memory, swizzled, when a
// wait sees that phase complete (a read before the wait sees the poison). Only box rows of
// exactly 128 bytes (64 two-byte or 32 four-byte elements) are modelled, from base positions of
// the walk; a TF32 map's copies round each float32 to TF32 (to nearest, ties to even).
__device__ __forceinline__ void copy_im2col(void* destination, const TensorMap* map, unsigned long long* barrier,
                                            int c, int w, int h, int n, unsigned short offset_w,
                                            unsigned short offset_h)
{
    autoconv_emu::tma_copy_im2col(destination, map, barrier, c, w, h, n, offset_w, offset_h);
}

__device__ __forceinline__ void copy_tiled(void* destination, const TensorMap* map, unsigned long long* barrier,
                                           int x0, int x1, int x2)
{
    autoconv_emu::tma_copy_tiled(destination, map, barrier, x0, x1, x2);
}

__device__ __forceinline__ void prefetch(const TensorMap* map)
{
    autoconv_emu::tma_prefetch(map);
}

#endif

}  // namespace tma

#endif  // AUTOCONV_TMA_CUH
