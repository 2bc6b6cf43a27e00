"""The cuDNN graph's tensors per precision and layout, the modes, and the tensor-core peaks
(no GPU: what the frontend is handed, not what it does with it)."""

from __future__ import annotations

import pytest

from autoconv.bench.peak import dense_tensor_peak_tflops
from autoconv.bench.results import CUDNN_MODES
from autoconv.problems.problem import parse_spec
from autoconv.runtime.cudnn import MODES_OF_PRECISION, CudnnGraph, CudnnUnsupported, graph_tensors


def test_nhwc_16bit_tensors_are_channels_last_with_logical_dims():
    problem = parse_spec("N=2,C=13,H=31,W=29,K=17,R=3,S=5,stride=2,pad=1,bias=1,precision=bf16,layout=NHWC")
    P, Q = problem.output_shape[2:]
    tensors = graph_tensors(problem)
    # Dims stay N,C,H,W (K,C,R,S; N,K,P,Q); strides are those of NHWC, KRSC and NPQK buffers.
    assert tensors["x"].dims == [2, 13, 31, 29] and tensors["x"].strides == [31 * 29 * 13, 1, 29 * 13, 13]
    assert tensors["w"].dims == [17, 13, 3, 5] and tensors["w"].strides == [3 * 5 * 13, 1, 5 * 13, 13]
    assert tensors["y"].dims == [2, 17, P, Q] and tensors["y"].strides == [P * Q * 17, 1, Q * 17, 17]
    assert tensors["bias"].dims == [1, 17, 1, 1]
    assert {t.dtype for t in tensors.values()} == {"bfloat16"}
    # A float32 output where the problem asks for one; the inputs stay 16-bit.
    wide = graph_tensors(problem.with_(out_dtype="float32", precision="fp16", dtype="float16"))
    assert wide["y"].dtype == "float32" and wide["x"].dtype == wide["w"].dtype == "float16"


def test_nchw_float32_tensors_are_dense():
    problem = parse_spec("N=3,C=8,H=17,W=23,K=16,R=3,S=5,stride=2,pad=1x2")
    tensors = graph_tensors(problem)
    assert tensors["x"].strides == [8 * 17 * 23, 17 * 23, 23, 1]
    assert tensors["w"].strides == [8 * 3 * 5, 3 * 5, 5, 1]
    assert "bias" not in tensors and tensors["y"].dtype == "float32"


def test_each_precision_has_its_cudnn_mode_first():
    for precision, modes in MODES_OF_PRECISION.items():
        assert modes[0] == CUDNN_MODES[precision]
    assert MODES_OF_PRECISION["bf16"] == ("bf16",) and MODES_OF_PRECISION["fp32"] == ("strict", "tf32")


@pytest.mark.parametrize("spec, mode", [("N=1,C=8,H=9,W=9,K=8,R=3,S=3,precision=bf16,layout=NHWC", "strict"),
                                        ("N=1,C=8,H=9,W=9,K=8,R=3,S=3,precision=bf16,layout=NHWC", "fp16"),
                                        ("N=1,C=8,H=9,W=9,K=8,R=3,S=3", "bf16")])
def test_a_mode_that_does_not_compute_the_problem_is_refused(spec, mode):
    with pytest.raises(CudnnUnsupported, match=f"cuDNN mode {mode} does not compute"):
        CudnnGraph(parse_spec(spec), mode)


def test_dense_tensor_peaks_by_gpu_name():
    assert dense_tensor_peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == pytest.approx(989.4)
    assert dense_tensor_peak_tflops("NVIDIA H100 80GB HBM3", "tf32") == pytest.approx(494.7)
    assert dense_tensor_peak_tflops("NVIDIA H200", "fp16") == pytest.approx(989.4)
    assert dense_tensor_peak_tflops("NVIDIA H100 PCIe", "bf16") == pytest.approx(756.5)
    assert dense_tensor_peak_tflops("NVIDIA H100 80GB HBM3", "fp32") is None
    assert dense_tensor_peak_tflops("NVIDIA A100-SXM4-80GB", "bf16") is None
