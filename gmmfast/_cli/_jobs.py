"""Running the independent fits of an experiment, serially or in worker processes."""
from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def run_jobs(fn: Callable[[J], R], jobs: Sequence[J], n_jobs: int,
             note: Callable[[R], None]) -> None:
    """Call ``note(fn(job))`` for every job, in order.

    With ``n_jobs > 1`` the jobs run in that many spawned processes (each
    fit's kernels keep their own thread settings); results still arrive in
    the order of ``jobs``, so outputs do not depend on ``n_jobs``.
    """
    if n_jobs <= 1:
        for job in jobs:
            note(fn(job))
        return
    import multiprocessing
    with ProcessPoolExecutor(max_workers=n_jobs,
                             mp_context=multiprocessing.get_context("spawn")) as ex:
        for result in ex.map(fn, jobs):
            note(result)
