"""Is a kernel right? The float64 reference convolution and the comparison with it.

- :mod:`~autoconv.verify.reference`: the reference, written from the definition.
- :mod:`~autoconv.verify.compare`: poison, tolerance, relative error.
- :mod:`~autoconv.verify.tolerance`: how much error each precision may have.
- :mod:`~autoconv.verify.on_gpu`: a problem's verification set on the GPU (inputs, reference,
  tolerance), the same for the tuner's GPU worker and the runtime.
"""
