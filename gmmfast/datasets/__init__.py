"""Data sets: generators for the paper's experiments and the SIPU benchmark loader, a user's
points from a file."""

from .._lazy import attach as _attach

#: Public names -> the module that defines them, imported on first use (PEP 562:
#: importing this package loads none of them).
_NAMES = {"get_data_home": "._clustering", "load_sipu": "._clustering",
          "make_gmm200": "._clustering", "make_norm25": "._clustering",
          "make_cluttered_digits": "._digits", "read_npy_dask": "._files",
          "read_points": "._files", "make_cluttered_objects": "._objects",
          "make_scenes": "._scenes", "make_texture_scenes": "._texture_scenes"}

__all__ = ["get_data_home", "load_sipu", "make_cluttered_digits", "make_cluttered_objects",
           "make_gmm200", "make_norm25", "make_scenes", "make_texture_scenes", "read_npy_dask",
           "read_points"]

__getattr__, __dir__ = _attach(__name__, (), _NAMES)
