"""Data sets: generators for the paper's experiments and the SIPU benchmark loader."""

__all__: list = []
