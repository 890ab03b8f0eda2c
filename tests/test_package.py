"""The package as a user meets it: importing a source tree that was never built, importing
it cheaply (public names load lazily), every public name there, and what its packaging
declares (py.typed, the version's one source, the license)."""
import ast
import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


_SIMD_FIT = """
import hashlib, numpy as np, gmmfast
rng = np.random.default_rng(0)
X = (rng.normal(size=(30000, 20)) + rng.integers(0, 6, size=(30000, 1)) * 3).astype(np.float32)
m = gmmfast.GMMKMeans(20, random_state=0).fit(X)
print(gmmfast.kernel_info()["simd"], m.inertia_,
      hashlib.sha1(m.labels_.tobytes() + m.cluster_centers_.tobytes()).hexdigest())
"""


def _run_with_simd(value, code):
    env = dict(os.environ, GMMFAST_SIMD=value, OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_gmmfast_simd_caps_the_kernels_and_keeps_the_results():
    """GMMFAST_SIMD (as faiss's FAISS_OPT_LEVEL) caps the instruction set every kernel
    dispatches to when the kernels load; a value the processor lacks leaves its own level;
    AVX2 gives the fit the widest level gives, to the last bit; other values are refused
    naming the variable."""
    top = gmmfast.kernel_info()["simd_level"]
    names = {2: "AVX-512", 1: "AVX2", 0: "portable"}
    fits = {}
    for value, level in (("avx512", 2), ("avx2", 1), ("generic", 0)):
        run = _run_with_simd(value, _SIMD_FIT)
        assert run.returncode == 0, run.stderr
        simd, rest = run.stdout.split(" ", 1)
        assert simd == names[min(level, top)]
        fits[value] = rest
    assert fits["avx2"] == fits["avx512"]
    bad = _run_with_simd("sse9", "import gmmfast")
    assert bad.returncode != 0
    assert ("ValueError: GMMFAST_SIMD must be one of 'avx512', 'avx2', 'generic'"
            in bad.stderr.strip().splitlines()[-1])
    assert _run_with_simd("", "import gmmfast.cluster").returncode == 0   # empty: unset


# --------------------------------------------------------------------------- issue 27, item 3

def _pyproject() -> dict:
    try:
        import tomllib
    except ImportError:                             # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    root = Path(__file__).resolve().parents[1]
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))


def test_package_ships_py_typed():
    # PEP 561: the marker lives in the package (installed from a wheel or in place) ...
    assert (Path(gmmfast.__path__[0]) / "py.typed").is_file()
    # ... and the build config lists it as package data, so wheels carry it
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["gmmfast"]


def test_version_has_one_source():
    from gmmfast import _version
    assert gmmfast.__version__ == _version.__version__
    # pyproject reads the version from that module (statically: a plain string literal)
    config = _pyproject()
    assert "version" not in config["project"] and "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "gmmfast._version.__version__"}
    tree = ast.parse(Path(_version.__file__).read_text(encoding="utf-8"))
    literals = [node.value.value for node in tree.body
                if isinstance(node, ast.Assign) and node.targets[0].id == "__version__"]
    assert literals == [gmmfast.__version__]
    # the changelog's newest release is this version
    root = Path(__file__).resolve().parents[1]
    changelog = (root / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"^## \[(\S+)\]", changelog, re.M).group(1) == gmmfast.__version__


def test_license_file_is_the_declared_license():
    config = _pyproject()["project"]
    root = Path(__file__).resolve().parents[1]
    assert config["license"] == "BSD-3-Clause" and config["license-files"] == ["LICENSE"]
    text = (root / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License") and "Neither the name" in text


# -- lazy loading (PEP 562): importing gmmfast imports no heavy dependency -----------------

def _fresh(code):
    """Run ``code`` in a fresh interpreter on this gmmfast; its stdout."""
    root = str(pathlib.Path(gmmfast.__path__[0]).parent)
    env = dict(os.environ, PYTHONPATH=root)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=root)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_import_loads_no_heavy_dependency_until_a_name_is_used():
    out = _fresh(
        "import sys\n"
        "heavy = ('sklearn', 'dask', 'matplotlib')\n"
        "import gmmfast\n"
        "assert gmmfast.__file__.startswith(" + repr(gmmfast.__path__[0]) + "), gmmfast.__file__\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "info = gmmfast.kernel_info()\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "from gmmfast import GMMKMeans\n"
        "from gmmfast.cluster import KMeans\n"
        "import numpy as np\n"
        "X = np.random.default_rng(0).standard_normal((200, 2))\n"
        "print(GMMKMeans(3, random_state=0).fit(X).cluster_centers_.shape)\n"
        "print(KMeans(3, random_state=0).fit(X).cluster_centers_.shape)\n"
        "print(GMMKMeans is gmmfast.GMMKMeans is gmmfast.cluster.GMMKMeans)\n")
    assert out.splitlines() == ["[]", "[]", "(3, 2)", "(3, 2)", "True"]


def test_not_fitted_error_is_scikit_learns_once_resolved():
    # gmmfast raises scikit-learn's class (its users catch it), imported only when raised
    from sklearn.exceptions import ConvergenceWarning, NotFittedError

    from gmmfast import _validation
    assert _validation.NotFittedError is NotFittedError
    assert _validation.ConvergenceWarning is ConvergenceWarning
    with pytest.raises(NotFittedError, match="not fitted yet"):
        gmmfast.GMMKMeans().predict([[0.0]])


PUBLIC = ["gmmfast", "gmmfast.cluster", "gmmfast.core", "gmmfast.datasets",
          "gmmfast.experiments", "gmmfast.lssvm", "gmmfast.metrics", "gmmfast.potts"]


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves(name):
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    assert names, f"{name} has no __all__"
    assert len(set(names)) == len(names)
    for attr in names:
        assert getattr(module, attr) is not None, f"{name}.{attr}"
        assert attr in dir(module), f"{attr} missing from dir({name})"
    # and in a fresh interpreter, by `from ... import *` (which reads __all__)
    out = _fresh(f"from {name} import *\nprint(len({names!r}))")
    assert out.strip() == str(len(names))


def test_lazy_package_attributes():
    for sub in ("cluster", "core", "datasets", "lssvm", "metrics", "potts"):
        assert getattr(gmmfast, sub).__name__ == f"gmmfast.{sub}"
        assert sub in dir(gmmfast)
    assert gmmfast.GMMKMeans is gmmfast.cluster.GMMKMeans
    assert gmmfast.LatentSSVM is gmmfast.lssvm.LatentSSVM
    assert gmmfast.datasets.read_points.__module__ == "gmmfast.datasets._files"
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        gmmfast.nope            # noqa: B018
    with pytest.raises(ImportError):
        from gmmfast.cluster import nope  # noqa: F401
