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

import math
import numbers
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Optional, Protocol, TypeVar, Union

import numpy as np

from ._validation import check_random_state

__all__ = ["BoundFamily", "Selection", "History", "GMMResult", "generalized_mm",
           "check_eta", "check_tol", "check_max_iter", "check_selection", "next_threshold"]

#: Selections every family accepts; a family may name more biases in ``named_biases``.
SELECTIONS = ("random", "mm")

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


def check_selection(family: Any, selection: Any) -> Any:
    """Validate ``selection`` against what ``family`` accepts; return it unchanged.

    Accepted: "random", "mm", a string the family lists in ``named_biases``
    (every string if it has no such attribute), or a bias handed to
    ``family.biased_valid``: a callable, or an object with a ``select_valid``
    method (a bias that maximises itself).
    """
    if isinstance(selection, str):
        named = getattr(family, "named_biases", None)
        if selection in SELECTIONS or named is None or selection in named:
            return selection
        accepted = ", ".join(repr(s) for s in SELECTIONS + tuple(named))
        raise ValueError(f"selection must be one of {accepted} or a bias (a callable, or an "
                         f"object with select_valid) for {type(family).__name__}, got "
                         f"{selection!r}.")
    if callable(selection) or callable(getattr(selection, "select_valid", None)):
        return selection
    raise ValueError("selection must be 'random', 'mm', a named bias of the family or a bias "
                     f"(a callable, or an object with select_valid), got {selection!r}.")


#: What every family must implement, and what each kind of selection needs besides.
_FAMILY_METHODS = ("objective", "bound_value", "minimize", "touching")


def _check_family(family: Any, selection: Any) -> None:
    named = selection if isinstance(selection, str) else None
    need = _FAMILY_METHODS + (("random_valid",) if named == "random"
                              else () if named == "mm" else ("biased_valid",))
    missing = [m for m in need if not callable(getattr(family, m, None))]
    if missing:
        raise TypeError(f"family must implement the BoundFamily methods {list(need)}; "
                        f"{type(family).__name__} lacks {missing}.")


class _Record:
    """The columns of a run's history, grown geometrically up to ``max_iter`` rows.

    Nothing of size ``max_iter`` is allocated up front (``max_iter=10**10`` is
    a legitimate cap), and appending a row is O(1) amortised.
    """

    NAMES = ("bound_at_previous", "threshold", "bound", "objective", "gap", "time",
             "proposals", "accepted")

    def __init__(self, max_iter: int):
        self.max_iter = max_iter
        cap = min(max_iter, 64)
        self.cols = [np.empty(cap) for _ in range(6)] + [np.zeros(cap, dtype=np.int64)
                                                          for _ in range(2)]
        self.t = 0

    def append(self, row: tuple) -> None:
        """Add one iteration: the values of NAMES, in that order."""
        t = self.t
        if t == self.cols[0].shape[0]:
            cap = min(self.max_iter, 2 * t)
            for j, col in enumerate(self.cols):
                grown = np.empty(cap, dtype=col.dtype)
                grown[:t] = col
                self.cols[j] = grown
        for col, value in zip(self.cols, row):
            col[t] = value
        self.t = t + 1

    def fill(self, history: History, *, copy: bool) -> History:
        """Point ``history``'s columns at rows [0, t): views (O(1)) or trimmed copies."""
        for name, col in zip(self.NAMES, self.cols):
            setattr(history, name, col[:self.t].copy() if copy else col[:self.t])
        return history


def generalized_mm(family: BoundFamily, w0: Any, *, eta: float, tol: float = 1e-4,
                   max_iter: int = 300,
                   selection: Union[str, Callable, Any] = "random",
                   random_state: Any = None,
                   callback: Optional[Callable[[int, History], None]] = None) -> GMMResult:
    """Run Algorithm 1 from ``w0``.

    Parameters
    ----------
    family : BoundFamily
        The problem: objective, bounds, their minimisers, and bound selection.
    w0 : object
        Initial solution; F(w0) must be finite.
    eta : float in (0, 1]
        Progress coefficient; 1 gives MM.
    tol : float >= 0
        Stop when ``d_t <= tol * |F(w_0)|`` (relative, so scaling F changes nothing).
        The run also stops, as converged, when the bound value b_t(w_t) fails
        to decrease: in exact arithmetic b_t(w_t) <= b_{t-1}(w_{t-1}) -
        eta d_{t-1} < b_{t-1}(w_{t-1}), so a bound that does not decrease means
        rounding dominates the gap (the floor of the stop test; it matters
        when F(w_0) = 0, where the relative test alone could never pass).
    max_iter : int >= 1
        Stop after this many iterations (nothing of this size is allocated).
    selection : "random", "mm", a named bias or a bias
        "random": ``family.random_valid``; "mm": the touching bound; a string
        in ``family.named_biases``, a callable or an object with
        ``select_valid`` is a bias handed to ``family.biased_valid``. See
        :func:`check_selection`.
    random_state : None, int, numpy Generator or RandomState
        Source of randomness for the selection.
    callback : callable(t, history), optional
        Called after each iteration t (progress bars, logging). ``history``
        holds iterations 1..t as views into the run's buffers (no copy, so a
        callback costs O(1) per iteration); it is the same object every time,
        updated in place: copy the arrays you want to keep.

    Returns
    -------
    GMMResult

    Raises
    ------
    ValueError
        Bad parameters, a selection the family does not accept, or F not
        finite (at w0, or at an iterate: an overflow).
    TypeError
        ``family`` lacks a method the selection needs, or ``callback`` is not callable.
    RuntimeError
        If the family returns a bound with b_t(w_{t-1}) > v_{t-1}: that is a bug.
    """
    eta = check_eta(eta)
    tol = check_tol(tol)
    max_iter = check_max_iter(max_iter)
    selection = check_selection(family, selection)
    _check_family(family, selection)
    if callback is not None and not callable(callback):
        raise TypeError(f"callback must be callable or None, got {callback!r}.")
    rng = check_random_state(random_state)
    record = _Record(max_iter)

    start = time.perf_counter()
    f0 = float(family.objective(w0))
    if not math.isfinite(f0):
        raise ValueError(f"the objective at w0 is F(w_0) = {f0!r}; it must be finite "
                         "(non-finite values usually mean the data overflowed: rescale it).")
    w_prev, f_prev, v_prev = w0, f0, f0
    stop_gap = math.inf if tol == math.inf else tol * abs(f0)    # inf x 0 would be NaN
    bound = None
    b_last = math.inf
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
        if not (math.isfinite(b) and math.isfinite(f)):
            raise ValueError(f"at iteration {t + 1} the bound value {b!r} or the objective "
                             f"{f!r} is not finite: the problem overflowed (rescale the data).")
        d = b - f
        record.append((b_prev, v_prev, b, f, d, time.perf_counter() - start, picked.proposals,
                       picked.accepted))
        t += 1
        w_prev, f_prev, v_prev = w, f, next_threshold(eta, f, b)
        if callback is not None:
            callback(t, record.fill(history, copy=False))
        if d <= stop_gap or b >= b_last:
            converged = True
            break
        b_last = b
    return GMMResult(w=w_prev, bound=bound, objective=f_prev, n_iter=t,
                     converged=converged, history=record.fill(history, copy=True))
