"""Build the Cython kernels: every ``gmmfast/**/*.pyx`` becomes one extension.

Compiled with -O3 and OpenMP where the compiler supports ``-fopenmp``; without
OpenMP the build still succeeds and the kernels run single-threaded.
"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup


def _compiler_accepts(flag):
    """Return True if the C compiler compiles and links an OpenMP program with ``flag``."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        return False
    src = "#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.c")
        with open(path, "w") as fh:
            fh.write(src)
        cmd = [cc, flag, path, "-o", os.path.join(tmp, "t")]
        try:
            return subprocess.run(cmd, capture_output=True).returncode == 0
        except OSError:
            return False


if os.environ.get("GMMFAST_NO_OPENMP") or not _compiler_accepts("-fopenmp"):
    print("gmmfast: building without OpenMP (kernels run single-threaded)")
    compile_args, link_args = ["-O3"], []
else:
    compile_args, link_args = ["-O3", "-fopenmp"], ["-fopenmp"]

extensions = [
    Extension(
        path[:-4].replace(os.sep, "."),
        [path],
        include_dirs=[np.get_include()],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for path in sorted(glob.glob(os.path.join("gmmfast", "**", "*.pyx"), recursive=True))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "nonecheck": False,
        },
    ),
)
