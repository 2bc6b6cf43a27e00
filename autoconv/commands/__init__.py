"""The ``autoconv`` command line: argument parsing and printing, one module per command.

Domain code (problems, kernels, search, cache, bench) never prints; commands do.
"""
