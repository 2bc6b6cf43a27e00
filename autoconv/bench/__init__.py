"""Measuring the winners against the best: cuDNN's plans, PyTorch, the FP32 peak; reports.

- :mod:`~autoconv.bench.baseline`: cuDNN frontend plans, verified and timed alike.
- :mod:`~autoconv.bench.benchmark`: ``autoconv bench``'s measurements.
- :mod:`~autoconv.bench.peak`: the device's FP32 FMA peak, measured.
- :mod:`~autoconv.bench.results`: the results file: its layout, reading, writing, geometric means.
- :mod:`~autoconv.bench.report`: Markdown, CSV, JSON and plots from a results file.
"""
