// tma_conv.cu: a prototype (results/h100/bf16_tma, not a template of autoconv yet) of the 16-bit
// implicit GEMM fed by Hopper's tensor memory accelerator (TMA) instead of per-thread cp.async.
//
// What it computes: y = conv2d(x, w) for bf16 x (NHWC), w (KRSC), float32 sums, y bf16 (NHWC),
// as implicit_gemm_wgmma_f16 does: m = output pixel (img, p, q), n = filter, k = (r, s, c).
//
// How. One producer warpgroup and CONSUMERS consumer warpgroups (warp specialisation):
//   - the producer's first thread issues, per K tile, two TMA copies into a stage of shared
//     memory: A's BM x 64 box through an im2col tensor map of x (the hardware walks BM output
//     pixels from the tile's first one, adds the filter tap (r, s) as the im2col offset, and
//     zero-fills what falls in the padding or past the last image), and B's BN x 64 box through a
//     tiled tensor map of w viewed as [K][R*S][C] (zero past K or C). Both land in the 128-byte
//     swizzle that wgmma reads (box rows of 128 bytes, stages 1024-byte aligned).
//   - mbarriers hand the stages over: full[stage] completes when the copies' bytes landed
//     (expect_tx), empty[stage] when every consumer warp finished the products that read it.
//   - consumer warpgroup i computes rows 64i..64i+63 of the BM x BN tile with wgmma m64nBNk16,
//     keeping one product group in flight while it waits for the next stage.
//   - persistent: a grid of at most one block per SM loops over the output tiles, the producer
//     running ahead into the next tile while the consumers store the last (no setmaxnreg: the
//     configurations measured fit the launch's registers; a CTA's setmaxnreg.inc can only take
//     what its own producer released, or it waits forever, which device call 2 met).
//   - SPLIT_K > 1: the split-K slices of the K tiles each write float32 sums to the workspace;
//     reduce_slices adds them in slice order and rounds once.
// The K loop runs over taps (r, s) and, within a tap, blocks of 64 channels (C_BLOCKS per tap):
// A channels past C are zero (the tensor map's bounds), so any C % 8 == 0 works.
//
// Compile-time constants (-D): N_ C_ H_ W_ K_ R_ S_ P_ Q_ STRIDE_H STRIDE_W PAD_TOP PAD_LEFT
// DIL_H DIL_W, and the tiling: BN CONSUMERS STAGES SPLIT_K MIN_BLOCKS.
#include "wgmma_f16.cuh"

constexpr int BM = 64 * CONSUMERS, BK = 64;
constexpr int WARPGROUP = 128, WARP = 32;
constexpr int THREADS = WARPGROUP * (CONSUMERS + 1);
constexpr int GEMM_M = N_ * P_ * Q_, GEMM_N = K_;
constexpr int C_BLOCKS = (C_ + BK - 1) / BK;
constexpr int K_TILES = R_ * S_ * C_BLOCKS;
constexpr int TILES_PER_SPLIT = (K_TILES + SPLIT_K - 1) / SPLIT_K;
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
constexpr int TILES_M = (GEMM_M + BM - 1) / BM, TILES_N = (GEMM_N + BN - 1) / BN;
constexpr int TILES = TILES_M * TILES_N * SPLIT_K;   // the persistent grid's work (gridDim.x blocks)

//! CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h's, without including cuda.h).
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

constexpr int C_PITCH = BN + 8;   // staged output row, in values (16 bytes of padding: fewer bank conflicts)
static_assert(SPLIT_K > 1 || GEMM_N % 8 == 0, "the staged epilogue stores 8 outputs (16 bytes) at a time");

struct Shared {
    unsigned char A[STAGES][A_BYTES];   // each a whole number of 1024-byte swizzle atoms
    unsigned char B[STAGES][B_BYTES];
    unsigned long long full[STAGES];    // the stage's copies landed
    unsigned long long empty[STAGES];   // every consumer warp is done with the stage
#if SPLIT_K == 1
    unsigned short C[BM * C_PITCH];     // the epilogue's staging: a consumer's 64 rows each
#endif
};
constexpr int SMEM_BYTES = sizeof(Shared) + 1024;   // room to align the start to 1024 bytes

__device__ __forceinline__ unsigned smem_address(const void* p)
{
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void barrier_init(unsigned long long* barrier, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(barrier)), "r"(count) : "memory");
}

__device__ __forceinline__ void barrier_arrive(unsigned long long* barrier)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(barrier)) : "memory");
}

//! The producer's arrival, announcing the bytes the stage's copies will bring.
__device__ __forceinline__ void barrier_expect_bytes(unsigned long long* barrier, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_address(barrier)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void barrier_wait(unsigned long long* barrier, unsigned parity)
{
    asm volatile("{\n .reg .pred done;\n WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 " @!done bra WAIT_%=;\n}\n" ::"r"(smem_address(barrier)),
                 "r"(parity)
                 : "memory");
}

//! A's box: BM pixels from base position (n, h, w) of x's im2col map, channels c..c+63, at
//! filter offset (offset_w, offset_h).
__device__ __forceinline__ void copy_a(void* destination, const TensorMap* map, unsigned long long* barrier, int c,
                                       int w, int h, int n, unsigned short offset_w, unsigned short offset_h)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(smem_address(destination)),
                 "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(smem_address(barrier)), "h"(offset_w), "h"(offset_h)
                 : "memory");
}

//! B's box: filters k..k+BN-1, tap `tap`, channels c..c+63 of w's tiled map [K][R*S][C].
__device__ __forceinline__ void copy_b(void* destination, const TensorMap* map, unsigned long long* barrier, int c,
                                       int tap, int k)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_address(destination)),
                 "l"(map), "r"(c), "r"(tap), "r"(k), "r"(smem_address(barrier))
                 : "memory");
}

//! A barrier of one consumer warpgroup's 128 threads (named barrier 1 + warpgroup; 0 is __syncthreads).
__device__ __forceinline__ void consumer_barrier(int warpgroup)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + warpgroup), "n"(WARPGROUP) : "memory");
}

#if SPLIT_K > 1
using out_t = float;
#else
using out_t = unsigned short;
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
conv_tma(const __grid_constant__ TensorMap x_map, const __grid_constant__ TensorMap w_map, out_t* __restrict__ out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned misalignment = smem_address(smem) % 1024;
    Shared& shared = *reinterpret_cast<Shared*>(smem + (misalignment == 0 ? 0 : 1024 - misalignment));

    const int tid = threadIdx.x, warpgroup = tid / WARPGROUP;
    if (tid == 0) {
        for (int stage = 0; stage < STAGES; ++stage) {
            barrier_init(&shared.full[stage], 1);
            barrier_init(&shared.empty[stage], CONSUMERS * WARPGROUP / WARP);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    // Persistent: block b takes tiles b, b + gridDim.x, ... (n fastest, then m, then the split-K
    // slice), and the producer runs on into the next tile while the consumers store this one.
    // `iteration` counts the block's K tiles over all its tiles: stage iteration % STAGES, round
    // iteration / STAGES (the mbarriers' phase parity).
    if (warpgroup == CONSUMERS) {
        // ---- the producer ----
        if (tid != CONSUMERS * WARPGROUP)
            return;
        int iteration = 0;
        for (int tile = blockIdx.x; tile < TILES; tile += gridDim.x) {
            const int m_block = tile / TILES_N % TILES_M, slice = tile / (TILES_N * TILES_M);
            const int block_n0 = tile % TILES_N * BN;
            const int k_tile_begin = slice * TILES_PER_SPLIT;
            const int k_tiles = max(0, min(K_TILES - k_tile_begin, TILES_PER_SPLIT));
            // the base position of the tile's first pixel (the TMA walks on from it)
            const int image = m_block * BM / (P_ * Q_), pq = m_block * BM % (P_ * Q_);
            const int h0 = pq / Q_ * STRIDE_H - PAD_TOP, w0 = pq % Q_ * STRIDE_W - PAD_LEFT;
            for (int t = 0; t < k_tiles; ++t, ++iteration) {
                const int stage = iteration % STAGES;
                if (iteration >= STAGES)
                    barrier_wait(&shared.empty[stage], (iteration / STAGES - 1) & 1);
                barrier_expect_bytes(&shared.full[stage], A_BYTES + B_BYTES);
                const int k_tile = k_tile_begin + t;
                const int tap = k_tile / C_BLOCKS, c0 = k_tile % C_BLOCKS * BK;
                const int r = tap / S_, s = tap % S_;
                copy_a(shared.A[stage], &x_map, &shared.full[stage], c0, w0, h0, image,
                       static_cast<unsigned short>(s * DIL_W), static_cast<unsigned short>(r * DIL_H));
                copy_b(shared.B[stage], &w_map, &shared.full[stage], c0, tap, block_n0);
            }
        }
        return;
    }

    // ---- the consumers ----
    const int warp = tid % WARPGROUP / WARP, lane = tid % WARP;
    const int group = lane / 4, quad = lane % 4;
    constexpr int ACC = BN / 2;
    float acc[ACC];
    int iteration = 0;
    for (int tile = blockIdx.x; tile < TILES; tile += gridDim.x) {
        const int m_block = tile / TILES_N % TILES_M, slice = tile / (TILES_N * TILES_M);
        const int block_m0 = m_block * BM, block_n0 = tile % TILES_N * BN;
        const int k_tile_begin = slice * TILES_PER_SPLIT;
        const int k_tiles = max(0, min(K_TILES - k_tile_begin, TILES_PER_SPLIT));
#pragma unroll
        for (int i = 0; i < ACC; ++i)
            acc[i] = 0.0f;
        for (int t = 0; t < k_tiles; ++t, ++iteration) {
            const int stage = iteration % STAGES;
            barrier_wait(&shared.full[stage], (iteration / STAGES) & 1);
            const unsigned a_tile = smem_address(shared.A[stage]) + warpgroup * 64 * 128;
            const unsigned b_tile = smem_address(shared.B[stage]);
            wgmma_f16::fence();
#pragma unroll
            for (int step = 0; step < BK / wgmma_f16::STEP_K; ++step)
                wgmma_f16::mma_ss_m64nNk16<BN, wgmma_f16::BF16>(acc, wgmma_f16::make_descriptor(a_tile + step * 32),
                                                                wgmma_f16::make_descriptor(b_tile + step * 32), true);
            wgmma_f16::commit();
            wgmma_f16::wait<1>();   // the previous K tile's products are done: its stage goes back
            if (t > 0 && lane == 0)
                barrier_arrive(&shared.empty[(iteration - 1) % STAGES]);
        }
        wgmma_f16::wait<0>();
        wgmma_f16::fence_registers(acc);
        if (k_tiles > 0 && lane == 0)   // the tile's last stage goes back before the stores
            barrier_arrive(&shared.empty[(iteration - 1) % STAGES]);

        // ---- epilogue. acc[4j+e] is row 16*warp + g + 8*(e/2), column 8j + 2*quad + e%2 of the
        // warpgroup's 64 x BN tile. Split-K: float32 pairs straight to the slice. Otherwise the
        // rounded values go through the warpgroup's rows of the staging tile, then to y in 16-byte
        // stores along each row (consecutive threads, consecutive addresses). ----
#if SPLIT_K > 1
        float* const y = out + static_cast<long long>(slice) * GEMM_M * GEMM_N;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int m = block_m0 + warpgroup * 64 + 16 * warp + group + 8 * half;
            if (m >= GEMM_M)
                continue;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                const int n = block_n0 + 8 * j + 2 * quad;
                if (n < GEMM_N)
                    *reinterpret_cast<float2*>(y + static_cast<long long>(m) * GEMM_N + n) =
                        make_float2(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
            }
        }
#else
        unsigned short* const staged = shared.C + warpgroup * 64 * C_PITCH;
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = 16 * warp + group + 8 * half;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
                *reinterpret_cast<unsigned*>(&staged[row * C_PITCH + 8 * j + 2 * quad]) =
                    wgmma_f16::pack_rounded<wgmma_f16::BF16>(acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
        }
        consumer_barrier(warpgroup);   // the warpgroup's rows are staged
        constexpr int VECTORS_PER_ROW = BN / 8;
        for (int e = tid % WARPGROUP; e < 64 * VECTORS_PER_ROW; e += WARPGROUP) {
            const int row = e / VECTORS_PER_ROW, column = e % VECTORS_PER_ROW * 8;
            const int m = block_m0 + warpgroup * 64 + row, n = block_n0 + column;
            if (m < GEMM_M && n < GEMM_N)
                *reinterpret_cast<uint4*>(out + static_cast<long long>(m) * GEMM_N + n) =
                    *reinterpret_cast<const uint4*>(&staged[row * C_PITCH + column]);
        }
        consumer_barrier(warpgroup);   // read before the next tile stages over it
#endif
    }
}

#if SPLIT_K > 1
//! The slices' float32 sums added in slice order, rounded once to bf16; 4 outputs per thread.
extern "C" __global__ void __launch_bounds__(256) reduce_slices(const float* __restrict__ partials,
                                                                unsigned short* __restrict__ y)
{
    constexpr long long Y_SIZE = static_cast<long long>(GEMM_M) * GEMM_N;
    const long long first = (static_cast<long long>(blockIdx.x) * 256 + threadIdx.x) * 4;
    if (first >= Y_SIZE)
        return;
    float4 sums = reinterpret_cast<const float4*>(partials + first)[0];
#pragma unroll
    for (int split = 1; split < SPLIT_K; ++split) {
        const float4 part = reinterpret_cast<const float4*>(partials + split * Y_SIZE + first)[0];
        sums.x += part.x, sums.y += part.y, sums.z += part.z, sums.w += part.w;
    }
    reinterpret_cast<uint2*>(y + first)[0] =
        make_uint2(wgmma_f16::pack_rounded<wgmma_f16::BF16>(sums.x, sums.y),
                   wgmma_f16::pack_rounded<wgmma_f16::BF16>(sums.z, sums.w));
}
#endif
