"""What a TMA copy does to float32 values when its tensor map says TFLOAT32 (or FLOAT32).

The CUDA driver API lists CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 without saying whether the copy
rounds the values (and how) or only reinterprets them. A tf32 kernel fed by TMA needs to know:
if the copy rounds to nearest as cvt.rna.tf32.f32 does, the operands can go from the copy straight
to the tensor cores; if not, they must be rounded on the way (the tensor cores ignore the low 13
bits, i.e. truncate). One tiled copy of 8 rows x 32 floats, no swizzle, for each data type; the
landed bits are compared with the inputs and with rounding to nearest (ties away, ties even) and
toward zero. Run on the GPU: python3 results/h100/tf32_tma/tma_tf32_rounding.py
"""

import ctypes
import pathlib
import sys

import cupy
import numpy
from cupy.cuda import driver

TEMPLATES = pathlib.Path(__file__).resolve().parents[3] / "templates"
SOURCE = (TEMPLATES / "mbarrier.cuh").read_text() + (TEMPLATES / "tma.cuh").read_text() + r"""
extern "C" __global__ void copy_box(const __grid_constant__ tma::TensorMap map, unsigned* out)
{
    __shared__ alignas(1024) unsigned box[8 * 32];
    __shared__ unsigned long long full;
    if (threadIdx.x == 0) {
        mbarrier::init(&full, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        mbarrier::arrive_expect_bytes(&full, sizeof(box));
        tma::copy_tiled(box, &map, &full, 0, 0, 0);
    }
    mbarrier::wait(&full, 0);
    for (int i = threadIdx.x; i < 8 * 32; i += blockDim.x)
        out[i] = box[i];
}
"""

def rounded(bits, mode):
    bits = bits.astype(numpy.uint64)
    low = bits & numpy.uint64(0x1FFF)
    kept = bits & numpy.uint64(0xFFFFE000)
    if mode == "toward_zero":
        return kept.astype(numpy.uint32)
    if mode == "nearest_away":
        return ((bits + numpy.uint64(0x1000)) & numpy.uint64(0xFFFFE000)).astype(numpy.uint32)
    # nearest, ties to even
    odd = (bits >> numpy.uint64(13)) & numpy.uint64(1)
    up = (low > 0x1000) | ((low == 0x1000) & (odd == 1))
    return ((kept + numpy.where(up, numpy.uint64(0x2000), numpy.uint64(0))) & numpy.uint64(0xFFFFFFFF)).astype(numpy.uint32)


def main() -> int:
    rng = numpy.random.default_rng(7)
    values = rng.standard_normal(8 * 32).astype(numpy.float32)
    bits = values.view(numpy.uint32).copy()
    # ties: low 13 bits exactly half, on kept mantissas both even and odd; and some just above/below
    bits[:16] = (bits[:16] & 0xFFFFE000) | 0x1000
    bits[16:24] = (bits[16:24] & 0xFFFFE000) | 0x1001
    bits[24:32] = (bits[24:32] & 0xFFFFE000) | 0x0FFF
    source = cupy.asarray(bits)
    module = cupy.RawModule(code=SOURCE, options=("-std=c++17", "-arch=sm_90a"))
    function = module.get_function("copy_box").kernel   # the driver's function (RawKernel.kernel)
    cuda = ctypes.CDLL("libcuda.so.1")
    for name, data_type in (("FLOAT32", 7), ("TFLOAT32", 11)):
        storage = ctypes.create_string_buffer(128 + 64)
        target = ctypes.addressof(storage) + (-ctypes.addressof(storage)) % 64
        result = cuda.cuTensorMapEncodeTiled(
            ctypes.c_void_p(target), data_type, 3, ctypes.c_void_p(int(source.data.ptr)),
            (ctypes.c_uint64 * 3)(32, 8, 1), (ctypes.c_uint64 * 2)(128, 1024),
            (ctypes.c_uint32 * 3)(32, 8, 1), (ctypes.c_uint32 * 3)(1, 1, 1), 0, 0, 0, 0)
        if result != 0:
            print(f"{name}: cuTensorMapEncodeTiled failed, CUresult {result}")
            continue
        out = cupy.zeros(8 * 32, dtype=cupy.uint32)
        out_pointer = ctypes.c_uint64(int(out.data.ptr))
        params = (ctypes.c_void_p * 2)(target, ctypes.addressof(out_pointer))
        driver.launchKernel(function.ptr, 1, 1, 1, 128, 1, 1, 0, 0, ctypes.addressof(params), 0)
        cupy.cuda.Device().synchronize()
        landed = out.get()
        verdicts = {mode: int((landed == rounded(bits, mode)).sum())
                    for mode in ("toward_zero", "nearest_away", "nearest_even")}
        verdicts["unchanged"] = int((landed == bits).sum())
        print(f"{name}: of 256 values, equal to: {verdicts}")
        for i in (0, 1, 16, 24, 40):
            print(f"   in {bits[i]:08x} -> {landed[i]:08x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
