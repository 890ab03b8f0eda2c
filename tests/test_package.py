"""The package as a user meets it: importing a source tree that was never built."""
import shutil
import subprocess
import sys

import gmmfast


def test_unbuilt_source_tree_says_what_to_run(tmp_path):
    # a copy of the package without its compiled kernels, imported from the copy's root
    shutil.copytree(gmmfast.__path__[0], tmp_path / "gmmfast",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    run = subprocess.run([sys.executable, "-c", "import gmmfast"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert run.returncode != 0
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: gmmfast is being imported from its source tree")
    assert "run `pip install -e .` in " + str(tmp_path) in last


def test_kernel_info_reports_what_the_kernels_run_now():
    from threadpoolctl import threadpool_limits

    from gmmfast._kernels import _kmeans

    info = gmmfast.kernel_info()
    assert "kernel_info" in gmmfast.__all__
    assert set(info) == {"simd_level", "simd", "float32_screening", "openmp_max_threads"}
    assert info["simd_level"] == _kmeans.simd_level() in (0, 1, 2)
    assert info["simd"] == {2: "AVX-512", 1: "AVX2", 0: "portable"}[info["simd_level"]]
    assert info["float32_screening"] is True                # the default
    assert isinstance(info["openmp_max_threads"], int) and info["openmp_max_threads"] >= 1
    top = _kmeans.simd_level()
    try:                                # the values follow the settings, they are not cached
        _kmeans.simd_level(0)
        _kmeans.float32_screening(False)
        with threadpool_limits(limits=1, user_api="openmp"):
            now = gmmfast.kernel_info()
        assert now == {"simd_level": 0, "simd": "portable", "float32_screening": False,
                       "openmp_max_threads": 1}
    finally:
        _kmeans.simd_level(top)
        _kmeans.float32_screening(True)
    assert gmmfast.kernel_info() == info
