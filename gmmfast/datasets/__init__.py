"""Data sets: generators for the paper's experiments and the SIPU benchmark loader."""
from ._digits import make_cluttered_digits  # noqa: F401

__all__: list = []
