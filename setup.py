"""Build the Cython kernels: every ``gmmfast/**/*.pyx`` becomes one extension.

Compiled with -O3 and OpenMP where the compiler supports ``-fopenmp``; without
OpenMP the build still succeeds and the kernels run single-threaded. The extensions are
translated (Cython, on Linux) and compiled in parallel, one job per available core
(setuptools compiles them one after another unless told; ``GMMFAST_BUILD_JOBS`` or
``build_ext --parallel N`` overrides).
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
from setuptools.command.build_ext import build_ext


def _build_jobs():
    """Parallel compile jobs: $GMMFAST_BUILD_JOBS, else the cores this process may use."""
    env = os.environ.get("GMMFAST_BUILD_JOBS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # macOS, Windows
        return os.cpu_count() or 1


class ParallelBuildExt(build_ext):
    """build_ext compiling the extensions in parallel unless ``--parallel`` was given."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = _build_jobs()


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
    cmdclass={"build_ext": ParallelBuildExt},
    ext_modules=cythonize(
        extensions,
        # Cython's translation of the .pyx files is serial too unless told; its pool forks,
        # so only where fork is the default start method (Linux): elsewhere, one process
        nthreads=_build_jobs() if sys.platform.startswith("linux") else 0,
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
