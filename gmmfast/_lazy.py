"""Lazy attributes of a package (PEP 562), as scikit-learn and SciPy load their submodules.

``import gmmfast`` then costs only the kernel check: a name (``gmmfast.GMMKMeans``, ``from
gmmfast.cluster import KMeans``) imports the module that defines it when it is first used,
and stays in the package's namespace after that. Imports no more than ``importlib`` (not
even ``typing``).
"""
from __future__ import annotations

import importlib
import sys


def attach(package: str, submodules: tuple = (), names: dict | None = None) -> tuple:
    """``(__getattr__, __dir__)`` for ``package``.

    ``submodules``: names of subpackages/modules imported on first access;
    ``names``: attribute -> the relative module that defines it (e.g. ``"._gmm_kmeans"``).
    """
    submodules = frozenset(submodules)
    names = dict(names or {})

    def __getattr__(name: str):
        if name in names:
            module = importlib.import_module(names[name], package)
            value = getattr(module, name)
        elif name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # cache it: later accesses are plain attribute lookups (no __getattr__ call)
        sys.modules[package].__dict__[name] = value
        return value

    def __dir__() -> list:
        return sorted(set(sys.modules[package].__dict__) | submodules | set(names))

    return __getattr__, __dir__
