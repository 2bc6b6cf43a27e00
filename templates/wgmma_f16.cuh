// wgmma_f16.cuh: warpgroup 16-bit tensor-core products (Hopper's wgmma.mma_async m64nNk16, sm_90a):
// bf16 or fp16 operands, both read from shared memory through descriptors, float32 accumulators.
//
// Plain CUDA, pulled in by a template's Jinja include (as wgmma_tf32.cuh, whose conventions it
// follows): the character pairs that open a Jinja tag (a brace followed by %, { or #) must not
// occur in it. It stands alone (a 16-bit kernel includes it instead of wgmma_tf32.cuh).
//
// Operands are 16-bit values passed as their bits (unsigned short), so that a kernel needs neither
// cuda_bf16.h nor cuda_fp16.h; FORMAT (BF16 or F16) says how the tensor cores read them.
//
// The product, for one warpgroup (4 consecutive warps, the first a multiple of 4):
//   mma_ss_m64nNk16<N, FORMAT>(d, a, b, accumulate):  D = A * B + (accumulate ? D : 0), with
//     A  64 x 16 and B 16 x N in shared memory, read through the descriptors a and b
//        (make_descriptor), both K-major: each row m of A and each column n of B has its k
//        values at consecutive addresses, in the 128-byte swizzle below;
//     D  64 x N float32 in registers: lane (g = lane / 4, t = lane % 4) of warp w holds, for j < N/8,
//            d[4j+0] = D[16w+g][8j+2t]    d[4j+1] = D[16w+g][8j+2t+1]
//            d[4j+2] = D[16w+g+8][8j+2t]  d[4j+3] = D[16w+g+8][8j+2t+1]
//     (the accumulator layout of every wgmma with .f32 accumulators, as in wgmma_tf32.cuh).
//   It is asynchronous: issue products, commit() them as a group, wait<PENDING>() until at most
//   PENDING groups are in flight. Until then D must not be read or written, nor A's or B's
//   shared memory overwritten. fence() must come before the first product that reads D after
//   ordinary register writes to it; fence_shared_for_tensor_cores() and a barrier between
//   ordinary writes of the operands' shared memory and the products that read it.
//
// Conversions: to_float<FORMAT>(bits) (exact) and pack_rounded<FORMAT>(low, high), two floats
// rounded to nearest (ties to even) and packed low | high << 16 (cvt.rn.{bf16,f16}x2.f32).
//
// The shared-memory layout (128-byte swizzle, K-major): rows of 64 values (128 bytes, k =
// 0..63), 8 rows making a 1024-byte atom aligned to 1024 bytes; the 16-byte chunk c (k = 8c..8c+7)
// of row r sits at chunk position c ^ (r % 8). A product's descriptor starts at its first k in
// row 0 (32 bytes per k step of 16) and steps ATOM_BYTES from one atom (8 rows) to the next.
//
// The model's arithmetic (under the CPU emulator, where inline PTX cannot run): operands are
// read exactly (every bf16 and fp16 value is a float); the 16 products of a k step are exact,
// and their sum with the accumulator is rounded toward zero once, as wgmma_tf32.cuh models the
// TF32 products. The hardware's adder keeps another number of bits, so GPU results may differ
// from the model's by a few float32 roundings of the magnitudes summed
// (tests/emulator/test_wgmma_f16.py measures it on the GPU). The accumulation is float32: a
// 16-bit accumulator would lose what the tests' crafted sums keep.
#ifndef AUTOCONV_WGMMA_F16_CUH  // a guard, not #pragma once: inlined into a source, that one warns
#define AUTOCONV_WGMMA_F16_CUH

namespace wgmma_f16 {

//! How the tensor cores read the 16-bit operands: bfloat16 (8 exponent bits, 7 mantissa bits)
//! or IEEE half (5 and 10).
constexpr int BF16 = 0;
constexpr int F16 = 1;

//! Bytes of an 8-row atom of an operand tile, and the alignment of each atom.
constexpr unsigned ATOM_BYTES = 1024;
//! 16-bit values of k per row of an atom (its 128 bytes), and per product (one k step).
constexpr int ATOM_K = 64;
constexpr int STEP_K = 16;

//! Position of value k (0..63) of row `row` within an atom row: its 16-byte chunk is swizzled.
__host__ __device__ constexpr int swizzled_k(int row, int k) { return ((k / 8) ^ (row % 8)) * 8 + k % 8; }

//! The descriptor of an operand tile for one product: `address` is the shared-window address
//! of its first k in row 0 (shared_address), atoms ATOM_BYTES apart, the 128-byte swizzle.
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

//! wgmma.fence: orders earlier register writes of D before the products issued after it.
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

//! Makes this thread's ordinary writes to shared memory visible to the tensor cores' reads
//! (the async proxy); then a barrier publishes them to the block.
__device__ __forceinline__ void fence_shared_for_tensor_cores()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
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

//! The float value of a 16-bit operand (exact): bfloat16 is the high half of a float32; an IEEE
//! half is converted by the hardware.
template <int FORMAT>
__device__ __forceinline__ float to_float(unsigned short bits)
{
    if constexpr (FORMAT == BF16) {
        return __uint_as_float(static_cast<unsigned>(bits) << 16);
    } else {
        float value;
        asm("cvt.f32.f16 %0, %1;\n" : "=f"(value) : "h"(bits));
        return value;
    }
}

//! Two floats rounded to nearest (ties to even) in FORMAT, packed as one 32-bit word: `low` in
//! bits 0-15 (the lower address), `high` in bits 16-31. (cvt's first source goes to the upper half.)
template <int FORMAT>
__device__ __forceinline__ unsigned pack_rounded(float low, float high)
{
    unsigned packed;
    if constexpr (FORMAT == BF16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(packed) : "f"(high), "f"(low));
    return packed;
}

// One asm statement per width N (an asm statement names each register it uses), for the
// operand types TYPES ("bf16.bf16" or "f16.f16"): D's N/2 registers, then A's and B's
// descriptors, the accumulate predicate, scale-a 1, scale-b 1 (no negation), and transpose-a 0,
// transpose-b 0 (both K-major).
#define AUTOCONV_WGMMA_SS_M64N16K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %10, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n16k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7 }, " \
        "%8, %9, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N32K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %18, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n32k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15 }, " \
        "%16, %17, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N64K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %34, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31 }, " \
        "%32, %33, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N104K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %54, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n104k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51 }, " \
        "%52, %53, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N128K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %66, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n128k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63 }, " \
        "%64, %65, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N192K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %98, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n192k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95 }, " \
        "%96, %97, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N208K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %106, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n208k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
        "%96, %97, %98, %99, %100, %101, %102, %103 }, " \
        "%104, %105, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N224K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %114, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n224k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111 }, " \
        "%112, %113, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

#define AUTOCONV_WGMMA_SS_M64N256K16(TYPES) \
    asm volatile( \
        "{\n" \
        ".reg .pred accumulate;\n" \
        "setp.ne.b32 accumulate, %130, 0;\n" \
        "wgmma.mma_async.sync.aligned.m64n256k16.f32." TYPES " " \
        "{ %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127 }, " \
        "%128, %129, accumulate, 1, 1, 0, 0;\n" \
        "}\n" \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
        : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)))

//! D (64 x N) = A (64 x 16) * B (16 x N) + (accumulate ? D : 0), A and B in shared memory, read as
//! FORMAT; N (16, 32, 64, 104, 128, 192, 208, 224 or 256) chosen at compile time (a template's
//! warpgroup tile, say).
template <int N, int FORMAT>
__device__ __forceinline__ void mma_ss_m64nNk16(float (&d)[N / 2], unsigned long long a, unsigned long long b,
                                                bool accumulate)
{
    static_assert(N == 16 || N == 32 || N == 64 || N == 104 || N == 128 || N == 192 || N == 208 ||
                  N == 224 || N == 256,
                  "mma_ss_m64nNk16 is written out for N = 16, 32, 64, 104, 128, 192, 208, 224, 256");
    static_assert(FORMAT == BF16 || FORMAT == F16, "FORMAT is BF16 or F16");
    if constexpr (N == 16 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N16K16("bf16.bf16");
    else if constexpr (N == 16 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N16K16("f16.f16");
    else if constexpr (N == 32 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N32K16("bf16.bf16");
    else if constexpr (N == 32 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N32K16("f16.f16");
    else if constexpr (N == 64 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N64K16("bf16.bf16");
    else if constexpr (N == 64 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N64K16("f16.f16");
    else if constexpr (N == 104 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N104K16("bf16.bf16");
    else if constexpr (N == 128 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N128K16("bf16.bf16");
    else if constexpr (N == 104 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N104K16("f16.f16");
    else if constexpr (N == 128 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N128K16("f16.f16");
    else if constexpr (N == 192 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N192K16("bf16.bf16");
    else if constexpr (N == 192 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N192K16("f16.f16");
    else if constexpr (N == 208 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N208K16("bf16.bf16");
    else if constexpr (N == 224 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N224K16("bf16.bf16");
    else if constexpr (N == 208 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N208K16("f16.f16");
    else if constexpr (N == 224 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N224K16("f16.f16");
    else if constexpr (N == 256 && FORMAT == BF16)
        AUTOCONV_WGMMA_SS_M64N256K16("bf16.bf16");
    else if constexpr (N == 256 && FORMAT == F16)
        AUTOCONV_WGMMA_SS_M64N256K16("f16.f16");
}

#undef AUTOCONV_WGMMA_SS_M64N16K16
#undef AUTOCONV_WGMMA_SS_M64N32K16
#undef AUTOCONV_WGMMA_SS_M64N64K16
#undef AUTOCONV_WGMMA_SS_M64N104K16
#undef AUTOCONV_WGMMA_SS_M64N128K16
#undef AUTOCONV_WGMMA_SS_M64N192K16
#undef AUTOCONV_WGMMA_SS_M64N208K16
#undef AUTOCONV_WGMMA_SS_M64N224K16
#undef AUTOCONV_WGMMA_SS_M64N256K16

#else  // the CPU emulator's model

namespace emulation {

//! One issued product, as far as the issuing lane is concerned: the descriptors of A and B,
//! how to read them, and the lane's accumulator fragment it will update.
struct Product {
    float* d;
    int n;
    unsigned long long a, b;
    bool accumulate;
    int format;
};

//! The in-flight products of one CUDA thread: the open group, then committed groups, oldest
//! first; and the block they belong to (a block runs on one OS thread, fibers per thread).
struct ThreadQueue {
    std::vector<Product> open;
    std::vector<std::vector<Product>> committed;
    uint3 block;
};

inline thread_local unsigned long long arrivals[32];  // per warp: a multiple of 32 after each whole-warp product
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

//! The float value of 16-bit operand bits: bfloat16 is the high half of a float; IEEE half has
//! 5 exponent bits (bias 15) and 10 mantissa bits, subnormals below 2^-14.
inline float operand_value(unsigned short bits, int format)
{
    if (format == BF16) {
        const unsigned wide = static_cast<unsigned>(bits) << 16;
        float value;
        std::memcpy(&value, &wide, sizeof(value));
        return value;
    }
    const float sign = bits & 0x8000u ? -1.0f : 1.0f;
    const int exponent = bits >> 10 & 0x1F;
    const int mantissa = bits & 0x3FF;
    if (exponent == 0x1F)
        return mantissa ? NAN : sign * INFINITY;
    if (exponent == 0)
        return sign * std::ldexp(static_cast<float>(mantissa), -24);
    return sign * std::ldexp(static_cast<float>(1024 + mantissa), exponent - 25);
}

//! Element (k, row) of an operand tile, read from shared memory through its descriptor (the
//! 128-byte swizzle): row is m for A, n for B.
inline float element(unsigned long long descriptor, int k, int row, int format)
{
    const unsigned start = static_cast<unsigned>(descriptor & 0x3FFFu) << 4;
    const unsigned stride = static_cast<unsigned>(descriptor >> 32 & 0x3FFFu) << 4;
    const unsigned swizzle = static_cast<unsigned>(descriptor >> 62);
    const unsigned base_offset = static_cast<unsigned>(descriptor >> 49 & 7u);
    if (swizzle != 1 || base_offset != 0)
        autoconv_emu::fault("wgmma: only the 128-byte swizzle with base offset 0 is modelled (descriptor "
                            "0x%016llx has swizzle mode %u, base offset %u)", descriptor, swizzle, base_offset);
    const unsigned logical = start + static_cast<unsigned>(row / 8) * stride + static_cast<unsigned>(row % 8) * 128u +
                             static_cast<unsigned>(k) * 2u;
    const unsigned physical = logical ^ ((logical >> 7 & 7u) << 4);
    if (physical + 2 > autoconv_emu::shared_bytes())
        autoconv_emu::fault("wgmma: operand element (k %d, row %d) at shared address %u lies past the block's %zu "
                            "bytes of shared memory (descriptor 0x%016llx)", k, row, physical,
                            autoconv_emu::shared_bytes(), descriptor);
    unsigned short bits;
    std::memcpy(&bits, smem + physical, sizeof(bits));
    return operand_value(bits, format);
}

//! Applies a product to the issuing lane's accumulator fragment.
inline void apply(const Product& p)
{
    const int lane = static_cast<int>(linear_thread() % 32);
    const int t = lane % 4;
    const int row = static_cast<int>(linear_thread() / 32 % 4) * 16 + lane / 4;
    float a_rows[2][STEP_K];  // this lane's rows 16w+g and 16w+g+8 of A
    for (int k = 0; k < STEP_K; ++k) {
        a_rows[0][k] = element(p.a, k, row, p.format);
        a_rows[1][k] = element(p.a, k, row + 8, p.format);
    }
    for (int j = 0; j < p.n / 8; ++j) {
        for (int e = 0; e < 4; ++e) {
            const int column = 8 * j + 2 * t + e % 2;
            double sum = p.accumulate ? p.d[4 * j + e] : 0.0;
            for (int k = 0; k < STEP_K; ++k)  // a product of two 16-bit values is exact in double
                sum += static_cast<double>(a_rows[e / 2][k]) * element(p.b, k, column, p.format);
            p.d[4 * j + e] = autoconv_emu::round_toward_zero(sum);
        }
    }
}

//! Issues a product: every lane of the warp must take part; A and B are read when the product
//! runs (at wait()).
inline void issue(float* d, int n, unsigned long long a, unsigned long long b, bool accumulate, int format)
{
    const unsigned thread = linear_thread();
    const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
    if (threads % 128 != 0)
        autoconv_emu::fault("wgmma: the block has %u threads, not whole warpgroups of 128", threads);
    const unsigned warp = thread / 32;
    arrivals[warp] += 1;
    autoconv_emu::warp_barrier();
    if (arrivals[warp] % 32 != 0)
        autoconv_emu::fault("wgmma.mma_async: only %llu of the 32 lanes of warp %u execute it (every lane of "
                            "the warpgroup must)", arrivals[warp] % 32, warp);
    autoconv_emu::warp_barrier();
    queue().open.push_back(Product{d, n, a, b, accumulate, format});
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

template <int FORMAT>
inline float to_float(unsigned short bits) { return emulation::operand_value(bits, FORMAT); }

namespace emulation {

//! `value` rounded to nearest, ties to even, as FORMAT's bits (what cvt.rn does): NaN stays a
//! (quiet) NaN, beyond the largest finite value it is infinite, fp16 keeps subnormals.
inline unsigned short rounded_bits(float value, int format)
{
    const unsigned bits = __float_as_uint(value);
    const unsigned short sign = static_cast<unsigned short>(bits >> 16 & 0x8000u);
    if (std::isnan(value))
        return static_cast<unsigned short>(sign | (format == BF16 ? 0x7FC0u : 0x7E00u));
    if (format == BF16)  // add half an ulp of the high half, plus one if its last bit is odd
        return static_cast<unsigned short>((bits + 0x7FFFu + (bits >> 16 & 1u)) >> 16);
    const double magnitude = std::fabs(static_cast<double>(value));
    if (magnitude >= 65520.0)  // 65504 + half an ulp (32) and above: infinity
        return static_cast<unsigned short>(sign | 0x7C00u);
    if (magnitude < std::ldexp(1.0, -14))  // subnormal (or zero): units of 2^-24
        return static_cast<unsigned short>(sign | static_cast<unsigned>(std::nearbyint(std::ldexp(magnitude, 24))));
    int exponent;
    std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
    // 11 significant bits; a rounding up to 2048 carries into the exponent by the addition below
    const unsigned significand = static_cast<unsigned>(std::nearbyint(std::ldexp(magnitude, 11 - exponent)));
    return static_cast<unsigned short>(sign | (static_cast<unsigned>(exponent + 14) << 10) + (significand - 1024u));
}

}  // namespace emulation

template <int FORMAT>
inline unsigned pack_rounded(float low, float high)
{
    return static_cast<unsigned>(emulation::rounded_bits(low, FORMAT)) |
           static_cast<unsigned>(emulation::rounded_bits(high, FORMAT)) << 16;
}

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

template <int N, int FORMAT>
inline void mma_ss_m64nNk16(float (&d)[N / 2], unsigned long long a, unsigned long long b, bool accumulate)
{
    static_assert(N == 16 || N == 32 || N == 64 || N == 104 || N == 128 || N == 192 || N == 208 ||
                  N == 224 || N == 256,
                  "mma_ss_m64nNk16 is written out for N = 16, 32, 64, 104, 128, 192, 208, 224, 256");
    static_assert(FORMAT == BF16 || FORMAT == F16, "FORMAT is BF16 or F16");
    emulation::issue(d, N, a, b, accumulate, FORMAT);
}

#endif

}  // namespace wgmma_f16

#endif  // AUTOCONV_WGMMA_F16_CUH
