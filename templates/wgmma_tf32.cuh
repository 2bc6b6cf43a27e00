// wgmma_tf32.cuh: warpgroup TF32 tensor-core products (Hopper's wgmma.mma_async, sm_90a), the
// shared-memory descriptors they read B through, and TF32 rounding.
//
// Plain CUDA, pulled in by a template's Jinja include, so that a rendered source is
// self-contained (NVRTC, nvcc and the CPU emulator compile it with no include path, and the
// plan's source hash covers it). Jinja reads it as a template: the character pairs that open a
// Jinja tag (a brace followed by %, { or #) must not occur in it.
//
// An asm statement names every register it uses, so the product is written out for each width N
// a kernel may use (16, 32, 64, 104, 128, 192, 208, 224, 256: mma_m64n<N>k8); mma_m64nNk8<N> picks
// one at compile time.
//
// On the GPU each function is a PTX instruction (inline asm). Under the CPU emulator
// (cuda_emulation.h defines AUTOCONV_EMULATOR), where inline PTX cannot run, each has a model
// with the instruction's semantics (below).
//
// The product, for one warpgroup (4 consecutive warps, the first a multiple of 4):
//   mma_m64n<N>k8(d, a, b, accumulate):  D = A * B + (accumulate ? D : 0), with
//     A  64 x 8, in registers: warp w of the group holds rows 16w..16w+15, each lane four values
//        in the m16n8k8 layout (g = lane / 4, t = lane % 4):
//            a[0] = A[16w+g][t]  a[1] = A[16w+g+8][t]  a[2] = A[16w+g][t+4]  a[3] = A[16w+g+8][t+4]
//     B  8 x N, in shared memory, read through the descriptor b (make_descriptor), K-major
//        (each column n of B, i.e. each row of B^T, has its 8 k values at consecutive addresses)
//     D  64 x N float32 in registers: lane (g, t) of warp w holds, for j < N/8,
//            d[4j+0] = D[16w+g][8j+2t]    d[4j+1] = D[16w+g][8j+2t+1]
//            d[4j+2] = D[16w+g+8][8j+2t]  d[4j+3] = D[16w+g+8][8j+2t+1]
//   mma_ss_m64n<N>k8(d, a, b, accumulate): the same with A in shared memory too, read through the
//     descriptor a in B's layout (K-major: each row m of A has its k values at consecutive
//     addresses, 128-byte swizzle; the tensor cores read A as TF32, as B).
//   It is asynchronous: issue products, then commit() them as a group and wait<PENDING>() until
//   at most PENDING groups are in flight. Until then D must not be read or written, nor A's
//   registers written, nor B's shared memory overwritten. fence() must come between the last
//   ordinary write of A's or D's registers and the products that read them.
//
// B's shared-memory layout (the 128-byte swizzle, K-major): B^T as rows of 32 floats (128
// bytes, k = 0..31), 8 rows making a 1024-byte atom aligned to 1024 bytes; the 16-byte chunk
// c (k = 4c..4c+3) of row r sits at chunk position c ^ (r % 8), so that the 8 rows of a chunk
// column lie in 8 different bank groups. The descriptor of a product starts at the address of
// its first k (row 0 of its first atom, plus 4 bytes per k), and steps ATOM_STRIDE bytes from
// one atom (8 values of n) to the next. The swizzle is applied to address bits by the hardware,
// so starting 32 bytes into the atom (k = 8) selects k = 8..15 of every row.
//
// Arithmetic of the model, as mma_tf32.cuh's: operands are read as TF32 (the low 13 bits of
// each float ignored, as the tensor cores do); the 8 products of a k step are exact; their sum
// with the accumulator is rounded toward zero once. Unlike mma.sync's, the hardware's sum is not
// always that: on an H100 it dropped an addend 2^-6 of the accumulator's ulp that rounding toward
// zero counts (tests/emulator/test_wgmma_tf32.py), so results may differ from the model's by a few float32
// roundings of the magnitudes summed (checked on the GPU). As with mma.sync, long chains of
// products into one accumulator lose accuracy (truncation is a bias): fp32 (3xTF32) kernels start
// a fresh chain per K tile; tf32 kernels, whose operand rounding errs far more, add into the sums.
#ifndef AUTOCONV_WGMMA_TF32_CUH  // a guard, not #pragma once: inlined into a source, that one warns
#define AUTOCONV_WGMMA_TF32_CUH

namespace wgmma_tf32 {

//! Bytes between consecutive 8-row atoms of a B tile, and the alignment of each atom.
constexpr unsigned ATOM_BYTES = 1024;
//! Floats of k per row of an atom (its 128 bytes).
constexpr int ATOM_K = 32;

//! Rounds to TF32 (10 mantissa bits), to nearest with ties away from zero, as cvt.rna.tf32.f32
//! does for finite values: adding half a TF32 ulp to the magnitude's bits carries into the kept
//! bits exactly when the dropped ones are at least half. Two integer operations.
__device__ __forceinline__ float round_to_tf32(float value)
{
    return __uint_as_float((__float_as_uint(value) + 0x1000u) & 0xFFFFE000u);
}

//! Position of float k (0..31) of row `row` within an atom row: its 16-byte chunk is swizzled.
__host__ __device__ constexpr int swizzled_k(int row, int k) { return ((k / 4) ^ (row % 8)) * 4 + k % 4; }

//! The descriptor of B for one product: `address` is the shared-window address of its first
//! k in row 0 (make it with shared_address), atoms ATOM_BYTES apart, the 128-byte swizzle.
//! Fields (PTX ISA, "Matrix Descriptor Format"): bits 0-13 address / 16, 16-29 the leading
//! byte offset / 16 (unused by K-major swizzled layouts; 1 by convention), 32-45 the stride
//! byte offset / 16 (atom to atom), 49-51 base offset 0 (atoms 1024-byte aligned), 62-63 the
//! swizzle mode (1 = 128 bytes).
__device__ __forceinline__ unsigned long long make_descriptor(unsigned address)
{
    return static_cast<unsigned long long>((address & 0x3FFFFu) >> 4) |
           static_cast<unsigned long long>(1u) << 16 |
           static_cast<unsigned long long>(ATOM_BYTES >> 4) << 32 |
           static_cast<unsigned long long>(1u) << 62;
}

//! The descriptor of the operand `bytes` further on (a multiple of 16): make_descriptor(address +
//! bytes) as one add, where the address field cannot carry into the next one (shared-window
//! addresses are below 2^18 on sm_90). Computing a stage's and a k step's descriptors so, from
//! one made before the main loop, keeps the loop to an add per product instead of the masks and
//! shifts of make_descriptor.
__device__ __forceinline__ unsigned long long advance(unsigned long long descriptor, unsigned bytes)
{
    return descriptor + (bytes >> 4);
}

#ifndef AUTOCONV_EMULATOR

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "wgmma.mma_async needs the sm_90a target (compile with -arch=sm_90a)"
#endif

//! The 32-bit shared-window address of a shared-memory pointer.
__device__ __forceinline__ unsigned shared_address(const void* pointer)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(pointer));
}

//! wgmma.fence: orders earlier register writes before the products issued after it.
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

//! This thread's warpgroup (threadIdx.x / 128), read from lane 0 by a shuffle: the compiler then
//! knows the value is the same in every lane of the warp, and keeps what is computed from it (a
//! warpgroup's operand descriptors) in uniform registers, instead of moving it into them before
//! every product (R2UR; CUTLASS's canonical_warp_group_idx does the same).
__device__ __forceinline__ int warpgroup_index()
{
    return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x) / 128, 0);
}

//! Closes the group of products this warpgroup issued since the last commit.
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

//! Waits until at most PENDING committed groups of this warpgroup are in flight.
template <int PENDING>
__device__ __forceinline__ void wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

//! Makes this thread's ordinary writes to shared memory (cp.async copies included) visible to
//! the tensor cores' reads (the async proxy); then a barrier publishes them to the block.
__device__ __forceinline__ void fence_shared_for_tensor_cores()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

//! D (64 x 16) = A (64 x 8, registers) * B (8 x 16, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n16k8(float (&d)[8], const float (&a)[4], unsigned long long b,
                                             bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7 }, "
        "{ %8, %9, %10, %11 }, "
        "%12, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 32) = A (64 x 8, registers) * B (8 x 32, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n32k8(float (&d)[16], const float (&a)[4], unsigned long long b,
                                             bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %21, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15 }, "
        "{ %16, %17, %18, %19 }, "
        "%20, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 64) = A (64 x 8, registers) * B (8 x 64, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n64k8(float (&d)[32], const float (&a)[4], unsigned long long b,
                                             bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 }, "
        "{ %32, %33, %34, %35 }, "
        "%36, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 104) = A (64 x 8, registers) * B (8 x 104, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n104k8(float (&d)[52], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %57, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n104k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51 }, "
        "{ %52, %53, %54, %55 }, "
        "%56, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 128) = A (64 x 8, registers) * B (8 x 128, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n128k8(float (&d)[64], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 }, "
        "{ %64, %65, %66, %67 }, "
        "%68, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 192) = A (64 x 8, registers) * B (8 x 192, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n192k8(float (&d)[96], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %101, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95 }, "
        "{ %96, %97, %98, %99 }, "
        "%100, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 208) = A (64 x 8, registers) * B (8 x 208, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n208k8(float (&d)[104], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %109, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n208k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103 }, "
        "{ %104, %105, %106, %107 }, "
        "%108, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 224) = A (64 x 8, registers) * B (8 x 224, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n224k8(float (&d)[112], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %117, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n224k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111 }, "
        "{ %112, %113, %114, %115 }, "
        "%116, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 256) = A (64 x 8, registers) * B (8 x 256, shared memory) + (accumulate ? D : 0).
__device__ __forceinline__ void mma_m64n256k8(float (&d)[128], const float (&a)[4], unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %133, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127 }, "
        "{ %128, %129, %130, %131 }, "
        "%132, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 16) = A (64 x 8) * B (8 x 16) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n16k8(float (&d)[8], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7 }, "
        "%8, %9, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 32) = A (64 x 8) * B (8 x 32) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n32k8(float (&d)[16], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15 }, "
        "%16, %17, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 64) = A (64 x 8) * B (8 x 64) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n64k8(float (&d)[32], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 }, "
        "%32, %33, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 104) = A (64 x 8) * B (8 x 104) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n104k8(float (&d)[52], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %54, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n104k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51 }, "
        "%52, %53, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 128) = A (64 x 8) * B (8 x 128) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n128k8(float (&d)[64], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 }, "
        "%64, %65, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 192) = A (64 x 8) * B (8 x 192) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n192k8(float (&d)[96], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %98, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95 }, "
        "%96, %97, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 208) = A (64 x 8) * B (8 x 208) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n208k8(float (&d)[104], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %106, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n208k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103 }, "
        "%104, %105, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 224) = A (64 x 8) * B (8 x 224) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n224k8(float (&d)[112], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %114, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n224k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111 }, "
        "%112, %113, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! D (64 x 256) = A (64 x 8) * B (8 x 256) + (accumulate ? D : 0), A and B in shared memory.
__device__ __forceinline__ void mma_ss_m64n256k8(float (&d)[128], unsigned long long a, unsigned long long b,
                                              bool accumulate)
{
    asm volatile(
        "{\n"
        ".reg .pred accumulate;\n"
        "setp.ne.b32 accumulate, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127 }, "
        "%128, %129, accumulate, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

//! Keeps the compiler from moving reads or writes of `d` across this point (the products that
//! write it asynchronously are invisible to it).
template <int SIZE>
__device__ __forceinline__ void fence_registers(float (&d)[SIZE])
{
#pragma unroll
    for (int i = 0; i < SIZE; ++i)
        asm volatile("" : "+f"(d[i])::"memory");
}

#else  // the CPU emulator's model

namespace emulation {

//! One issued product, as far as the issuing lane is concerned: its two rows of A, the
//! descriptor of B, and the lane's accumulator fragment it will update.
struct Product {
    float* d;
    int n;
    float a_rows[2][8];  // A[16w+g][0..7] and A[16w+g+8][0..7] (A in registers)
    unsigned long long b;
    bool accumulate;
    bool a_shared = false;      // A in shared memory: read through a_descriptor when the product runs
    unsigned long long a_descriptor = 0;
};

//! What the lanes of one warp publish for a product: their A fragments and a count.
struct WarpExchange {
    float a[32][4];
    unsigned long long arrivals;  // a multiple of 32 after every product the whole warp issued
};

//! The in-flight products of one CUDA thread: the open group, then committed groups, oldest
//! first; and the block they belong to (a block runs on one OS thread, fibers per thread).
struct ThreadQueue {
    std::vector<Product> open;
    std::vector<std::vector<Product>> committed;
    uint3 block;
};

inline thread_local WarpExchange exchange[32];
inline thread_local ThreadQueue queues[1024];

inline unsigned linear_thread()
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

//! This thread's queue; a fault if products of an earlier block on this OS thread were never
//! waited for (their accumulators are gone).
inline ThreadQueue& queue()
{
    ThreadQueue& q = queues[linear_thread()];
    const bool same_block = q.block.x == blockIdx.x && q.block.y == blockIdx.y && q.block.z == blockIdx.z;
    if (!same_block) {
        if (!q.open.empty() || !q.committed.empty())
            autoconv_emu::fault("wgmma: thread %u of an earlier block returned with products in flight "
                                "(every product must be committed and waited for)", linear_thread());
        q.block = blockIdx;
    }
    return q;
}

//! B[k][n] of a product, read from shared memory through its descriptor (the 128-byte swizzle).
inline float b_element(unsigned long long descriptor, int k, int n)
{
    const unsigned start = static_cast<unsigned>(descriptor & 0x3FFFu) << 4;
    const unsigned stride = static_cast<unsigned>(descriptor >> 32 & 0x3FFFu) << 4;
    const unsigned swizzle = static_cast<unsigned>(descriptor >> 62);
    const unsigned base_offset = static_cast<unsigned>(descriptor >> 49 & 7u);
    if (swizzle != 1 || base_offset != 0)
        autoconv_emu::fault("wgmma: only the 128-byte swizzle with base offset 0 is modelled (descriptor "
                            "0x%016llx has swizzle mode %u, base offset %u)", descriptor, swizzle, base_offset);
    const unsigned logical = start + static_cast<unsigned>(n / 8) * stride + static_cast<unsigned>(n % 8) * 128u +
                             static_cast<unsigned>(k) * 4u;
    const unsigned physical = logical ^ ((logical >> 7 & 7u) << 4);
    if (physical + 4 > autoconv_emu::shared_bytes())
        autoconv_emu::fault("wgmma: B element (k %d, n %d) at shared address %u lies past the block's %zu bytes "
                            "of shared memory (descriptor 0x%016llx)", k, n, physical,
                            autoconv_emu::shared_bytes(), descriptor);
    float value;
    std::memcpy(&value, smem + physical, sizeof(value));
    return value;
}

//! Applies a product to the issuing lane's accumulator fragment.
inline void apply(const Product& p)
{
    const int lane = static_cast<int>(linear_thread() % 32);
    const int t = lane % 4;
    float shared_rows[2][8];  // A from shared memory: this lane's rows 16w+g and 16w+g+8
    if (p.a_shared) {
        const int row = static_cast<int>(linear_thread() / 32 % 4) * 16 + lane / 4;
        for (int k = 0; k < 8; ++k) {
            shared_rows[0][k] = b_element(p.a_descriptor, k, row);  // (the same K-major layout as B)
            shared_rows[1][k] = b_element(p.a_descriptor, k, row + 8);
        }
    }
    for (int j = 0; j < p.n / 8; ++j) {
        for (int e = 0; e < 4; ++e) {
            const float* a_row = p.a_shared ? shared_rows[e / 2] : p.a_rows[e / 2];
            const int column = 8 * j + 2 * t + e % 2;
            double sum = p.accumulate ? p.d[4 * j + e] : 0.0;
            for (int k = 0; k < 8; ++k)  // a product of two TF32 values is exact in double
                sum += static_cast<double>(autoconv_emu::tf32_operand(a_row[k])) *
                       autoconv_emu::tf32_operand(b_element(p.b, k, column));
            p.d[4 * j + e] = autoconv_emu::round_toward_zero(sum);
        }
    }
}

//! Issues a product: publishes this lane's A fragment to its warp, collects the lane's two
//! rows of A, and queues the product; it runs (reading B and updating d) at wait().
inline void issue(float* d, int n, const float (&a)[4], unsigned long long b, bool accumulate)
{
    const unsigned thread = linear_thread();
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    if (threads % 128 != 0)
        autoconv_emu::fault("wgmma: the block has %u threads, not whole warpgroups of 128", threads);
    const unsigned warp = thread / 32, lane = thread % 32;
    WarpExchange& x = exchange[warp];
    for (int i = 0; i < 4; ++i)
        x.a[lane][i] = a[i];
    x.arrivals += 1;
    autoconv_emu::warp_barrier();
    if (x.arrivals % 32 != 0)
        autoconv_emu::fault("wgmma.mma_async: only %llu of the 32 lanes of warp %u execute it (every lane of "
                            "the warpgroup must)", x.arrivals % 32, warp);
    Product p{d, n, {}, b, accumulate};
    const int g = static_cast<int>(lane) / 4;
    for (int l = 0; l < 32; ++l) {  // lane l holds A[l/4][l%4], A[l/4+8][l%4], A[l/4][l%4+4], A[l/4+8][l%4+4]
        if (l / 4 != g)
            continue;
        const int t = l % 4;
        p.a_rows[0][t] = x.a[l][0];
        p.a_rows[1][t] = x.a[l][1];
        p.a_rows[0][t + 4] = x.a[l][2];
        p.a_rows[1][t + 4] = x.a[l][3];
    }
    autoconv_emu::warp_barrier();  // no lane publishes its next fragment before all have read these
    queue().open.push_back(p);
}

//! Issues a product with A in shared memory: every lane of the warp must take part; A and B
//! are read when the product runs (at wait()).
inline void issue_ss(float* d, int n, unsigned long long a, unsigned long long b, bool accumulate)
{
    const unsigned thread = linear_thread();
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    if (threads % 128 != 0)
        autoconv_emu::fault("wgmma: the block has %u threads, not whole warpgroups of 128", threads);
    const unsigned warp = thread / 32;
    WarpExchange& x = exchange[warp];
    x.arrivals += 1;
    autoconv_emu::warp_barrier();
    if (x.arrivals % 32 != 0)
        autoconv_emu::fault("wgmma.mma_async: only %llu of the 32 lanes of warp %u execute it (every lane of "
                            "the warpgroup must)", x.arrivals % 32, warp);
    autoconv_emu::warp_barrier();
    Product p{d, n, {}, b, accumulate};
    p.a_shared = true;
    p.a_descriptor = a;
    queue().open.push_back(p);
}

}  // namespace emulation

inline unsigned shared_address(const void* pointer)
{
    const unsigned char* byte = static_cast<const unsigned char*>(pointer);
    if (byte < smem || byte >= smem + sizeof(smem))
        autoconv_emu::fault("shared_address: the pointer is not in the block's shared memory");
    return static_cast<unsigned>(byte - smem);
}

// The register and proxy fences order things the emulator does in program order anyway.
inline void fence() {}
inline int warpgroup_index() { return static_cast<int>(threadIdx.x) / 128; }   // (uniform by construction)
inline void fence_shared_for_tensor_cores() {}
template <int SIZE>
inline void fence_registers(float (&)[SIZE]) {}

inline void commit()
{
    emulation::ThreadQueue& q = emulation::queue();
    q.committed.push_back(std::move(q.open));
    q.open.clear();
}

template <int PENDING>
inline void wait()
{
    emulation::ThreadQueue& q = emulation::queue();
    while (q.committed.size() > static_cast<std::size_t>(PENDING)) {
        for (const emulation::Product& p : q.committed.front())
            emulation::apply(p);
        q.committed.erase(q.committed.begin());
    }
}

inline void mma_m64n16k8(float (&d)[8], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 16, a, b, accumulate);
}

inline void mma_m64n32k8(float (&d)[16], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 32, a, b, accumulate);
}

inline void mma_m64n64k8(float (&d)[32], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 64, a, b, accumulate);
}

inline void mma_m64n104k8(float (&d)[52], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 104, a, b, accumulate);
}

inline void mma_m64n128k8(float (&d)[64], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 128, a, b, accumulate);
}

inline void mma_m64n192k8(float (&d)[96], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 192, a, b, accumulate);
}

inline void mma_m64n208k8(float (&d)[104], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 208, a, b, accumulate);
}

inline void mma_m64n224k8(float (&d)[112], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 224, a, b, accumulate);
}

inline void mma_m64n256k8(float (&d)[128], const float (&a)[4], unsigned long long b, bool accumulate)
{
    emulation::issue(d, 256, a, b, accumulate);
}

inline void mma_ss_m64n16k8(float (&d)[8], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 16, a, b, accumulate);
}

inline void mma_ss_m64n32k8(float (&d)[16], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 32, a, b, accumulate);
}

inline void mma_ss_m64n64k8(float (&d)[32], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 64, a, b, accumulate);
}

inline void mma_ss_m64n104k8(float (&d)[52], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 104, a, b, accumulate);
}

inline void mma_ss_m64n128k8(float (&d)[64], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 128, a, b, accumulate);
}

inline void mma_ss_m64n192k8(float (&d)[96], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 192, a, b, accumulate);
}

inline void mma_ss_m64n208k8(float (&d)[104], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 208, a, b, accumulate);
}

inline void mma_ss_m64n224k8(float (&d)[112], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 224, a, b, accumulate);
}

inline void mma_ss_m64n256k8(float (&d)[128], unsigned long long a, unsigned long long b, bool accumulate)
{
    emulation::issue_ss(d, 256, a, b, accumulate);
}

#endif

//! The product of a width N chosen at compile time (a template's warpgroup tile, say).
template <int N>
__device__ __forceinline__ void mma_m64nNk8(float (&d)[N / 2], const float (&a)[4], unsigned long long b,
                                            bool accumulate)
{
    static_assert(N == 16 || N == 32 || N == 64 || N == 104 || N == 128 || N == 192 || N == 208 ||
                  N == 224 || N == 256,
                  "mma_m64nNk8 is written out for N = 16, 32, 64, 104, 128, 192, 208, 224, 256");
    if constexpr (N == 16)
        mma_m64n16k8(d, a, b, accumulate);
    else if constexpr (N == 32)
        mma_m64n32k8(d, a, b, accumulate);
    else if constexpr (N == 64)
        mma_m64n64k8(d, a, b, accumulate);
    else if constexpr (N == 104)
        mma_m64n104k8(d, a, b, accumulate);
    else if constexpr (N == 128)
        mma_m64n128k8(d, a, b, accumulate);
    else if constexpr (N == 192)
        mma_m64n192k8(d, a, b, accumulate);
    else if constexpr (N == 208)
        mma_m64n208k8(d, a, b, accumulate);
    else if constexpr (N == 224)
        mma_m64n224k8(d, a, b, accumulate);
    else
        mma_m64n256k8(d, a, b, accumulate);
}

//! The product with A in shared memory (descriptor ``a``, the layout of B) of a width N chosen
//! at compile time.
template <int N>
__device__ __forceinline__ void mma_ss_m64nNk8(float (&d)[N / 2], unsigned long long a, unsigned long long b,
                                               bool accumulate)
{
    static_assert(N == 16 || N == 32 || N == 64 || N == 104 || N == 128 || N == 192 || N == 208 ||
                  N == 224 || N == 256,
                  "mma_ss_m64nNk8 is written out for N = 16, 32, 64, 104, 128, 192, 208, 224, 256");
    if constexpr (N == 16)
        mma_ss_m64n16k8(d, a, b, accumulate);
    else if constexpr (N == 32)
        mma_ss_m64n32k8(d, a, b, accumulate);
    else if constexpr (N == 64)
        mma_ss_m64n64k8(d, a, b, accumulate);
    else if constexpr (N == 104)
        mma_ss_m64n104k8(d, a, b, accumulate);
    else if constexpr (N == 128)
        mma_ss_m64n128k8(d, a, b, accumulate);
    else if constexpr (N == 192)
        mma_ss_m64n192k8(d, a, b, accumulate);
    else if constexpr (N == 208)
        mma_ss_m64n208k8(d, a, b, accumulate);
    else if constexpr (N == 224)
        mma_ss_m64n224k8(d, a, b, accumulate);
    else
        mma_ss_m64n256k8(d, a, b, accumulate);
}

}  // namespace wgmma_tf32

#endif  // AUTOCONV_WGMMA_TF32_CUH
