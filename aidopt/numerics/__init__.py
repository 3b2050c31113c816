"""Numerical kernels: sums with proven rounding bounds (:mod:`~aidopt.numerics.rounding`),
compiled loops, kernel functions, kernel sums and kernel expansions."""
