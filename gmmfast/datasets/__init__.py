"""Data sets: generators for the paper's experiments and the SIPU benchmark loader."""

__all__: list = []
from ._scenes import make_scenes  # noqa: E402,F401
