"""Compiled kernels (Cython, nogil, OpenMP). Private: use the public API."""
