"""Compiled kernels (Cython, nogil, OpenMP). Private: use the public API.

The SIMD variant is the widest the processor supports, capped by the environment variable
``GMMFAST_SIMD`` (read when the kernels load; see :func:`gmmfast.kernel_info`).
"""
import os as _os

#: GMMFAST_SIMD's values, widest first: the kernels use at most that instruction set.
SIMD_CAPS = ("avx512", "avx2", "generic")

_cap = _os.environ.get("GMMFAST_SIMD")
if _cap and _cap not in SIMD_CAPS:          # empty: unset, as the kernels read it
    raise ValueError(f"GMMFAST_SIMD must be one of {', '.join(map(repr, SIMD_CAPS))} (or "
                     f"unset: the widest the processor supports), got {_cap!r}.")
