"""Is a kernel right? The float64 reference convolution and the comparison with it.

- :mod:`~autoconv.verify.reference`: the reference, written from the definition.
- :mod:`~autoconv.verify.compare`: poison, tolerance, relative error.
"""
