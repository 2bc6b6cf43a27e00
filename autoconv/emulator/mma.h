// autoconv CUDA emulation of <mma.h>: WMMA, the warp-level tensor-core matrix API, for TF32.
//
// A template's `#include <mma.h>` finds this file (the emulator compiles with -I on this
// folder). Modelled: nvcuda::wmma fragments of the m16n16k8 shape with precision::tf32
// operands and float accumulators, fill_fragment, load_matrix_sync, store_matrix_sync,
// mma_sync and __float_to_tf32. Other shapes and element types fail to compile, by name.
//
// Model:
//   - CUDA leaves unspecified which elements of a tile each lane holds, and code may only
//     treat x[0..num_elements) element-wise. Here every lane holds the whole tile, row-major
//     (x[r * cols + c]); element-wise code means the same, and the union over the warp is
//     the tile, as CUDA requires.
//   - load_matrix_sync, store_matrix_sync and mma_sync first wait for every live lane of the
//     warp (a warp-level barrier), as CUDA says they do; then each lane does the whole
//     operation on its own copy. Pointers must be 32-byte aligned and ldm a multiple of 4
//     floats, as on the GPU; anything else is a kernel fault.
//   - Arithmetic as the tensor cores do it, to float32 accuracy: operands are read as TF32
//     (the low 13 mantissa bits ignored); products are exact; each mma_sync adds its K
//     products to the accumulator and rounds the sum toward zero once. (The GPU's adder may
//     truncate a little more often; accuracy on the GPU itself is checked on the GPU.)
//     __float_to_tf32 rounds to nearest, ties away from zero, like cvt.rna.tf32.f32.
#pragma once

#include "cuda_emulation.h"

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };

namespace detail {

template <class Use, int M, int N, int K>
struct Tile;
template <int M, int N, int K>
struct Tile<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K>
struct Tile<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K>
struct Tile<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <class Use, class T, class Layout>
struct Modelled {
    static constexpr bool operand = !std::is_same_v<Use, accumulator> && std::is_same_v<T, precision::tf32> &&
                                    (std::is_same_v<Layout, row_major> || std::is_same_v<Layout, col_major>);
    static constexpr bool result = std::is_same_v<Use, accumulator> && std::is_same_v<T, float> &&
                                   std::is_same_v<Layout, void>;
    static constexpr bool value = operand || result;
};

inline void check_memory(const char* operation, const void* pointer, unsigned ldm) {
    if (reinterpret_cast<std::uintptr_t>(pointer) % 32 != 0)
        autoconv_emu::fault("wmma::%s: pointer %p is not 256-bit (32-byte) aligned", operation, pointer);
    if (ldm % 4 != 0)
        autoconv_emu::fault("wmma::%s: ldm = %u is not a multiple of 4 floats (16 bytes)", operation, ldm);
}

}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
    static_assert(M == 16 && N == 16 && K == 8,
                  "autoconv emulator: wmma (shapes other than m16n16k8, the TF32 one) is not modelled");
    static_assert(detail::Modelled<Use, T, Layout>::value,
                  "autoconv emulator: wmma (fragments other than precision::tf32 matrix_a and matrix_b with "
                  "row_major or col_major layout, and float accumulators) is not modelled");

public:
    using element_type = float;
    using storage_element_type = float;
    static constexpr int rows = detail::Tile<Use, M, N, K>::rows;
    static constexpr int cols = detail::Tile<Use, M, N, K>::cols;
    //! The whole tile: every lane holds all of it (see the top of this file).
    static constexpr int num_elements = rows * cols;
    element_type x[num_elements];

    float& at(int r, int c) { return x[r * cols + c]; }
    float at(int r, int c) const { return x[r * cols + c]; }
};

//! Rounds to TF32 (10 mantissa bits), to nearest with ties away from zero.
inline float __float_to_tf32(float value) { return autoconv_emu::tf32_round(value); }

template <class Use, int M, int N, int K, class T, class Layout, class Value>
inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& frag, const Value& value) {
    for (float& element : frag.x)
        element = static_cast<float>(value);
}

//! Loads a matrix_a or matrix_b tile; element (r, c) is at pointer[r*ldm + c] (row_major)
//! or pointer[c*ldm + r] (col_major).
template <class Use, int M, int N, int K, class T, class Layout>
inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& frag, const float* pointer, unsigned ldm) {
    static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load takes a layout_t argument");
    autoconv_emu::warp_barrier();
    detail::check_memory("load_matrix_sync", pointer, ldm);
    for (int r = 0; r < frag.rows; ++r)
        for (int c = 0; c < frag.cols; ++c)
            frag.at(r, c) = std::is_same_v<Layout, row_major> ? pointer[r * ldm + c] : pointer[c * ldm + r];
}

template <int M, int N, int K>
inline void load_matrix_sync(fragment<accumulator, M, N, K, float>& frag, const float* pointer, unsigned ldm,
                             layout_t layout) {
    autoconv_emu::warp_barrier();
    detail::check_memory("load_matrix_sync", pointer, ldm);
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c)
            frag.at(r, c) = layout == mem_row_major ? pointer[r * ldm + c] : pointer[c * ldm + r];
}

template <int M, int N, int K>
inline void store_matrix_sync(float* pointer, const fragment<accumulator, M, N, K, float>& frag, unsigned ldm,
                              layout_t layout) {
    autoconv_emu::warp_barrier();
    detail::check_memory("store_matrix_sync", pointer, ldm);
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c)
            (layout == mem_row_major ? pointer[r * ldm + c] : pointer[c * ldm + r]) = frag.at(r, c);
}

//! d = a * b + c (d may be c).
template <int M, int N, int K, class LayoutA, class LayoutB>
inline void mma_sync(fragment<accumulator, M, N, K, float>& d,
                     const fragment<matrix_a, M, N, K, precision::tf32, LayoutA>& a,
                     const fragment<matrix_b, M, N, K, precision::tf32, LayoutB>& b,
                     const fragment<accumulator, M, N, K, float>& c) {
    autoconv_emu::warp_barrier();
    float result[M * N];
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            double sum = c.at(i, j);
            for (int k = 0; k < K; ++k)  // each product of two TF32 values is exact in double
                sum += static_cast<double>(autoconv_emu::tf32_operand(a.at(i, k))) *
                       autoconv_emu::tf32_operand(b.at(k, j));
            result[i * N + j] = autoconv_emu::round_toward_zero(sum);
        }
    }
    std::memcpy(d.x, result, sizeof(result));
}

}  // namespace wmma
}  // namespace nvcuda
