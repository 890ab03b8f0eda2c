"""Running the independent fits of an experiment, serially or in worker processes."""
from __future__ import annotations

import functools
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable, List, Optional, Sequence, TypeVar

J = TypeVar("J")
R = TypeVar("R")

#: No ``shared`` argument: ``fn(job)`` is called.
_NONE = object()
#: A worker process's copy of ``shared`` (set once, by :func:`_receive`, when it starts).
_shared: Any = _NONE


def _receive(shared: Any) -> None:
    global _shared
    _shared = shared


def _with_shared(fn: Callable[[Any, J], R], job: J) -> R:
    return fn(_shared, job)


def run_jobs(fn: Callable[..., R], jobs: Sequence[J], n_jobs: int,
             describe: Optional[Callable[[R], str]] = None, *, shared: Any = _NONE
             ) -> List[R]:
    """``[fn(job) for job in jobs]`` (``[fn(shared, job) ...]`` with ``shared``), in worker
    processes when ``n_jobs > 1``.

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
    shared : object, optional
        What every job reads (the experiment's data, drawn once by the caller): passed to
        ``fn`` as its first argument; a worker process receives it once, when it starts,
        not with every job (nor draws it again).

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
            note(fn(job) if shared is _NONE else fn(shared, job))
        return results
    import multiprocessing
    pool = dict(max_workers=n_jobs, mp_context=multiprocessing.get_context("spawn"))
    if shared is not _NONE:
        pool.update(initializer=_receive, initargs=(shared,))
        fn = functools.partial(_with_shared, fn)
    with ProcessPoolExecutor(**pool) as ex:
        for result in ex.map(fn, jobs):
            note(result)
    return results
