"""Generalized Majorization-Minimization (Algorithm 1 of the paper), generic.

Minimise ``F(w)`` through a sequence of upper bounds ``b_t`` taken from a
family::

    v_0 = F(w_0)
    for t = 1, 2, ...:
        pick b_t with b_t(w_{t-1}) <= v_{t-1}            # a valid bound
        w_t = argmin_w b_t(w)
        d_t = b_t(w_t) - F(w_t)                          # gap, >= 0
        v_t = eta F(w_t) + (1 - eta) b_t(w_t)            # = b_t(w_t) - eta d_t
        stop when d_t <= tol |F(w_0)|

``eta`` (the progress coefficient) in (0, 1]: with ``eta = 1`` every valid
bound touches ``F`` at ``w_{t-1}``, which is MM (Lloyd, CCP). This module knows
nothing of k-means or SVMs: a problem enters through a :class:`BoundFamily`.
"""
from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Protocol, TypeVar, Union

import numpy as np

__all__ = ["BoundFamily", "Selection", "History", "GMMResult", "generalized_mm",
           "check_eta", "check_tol", "check_max_iter", "next_threshold"]

W = TypeVar("W")
Z = TypeVar("Z")


@dataclass
class Selection(Generic[Z]):
    """A bound picked for iteration t, with the statistics of how it was found.

    Attributes
    ----------
    bound : Z
        The bound (for latent-variable models, a latent configuration).
    proposals : int
        Random-walk proposals made to find it (0 for the touching bound).
    accepted : int
        Proposals accepted.
    """

    bound: Any
    proposals: int = 0
    accepted: int = 0


class BoundFamily(Protocol[W, Z]):
    """A family of upper bounds on an objective ``F``; what Algorithm 1 needs of a problem.

    Every bound ``b`` satisfies ``b(w) >= F(w)`` for all ``w``. A family may
    cache work between calls (e.g. fuse ``bound_value(b_t, w_t)`` and
    ``objective(w_t)`` into one pass), but must return the same numbers as if
    it had not.
    """

    def objective(self, w: W) -> float:
        """F(w)."""

    def bound_value(self, bound: Z, w: W) -> float:
        """b(w) for the bound ``bound``."""

    def minimize(self, bound: Z, w: W) -> W:
        """argmin of ``bound``; ``w`` (the previous solution) may break ties or warm-start."""

    def touching(self, w: W) -> Z:
        """The bound that touches F at w (MM's choice): b(w) = F(w)."""

    def random_valid(self, w: W, threshold: float, rng: np.random.Generator) -> Selection:
        """A random bound b with b(w) <= threshold."""

    def biased_valid(self, w: W, threshold: float, bias: Any,
                     rng: np.random.Generator) -> Selection:
        """A bound b with b(w) <= threshold that maximises (or approximately) ``bias``."""


@dataclass
class History:
    """What happened in each iteration t = 1..T of one run; every field is a 1-D array.

    ``bound_at_previous[t]`` is b_t(w_{t-1}), ``threshold[t]`` is v_{t-1},
    ``bound[t]`` is b_t(w_t), ``objective[t]`` is F(w_t), ``gap[t]`` is d_t,
    ``proposals``/``accepted`` the random-walk statistics of the selection and
    ``time`` the seconds since the start. ``initial_objective`` is F(w_0).
    """

    initial_objective: float = float("nan")
    bound_at_previous: np.ndarray = field(default_factory=lambda: np.empty(0))
    threshold: np.ndarray = field(default_factory=lambda: np.empty(0))
    bound: np.ndarray = field(default_factory=lambda: np.empty(0))
    objective: np.ndarray = field(default_factory=lambda: np.empty(0))
    gap: np.ndarray = field(default_factory=lambda: np.empty(0))
    proposals: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    accepted: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    time: np.ndarray = field(default_factory=lambda: np.empty(0))

    @property
    def n_iter(self) -> int:
        return int(self.bound.shape[0])

    def invariant_violations(self, rtol: float = 1e-9, atol: float = 0.0) -> list:
        """The invariants of the run that fail, as readable strings (empty if all hold).

        Checked: b_t(w_{t-1}) <= v_{t-1} exactly (validity), and up to
        ``rtol * |F(w_0)| + atol`` of rounding: b_t(w_t) <= b_t(w_{t-1}) (w_t
        minimises b_t), d_t >= 0, b_t(w_t) non-increasing in t,
        v_{t-1} <= b_{t-1}(w_{t-1}). ``atol`` matters only when F(w_0) is ~0.
        """
        slack = rtol * abs(self.initial_objective) + atol
        out = []
        bad = np.flatnonzero(self.bound_at_previous > self.threshold)
        if bad.size:
            out.append(f"b_t(w_t-1) > v_t-1 at t = {bad + 1}")
        bad = np.flatnonzero(self.bound > self.bound_at_previous + slack)
        if bad.size:
            out.append(f"b_t(w_t) > b_t(w_t-1) at t = {bad + 1}")
        bad = np.flatnonzero(self.gap < -slack)
        if bad.size:
            out.append(f"d_t < 0 at t = {bad + 1}")
        bad = np.flatnonzero(np.diff(self.bound) > slack)
        if bad.size:
            out.append(f"b_t(w_t) increased at t = {bad + 2}")
        if self.n_iter and self.threshold[0] != self.initial_objective:
            out.append("v_0 != F(w_0)")
        bad = np.flatnonzero(self.threshold[1:] > self.bound[:-1] + slack)
        if bad.size:
            out.append(f"v_t-1 > b_t-1(w_t-1) at t = {bad + 2}")
        return out


@dataclass
class GMMResult(Generic[W, Z]):
    """Outcome of :func:`generalized_mm`: the last solution ``w``, the last bound, the history."""

    w: Any
    bound: Any
    objective: float
    n_iter: int
    converged: bool
    history: History


def check_eta(eta: float) -> float:
    """Validate the progress coefficient: a real number in (0, 1]."""
    if isinstance(eta, bool) or not isinstance(eta, numbers.Real) or not 0 < eta <= 1:
        raise ValueError(f"eta must be a real number in (0, 1], got {eta!r}")
    return float(eta)


def check_tol(tol: float) -> float:
    """Validate the relative stopping tolerance: a real number >= 0."""
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not tol >= 0:
        raise ValueError(f"tol must be a real number >= 0, got {tol!r}")
    return float(tol)


def check_max_iter(max_iter: int) -> int:
    """Validate the iteration cap: an integer >= 1."""
    if isinstance(max_iter, bool) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    return int(max_iter)


def next_threshold(eta: float, objective: float, bound: float) -> float:
    """v_t = eta F(w_t) + (1 - eta) b_t(w_t), never below F(w_t).

    In exact arithmetic b_t(w_t) >= F(w_t), so the ``max`` changes nothing; in
    floating point it keeps the touching bound valid whatever the rounding.
    With eta = 1 the result is F(w_t) exactly, so MM is reproduced bit for bit.
    """
    return max(objective, eta * objective + (1.0 - eta) * bound)


def generalized_mm(family: BoundFamily, w0: Any, *, eta: float, tol: float = 1e-4,
                   max_iter: int = 300,
                   selection: Union[str, Callable, Any] = "random",
                   random_state: Optional[np.random.Generator] = None,
                   callback: Optional[Callable[[int, History], None]] = None) -> GMMResult:
    """Run Algorithm 1 from ``w0``.

    Parameters
    ----------
    family : BoundFamily
        The problem: objective, bounds, their minimisers, and bound selection.
    w0 : object
        Initial solution.
    eta : float in (0, 1]
        Progress coefficient; 1 gives MM.
    tol : float >= 0
        Stop when d_t <= tol * |F(w_0)| (relative, so scaling F changes nothing).
    max_iter : int >= 1
        Stop after this many iterations.
    selection : "random", "mm" or a bias
        "random": ``family.random_valid``; "mm": the touching bound;
        anything else is a bias handed to ``family.biased_valid``.
    random_state : numpy.random.Generator, optional
        Source of randomness for the selection.
    callback : callable(t, history), optional
        Called after each iteration (progress bars, logging).

    Returns
    -------
    GMMResult

    Raises
    ------
    RuntimeError
        If the family returns a bound with b_t(w_{t-1}) > v_{t-1}: that is a bug.
    """
    eta = check_eta(eta)
    tol = check_tol(tol)
    max_iter = check_max_iter(max_iter)
    rng = np.random.default_rng() if random_state is None else random_state
    cols = {name: np.empty(max_iter) for name in
            ("bound_at_previous", "threshold", "bound", "objective", "gap", "time")}
    proposals = np.zeros(max_iter, dtype=np.int64)
    accepted = np.zeros(max_iter, dtype=np.int64)

    start = time.perf_counter()
    f0 = float(family.objective(w0))
    w_prev, f_prev, v_prev = w0, f0, f0
    stop_gap = tol * abs(f0)
    bound = None
    converged = False
    t = 0
    history = History(initial_objective=f0)
    while t < max_iter:
        if isinstance(selection, str) and selection == "mm":
            picked = Selection(family.touching(w_prev))
        elif isinstance(selection, str) and selection == "random":
            picked = family.random_valid(w_prev, v_prev, rng)
        else:
            picked = family.biased_valid(w_prev, v_prev, selection, rng)
        bound = picked.bound
        b_prev = float(family.bound_value(bound, w_prev))
        if not b_prev <= v_prev:
            raise RuntimeError(
                f"invalid bound at iteration {t + 1}: b_t(w_t-1) = {b_prev!r} > v_t-1 = {v_prev!r}")
        w = family.minimize(bound, w_prev)
        b = float(family.bound_value(bound, w))
        f = float(family.objective(w))
        d = b - f
        cols["bound_at_previous"][t] = b_prev
        cols["threshold"][t] = v_prev
        cols["bound"][t] = b
        cols["objective"][t] = f
        cols["gap"][t] = d
        cols["time"][t] = time.perf_counter() - start
        proposals[t] = picked.proposals
        accepted[t] = picked.accepted
        t += 1
        w_prev, f_prev, v_prev = w, f, next_threshold(eta, f, b)
        if callback is not None:
            callback(t, _history(history, cols, proposals, accepted, t))
        if d <= stop_gap:
            converged = True
            break
    history = _history(history, cols, proposals, accepted, t)
    return GMMResult(w=w_prev, bound=bound, objective=f_prev, n_iter=t,
                     converged=converged, history=history)


def _history(history: History, cols: dict, proposals: np.ndarray, accepted: np.ndarray,
             t: int) -> History:
    for name, col in cols.items():
        setattr(history, name, col[:t].copy())
    history.proposals = proposals[:t].copy()
    history.accepted = accepted[:t].copy()
    return history
