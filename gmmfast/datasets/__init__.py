"""Data sets: generators for the paper's experiments and the SIPU benchmark loader, a user's
points from a file."""
from ._clustering import get_data_home, load_sipu, make_gmm200, make_norm25
from ._digits import make_cluttered_digits
from ._files import read_npy_dask, read_points
from ._objects import make_cluttered_objects
from ._scenes import make_scenes
from ._texture_scenes import make_texture_scenes

__all__ = ["get_data_home", "load_sipu", "make_cluttered_digits", "make_cluttered_objects",
           "make_gmm200", "make_norm25", "make_scenes", "make_texture_scenes", "read_npy_dask",
           "read_points"]
