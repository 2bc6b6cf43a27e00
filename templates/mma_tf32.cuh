// mma_tf32.cuh: one TF32 tensor-core product of a warp (mma.sync m16n8k8) and TF32 rounding.
//
// Templates pull this file in with a Jinja include (implicit_gemm_mma.cu.j2), so a rendered
// source is self-contained: NVRTC, nvcc and the CPU emulator compile it with no include path,
// and the plan's source hash covers it. Jinja reads it as a template: the character pairs that
// open a Jinja tag (a brace followed by %, { or #) must not occur in it.
//
// On the GPU each function is one PTX instruction (inline asm). Under the CPU emulator
// (cuda_emulation.h defines AUTOCONV_EMULATOR), where inline PTX cannot run, each has a
// model with the instruction's semantics:
//   round_to_tf32  cvt.rna.tf32.f32: to TF32 (10 mantissa bits), to nearest, ties away from zero.
//   mma_m16n8k8    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32: d = a * b + c for a
//                  16x8 tile a, an 8x8 tile b and a 16x8 float32 c, all 32 lanes of the warp
//                  taking part, each holding its fragment of every matrix.
//
// Fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32 and .f32), for the lane
// with group g = lane / 4 and t = lane % 4:
//   A, 16x8, row-major:  a[0] = A[g][t]   a[1] = A[g+8][t]   a[2] = A[g][t+4]   a[3] = A[g+8][t+4]
//   B, 8x8, col-major:   b[0] = B[t][g]   b[1] = B[t+4][g]
//   C and D, 16x8:       c[0] = C[g][2t]  c[1] = C[g][2t+1]  c[2] = C[g+8][2t]  c[3] = C[g+8][2t+1]
// The model assembles the three matrices from the fragments of all 32 lanes by exactly this
// table and hands each lane the elements of D the table gives it, so a kernel that loads its
// fragments in any other order computes a different product in the emulator, as on the GPU.
//
// Arithmetic of the model, as mma.h's WMMA model: operands are read as TF32 (the low 13 bits
// of each float ignored, as the tensor cores do; round them with round_to_tf32 first to get
// round-to-nearest); the 8 products are exact; their sum with c is rounded toward zero once.
// The tensor cores' float32 accumulation truncates: a long chain of MMAs into one accumulator
// loses accuracy (a bias that grows with the chain); implicit_gemm_mma.cu.j2 says what it does.
#ifndef AUTOCONV_MMA_TF32_CUH  // a guard, not #pragma once: inlined into a source, that one warns
#define AUTOCONV_MMA_TF32_CUH

namespace mma_tf32 {

#ifndef AUTOCONV_EMULATOR

__device__ __forceinline__ float round_to_tf32(float value)
{
    unsigned bits;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(value));
    return __uint_as_float(bits);
}

//! d = a * b + c over the warp (see the fragment layout above); d may be c.
__device__ __forceinline__ void mma_m16n8k8(float (&d)[4], const float (&a)[4], const float (&b)[2],
                                            const float (&c)[4])
{
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
        "{ %0, %1, %2, %3 }, { %4, %5, %6, %7 }, { %8, %9 }, { %10, %11, %12, %13 };\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(__float_as_uint(a[0])), "r"(__float_as_uint(a[1])), "r"(__float_as_uint(a[2])),
          "r"(__float_as_uint(a[3])), "r"(__float_as_uint(b[0])), "r"(__float_as_uint(b[1])),
          "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

#else  // the CPU emulator's model

namespace emulation {

//! What the lanes of one warp publish for an MMA: their fragments, and a count of arrivals.
struct WarpExchange {
    float a[32][4];
    float b[32][2];
    float c[32][4];
    //! Lanes that published, over all MMAs of this warp slot: a multiple of 32 after every
    //! MMA that the whole warp took part in.
    unsigned long long arrivals;
};

//! One exchange per warp of the block this OS thread runs (a block runs on one OS thread).
inline thread_local WarpExchange exchange[32];

}  // namespace emulation

// The TF32 arithmetic (rounding, operand truncation, the adder's rounding) is the emulator's
// own (cuda_emulation.h), shared with its model of <mma.h>.
inline float round_to_tf32(float value) { return autoconv_emu::tf32_round(value); }

inline void mma_m16n8k8(float (&d)[4], const float (&a)[4], const float (&b)[2], const float (&c)[4])
{
    const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned warp = thread / 32, lane = thread % 32;
    emulation::WarpExchange& x = emulation::exchange[warp];
    // 1. publish this lane's fragments
    for (int i = 0; i < 4; ++i) {
        x.a[lane][i] = a[i];
        x.c[lane][i] = c[i];
    }
    x.b[lane][0] = b[0];
    x.b[lane][1] = b[1];
    x.arrivals += 1;
    autoconv_emu::warp_barrier();
    // 2. every lane has published (none publishes again before the barrier below)
    if (x.arrivals % 32 != 0)
        autoconv_emu::fault("mma.sync.m16n8k8: only %llu of the 32 lanes of warp %u execute it (every lane of the "
                            "warp must: no lane may have returned or be in another branch)",
                            x.arrivals % 32, warp);
    float A[16][8], B[8][8], C[16][8];
    for (int l = 0; l < 32; ++l) {
        const int g = l / 4, t = l % 4;
        A[g][t] = x.a[l][0];
        A[g + 8][t] = x.a[l][1];
        A[g][t + 4] = x.a[l][2];
        A[g + 8][t + 4] = x.a[l][3];
        B[t][g] = x.b[l][0];
        B[t + 4][g] = x.b[l][1];
        C[g][2 * t] = x.c[l][0];
        C[g][2 * t + 1] = x.c[l][1];
        C[g + 8][2 * t] = x.c[l][2];
        C[g + 8][2 * t + 1] = x.c[l][3];
    }
    const int g = static_cast<int>(lane) / 4, t = static_cast<int>(lane) % 4;
    const int rows[4] = {g, g, g + 8, g + 8};
    const int cols[4] = {2 * t, 2 * t + 1, 2 * t, 2 * t + 1};
    float result[4];
    for (int i = 0; i < 4; ++i) {
        double sum = C[rows[i]][cols[i]];
        for (int k = 0; k < 8; ++k)  // a product of two TF32 values is exact in double
            sum += static_cast<double>(autoconv_emu::tf32_operand(A[rows[i]][k])) *
                   autoconv_emu::tf32_operand(B[k][cols[i]]);
        result[i] = autoconv_emu::round_toward_zero(sum);
    }
    // 3. no lane may publish its next MMA's fragments before every lane has read these
    autoconv_emu::warp_barrier();
    for (int i = 0; i < 4; ++i)
        d[i] = result[i];
}

#endif

}  // namespace mma_tf32

#endif  // AUTOCONV_MMA_TF32_CUH
