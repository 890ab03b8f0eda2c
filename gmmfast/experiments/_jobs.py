"""Running the independent fits of an experiment, serially or in worker processes."""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, List, Optional, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def run_jobs(fn: Callable[[J], R], jobs: Sequence[J], n_jobs: int,
             describe: Optional[Callable[[R], str]] = None) -> List[R]:
    """``[fn(job) for job in jobs]``, in worker processes when ``n_jobs > 1``.

    With ``n_jobs > 1`` the jobs run in that many spawned processes (each
    fit's kernels keep their own thread settings), so ``fn`` and the jobs
    must be picklable (``fn`` defined at the top level of a module); results
    still arrive in the order of ``jobs``, so outputs do not depend on
    ``n_jobs``.

    Parameters
    ----------
    fn : callable
        One job's work: ``fn(job) -> result``.
    jobs : sequence
        The jobs' arguments, one each.
    n_jobs : int
        Worker processes; 1 or fewer runs the jobs one after another in this
        process.
    describe : callable, optional
        ``describe(result) -> str``: when given, ``[i/N] describe(result)
        (elapsed s)`` is printed as each result arrives.

    Returns
    -------
    list
        The results, in the order of ``jobs``.
    """
    results: List[R] = []
    t0 = time.perf_counter()

    def note(result: R) -> None:
        results.append(result)
        if describe is not None:
            print(f"  [{len(results)}/{len(jobs)}] {describe(result)} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)

    if n_jobs <= 1:
        for job in jobs:
            note(fn(job))
        return results
    import multiprocessing
    with ProcessPoolExecutor(max_workers=n_jobs,
                             mp_context=multiprocessing.get_context("spawn")) as ex:
        for result in ex.map(fn, jobs):
            note(result)
    return results
