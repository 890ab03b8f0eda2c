# The Python-visible part of the shared kernel helpers (the inline ones are in _common.pxd).
from ._common cimport gmm_omp_max_threads


def openmp_max_threads():
    """Number of threads an OpenMP region would use now (1 without OpenMP)."""
    return gmm_omp_max_threads()
