"""Data sets: generators for the paper's experiments and the SIPU benchmark loader, a user's
points from a file."""
from ._clustering import get_data_home, load_sipu, make_gmm200, make_norm25
from ._digits import make_cluttered_digits
from ._files import read_points
from ._scenes import make_scenes

__all__ = ["get_data_home", "load_sipu", "make_cluttered_digits", "make_gmm200", "make_norm25",
           "make_scenes", "read_points"]
