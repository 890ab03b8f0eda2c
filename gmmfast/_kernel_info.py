"""What the compiled kernels do on this machine: what a results file records about them."""
from __future__ import annotations

from typing import Dict, Union

from ._kernels._common import openmp_max_threads
from ._kernels._kmeans import float32_screening, simd_level

#: Names of the instruction sets the nearest-center search dispatches to, by level.
SIMD_NAMES = {2: "AVX-512", 1: "AVX2", 0: "portable"}


def kernel_info() -> Dict[str, Union[bool, int, str]]:
    """The compiled kernels' settings on this machine, now.

    The processor model does not say which code runs: the SIMD variant is
    chosen when the kernels load (the widest the processor supports, at most
    what the environment variable ``GMMFAST_SIMD`` allows: ``"avx512"``,
    ``"avx2"`` or ``"generic"``, as faiss's ``FAISS_OPT_LEVEL``) and the
    thread count follows OpenMP's settings, so a benchmark's results should
    record these values next to its timings. AVX2 and AVX-512 give the same
    results; the portable code, without fused multiply-adds, can differ in
    the last bits of a distance and so in a label.

    Returns
    -------
    dict
        ``"simd_level"`` (int): the instruction set the nearest-center search
        dispatches to, 2 AVX-512, 1 AVX2, 0 portable C;
        ``"simd"`` (str): its name, ``"AVX-512"``, ``"AVX2"`` or
        ``"portable"``;
        ``"float32_screening"`` (bool): whether searches on float64 data are
        screened in float32 first (the labels are the same);
        ``"openmp_max_threads"`` (int): the threads an OpenMP region would
        use now (1 when the kernels were built without OpenMP).

    Examples
    --------
    >>> import gmmfast
    >>> sorted(gmmfast.kernel_info())
    ['float32_screening', 'openmp_max_threads', 'simd', 'simd_level']
    """
    level = int(simd_level())
    return {"simd_level": level, "simd": SIMD_NAMES[level],
            "float32_screening": bool(float32_screening()),
            "openmp_max_threads": int(openmp_max_threads())}
