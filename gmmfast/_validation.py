"""The checks of the package, in one module: parameters (a table per estimator, checked by
:func:`validate_params`), arrays and weights, random states, threads.

User input is checked once, at the public API; internal constructors and kernels trust their
caller (a kernel asserts only the shapes of the buffers it is handed: memory safety with
bounds checks off).
"""
from __future__ import annotations

import math
import numbers
import os
import stat
from typing import Any, Optional, Tuple

import numpy as np
# Every fit draws from numpy.random; numpy 2 imports it on first use (about 10 ms), so it is
# imported with the package rather than inside the first fit.
import numpy.random  # noqa: F401

FLOAT_DTYPES = (np.float64, np.float32)
#: The largest label, latent value or count of them the kernels hold (they store int32).
INT32_MAX = int(np.iinfo(np.int32).max)


def check_array(X: Any, name: str = "X", *, dtype: Optional[np.dtype] = None,
                ndim: int = 2, finite: bool = True) -> np.ndarray:
    """Return X as a C-contiguous float32/float64 array of ``ndim`` dimensions.

    float32 and float64 are kept; integer and boolean input becomes float64;
    anything else (complex, strings, sparse matrices, ragged lists) raises.
    With ``finite`` (the default) NaN and infinity raise; otherwise the caller
    checks the values it can accept.
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array "
                        "(e.g. X.toarray()).")
    try:
        arr = np.asarray(X)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be an array of numbers: {exc}") from None
    if arr.dtype.kind == "O" and not np.iscomplexobj(arr):
        try:
            arr = arr.astype(np.float64)
        except (ValueError, TypeError, OverflowError) as exc:
            raise TypeError(f"{name} must contain numbers only: {exc}") from None
    kind = float_dtype_for(arr.dtype, name)
    arr = arr.astype(dtype if dtype is not None else kind, copy=False)
    if arr.ndim != ndim:
        hint = (" Reshape your data with X.reshape(-1, 1) for a single feature or "
                "X.reshape(1, -1) for a single sample." if ndim == 2 and arr.ndim == 1 else "")
        raise ValueError(f"{name} must be a {ndim}-D array, got a {arr.ndim}-D array of shape "
                         f"{arr.shape}.{hint}")
    check_not_empty(arr.shape, name)
    arr = np.ascontiguousarray(arr)
    if finite:
        extent(arr, name)
    return arr


def float_dtype_for(dtype: np.dtype, name: str = "X") -> np.dtype:
    """The floating type data of ``dtype`` is computed in: float32 and float64 are kept,
    integers and booleans become float64; complex and non-numeric types raise a ValueError
    naming ``name``."""
    if dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported (dtype {dtype}); pass real "
                         "numbers.")
    if dtype.kind not in "fiub":
        raise ValueError(f"{name} must contain numbers, got dtype {dtype}.")
    return dtype if dtype in FLOAT_DTYPES else np.dtype(np.float64)


def check_not_empty(shape: Tuple[int, ...], name: str = "X") -> None:
    """At least one sample and (for 2-D data) one feature, else a ValueError naming ``name``."""
    if len(shape) >= 1 and shape[0] == 0:
        raise ValueError(f"{name} is empty: found array with 0 sample(s) (shape={shape}); "
                         "at least 1 is required.")
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"{name} has 0 feature(s) (shape={shape}) while a minimum of 1 is "
                         "required.")


#: Values checked at once by `extent` (no temporary the size of X).
_EXTENT_BLOCK = 1 << 20


def extent(arr: np.ndarray, name: str = "X") -> float:
    """The largest absolute value of ``arr``; NaN or infinity raise a ValueError naming ``name``.

    Min and max of blocks of the flattened array: no boolean temporary of X's size
    (a float32 set of 1e7 x 128 would need 1.3 GB for np.isfinite).
    """
    flat = arr.reshape(-1)
    top = 0.0
    for lo in range(0, flat.shape[0], _EXTENT_BLOCK):
        block = flat[lo:lo + _EXTENT_BLOCK]
        a, b = float(block.min()), float(block.max())
        if not (np.isfinite(a) and np.isfinite(b)):
            raise ValueError(f"{name} contains NaN or infinity; all values must be finite.")
        top = max(top, -a, b)
    return top


def max_abs(dtype: np.dtype, d: int) -> float:
    """The largest |value| whose squared distances, summed over d features, cannot overflow
    ``dtype`` (with room for the factor 2 of 2 x.c and for sums over a cluster)."""
    return float(np.sqrt(np.finfo(dtype).max / (64.0 * d)))


def min_abs(dtype: np.dtype) -> float:
    """The smallest largest-|value| of data whose squared distances keep ``dtype``'s full
    relative precision (squares at least its smallest normal number over its epsilon: 3e-16
    for float32, 1e-146 for float64)."""
    info = np.finfo(dtype)
    return float(np.sqrt(info.tiny / info.eps))


def check_data(X: Any, name: str = "X", dtype: Optional[np.dtype] = None,
               fit: bool = False) -> np.ndarray:
    """X as a C-contiguous float32/float64 2-D array, finite and small enough for squared
    distances in its precision (else a ValueError naming ``name`` and the limit); with
    ``fit`` (the data a fit clusters), also not so small that they underflow."""
    X = check_array(X, name, dtype=dtype, finite=False)
    check_magnitude(X, X.shape[1], name, fit)
    return X


def check_rows(X: Any, sample_weight: Any, *, fit: bool = False
               ) -> Tuple[np.ndarray, np.ndarray]:
    """X as :func:`check_data` and its weights as :func:`check_sample_weight`; with ``fit``,
    also their objective within float64 (:func:`check_objective_range`)."""
    X = check_array(X, "X", finite=False)
    top = check_magnitude(X, X.shape[1], "X", fit)
    sw = check_sample_weight(sample_weight, X.shape[0], X.dtype)
    if fit:
        check_objective_range(top, sw, X.shape[1], sample_weight is not None)
    return X, sw


def check_objective_range(top: float, sw: np.ndarray, d: int, weighted: bool) -> None:
    """The k-means objective sum_i s_i ||x_i - c_{z_i}||^2 of data whose largest |value| is
    ``top`` (``d`` features, weights ``sw``), for centers among the data, at most
    sum(s) x 4 d top^2: that bound within float64, in which the objective is summed for
    float32 and float64 data alike (with the room :func:`max_abs` keeps), else a ValueError
    naming X and, when given, sample_weight."""
    total = float(sw.sum(dtype=np.float64)) if weighted else float(sw.shape[0])
    objective_range(top, total, sw.shape[0], d, weighted)


def objective_range(top: float, total: float, n: int, d: int, weighted: bool) -> None:
    """:func:`check_objective_range` from the largest |value| ``top`` of n rows of ``d``
    features and their weights' float64 ``total`` (n when not ``weighted``): what a fit on
    rows it does not hold (a dask array's blocks) checks from the first pass's maxima."""
    what = f"sample_weight summing to {total:.3g}" if weighted else f"{n:,} rows"
    check_sum_bound(
        total * 4.0 * d * top * top, 16.0,
        lambda reach, limit: (
            f"X has values up to {top:.3g} and {what}: the sum of squared distances a fit "
            f"minimises (at most 4 x n_features x |value|^2 a row"
            f"{', weighted' if weighted else ''}) can reach {reach} (a fit's limit, in "
            f"float64: {limit:.3g}): scale {'X or sample_weight' if weighted else 'X'}."))


def check_sum_bound(bound: float, room: float, message: Any) -> None:
    """A float64 sum (an objective, an energy) of at most ``bound``, a Python float (inf
    beyond float64, no error): within float64's largest / ``room``, else a ValueError of
    ``message(reach, limit)``, ``reach`` the bound as text ("more than float64 holds" when
    inf). Beyond it sums overflow to inf and comparisons of them mean nothing."""
    limit = float(np.finfo(np.float64).max) / room
    if bound > limit:
        raise ValueError(message(float_text(bound), limit))


def float_text(value: float) -> str:
    """``value`` in 3 significant digits, or "more than float64 holds" for +-inf."""
    return f"{value:.3g}" if math.isfinite(value) else "more than float64 holds"


def exact_sum(values: Any) -> float:
    """sum(values), correctly rounded (independent of their order, :func:`math.fsum`); +-inf
    where the exact sum is beyond float64 (fsum raises there)."""
    try:
        return math.fsum(values)
    except OverflowError:     # the sign tells which way
        with np.errstate(over="ignore"):
            half = float(np.sum(np.asarray(values, dtype=np.float64) / 2))
        return math.copysign(math.inf, half)


def check_magnitude(values: np.ndarray, d: int, name: str = "X", fit: bool = False) -> float:
    """``values`` (of data with ``d`` features) finite and small enough for squared distances
    in their precision, else a ValueError naming ``name`` and the limit; with ``fit``, a
    largest |value| that is not zero must be at least :func:`min_abs` (below it the squared
    distances lose their precision or vanish, and the labels are wrong). Rows to label or
    centers near zero are not held to it: their distances to the fitted data are not small.
    Returns the largest |value|."""
    top = extent(values, name)
    limit = max_abs(values.dtype, d)
    hint = " or pass float64" if values.dtype == np.float32 else ""
    if top > limit:
        raise ValueError(f"{name} has values up to {top:.3g}; squared distances overflow "
                         f"{values.dtype} above |value| = {limit:.3g} (at {d} features): "
                         f"scale {name}{hint}.")
    if fit:
        check_underflow(top, values.dtype, name)
    return top


def check_underflow(top: float, dtype: np.dtype, name: str = "X") -> None:
    """Data a fit clusters, of ``dtype``, whose largest |value| ``top`` is not zero: at least
    :func:`min_abs` (below it the squared distances lose their precision or vanish, and the
    labels are wrong), else a ValueError naming ``name`` and the limit."""
    dtype = np.dtype(dtype)
    low = min_abs(dtype)
    if 0 < top < low:
        hint = " or pass float64" if dtype == np.float32 else ""
        raise ValueError(f"{name} has values only up to {top:.3g}; squared distances "
                         f"underflow {dtype} below |value| = {low:.3g}: scale "
                         f"{name}{hint}.")


def check_centers(C: Any, X: np.ndarray, name: str = "centers") -> np.ndarray:
    """Centers for X: a finite (k, n_features) array of X's dtype, k >= 1, as check_data."""
    if isinstance(C, np.ndarray) and C.dtype != X.dtype and C.dtype.kind == "f":
        raise ValueError(f"{name} must have X's dtype {X.dtype}, got {C.dtype}.")
    C = check_data(C, name, dtype=X.dtype)
    if C.shape[1] != X.shape[1]:
        raise ValueError(f"{name} must have {X.shape[1]} columns like X, got shape {C.shape}.")
    return C


def check_sample_weight(sample_weight: Any, n_samples: int, dtype: np.dtype) -> np.ndarray:
    """Sample weights as a contiguous array of ``dtype``: ones when None; finite and >= 0."""
    if sample_weight is None:
        return np.ones(n_samples, dtype=dtype)
    with np.errstate(over="ignore"):    # weights beyond X's dtype: named below
        if isinstance(sample_weight, numbers.Number):
            sw = np.full(n_samples, sample_weight, dtype=dtype)
        else:
            sw = check_array(sample_weight, "sample_weight", dtype=dtype, ndim=1,
                             finite=False)
    if sw.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {sw.shape}.")
    if not np.isfinite(sw).all():
        raw = np.asarray(sample_weight, dtype=np.float64)
        if np.isfinite(raw).all():      # finite, but beyond X's dtype
            raise ValueError(f"sample_weight has values up to {float(abs(raw).max()):.3g}, "
                             f"beyond {np.dtype(dtype)}'s largest "
                             f"({float(np.finfo(dtype).max):.3g}; X is {np.dtype(dtype)}): "
                             "scale sample_weight.")
        extent(sw, "sample_weight")       # NaN or infinity: check_array's message
    if (sw < 0).any():
        raise ValueError("sample_weight must be finite and >= 0.")
    if not sw.sum() > 0:
        raise ValueError("sample_weight must have a positive sum; all weights are zero.")
    return np.ascontiguousarray(sw)


def check_random_state(seed: Any) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a legacy RandomState."""
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1, size=4))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise ValueError("random_state must be None, a non-negative int, a numpy Generator or "
                     f"a numpy RandomState, got {seed!r}.")


def draw_seed(rng: np.random.Generator) -> int:
    """A 64-bit seed for a kernel's random streams."""
    return int(rng.integers(0, 2**64, dtype=np.uint64, endpoint=False))


def check_walk_steps(value: Any, auto: int) -> int:
    """Random-walk proposals per iteration: an integer >= 0, or "auto" (then ``auto``)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError(f"walk_steps must be 'auto' or an integer >= 0, got {value!r}.")
        return int(auto)
    return check_int(value, "walk_steps", 0)


def check_real(value: Any, name: str, low: Optional[float] = None,
               high: Optional[float] = None, *, low_open: bool = False) -> float:
    """A finite real number in [low, high] (either end optional; ``low_open``: > low), else a
    ValueError naming ``name``.

    Python and numpy reals and 0-d real arrays are accepted; booleans,
    strings, complex numbers, NaN and infinities are not.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    v = float(value)
    below = low is not None and (v <= low if low_open else v < low)
    if not np.isfinite(v) or below or (high is not None and v > high):
        if low is None and high is None:
            what = "finite"
        elif high is None:
            what = f"finite and {'>' if low_open else '>='} {low:g}"
        elif low is None:
            what = f"finite and <= {high:g}"
        else:
            what = f"in {'(' if low_open else '['}{low:g}, {high:g}]"
        raise ValueError(f"{name} must be {what}, got {value!r}.")
    return v


def check_int(value: Any, name: str, low: int, high: Optional[int] = None) -> int:
    """An integer in [low, high] (high optional), else a ValueError naming ``name``."""
    validate_params({name: value}, {name: [Interval("int", low, high)]})
    return int(value)


# -- declarative parameter checks -------------------------------------------------------------
# An estimator lists, per parameter, what it accepts (``_parameter_constraints``, as
# scikit-learn's estimators do); :func:`validate_params` checks them all in one call and the
# error names the parameter and every accepted form.

class Interval:
    """Numbers of one kind ("int" or "real") in a range; either end optional, ``closed`` on
    "both", "left", "right" or "neither" side. Booleans, NaN and infinities never match."""

    def __init__(self, kind: str, low: Optional[float] = None, high: Optional[float] = None,
                 *, closed: str = "both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def matches(self, value: Any) -> bool:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        number = numbers.Integral if self.kind == "int" else numbers.Real
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, number):
            return False
        v = int(value) if self.kind == "int" else float(value)   # no rounding of large ints
        if self.kind != "int" and not np.isfinite(v):
            return False
        low_ok = self.low is None or (v >= self.low if self.closed in ("both", "left")
                                      else v > self.low)
        high_ok = self.high is None or (v <= self.high if self.closed in ("both", "right")
                                        else v < self.high)
        return low_ok and high_ok

    def __str__(self) -> str:
        what = "an integer" if self.kind == "int" else "a real number"
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        low, high = (self._text(v) for v in (self.low, self.high))
        if self.low is not None and self.high is not None:
            return f"{what} in {'[' if left else '('}{low}, {high}{']' if right else ')'}"
        if self.low is not None:
            return f"{what} {'>=' if left else '>'} {low}"
        if self.high is not None:
            return f"{what} {'<=' if right else '<'} {high}"
        return what

    def _text(self, v: Optional[float]) -> str:
        if v is None:
            return ""
        return str(int(v)) if self.kind == "int" else f"{v:g}"


class Options:
    """One of the given strings."""

    def __init__(self, *values: str):
        self.values = values

    def matches(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def __str__(self) -> str:
        return repr(self.values[0]) if len(self.values) == 1 else f"one of {self.values}"


class Kind:
    """Anything ``test`` accepts, described by ``text`` ("a callable", "an array of ...")."""

    def __init__(self, test: Any, text: str):
        self.test, self.text = test, text

    def matches(self, value: Any) -> bool:
        return bool(self.test(value))

    def __str__(self) -> str:
        return self.text


def _is_random_state(value: Any) -> bool:
    return (value is None or isinstance(value, (np.random.Generator, np.random.RandomState))
            or (isinstance(value, numbers.Integral) and not isinstance(value, bool)
                and value >= 0))


#: Constraints several estimators share.
CALLABLE = Kind(callable, "a callable")
NONE = Kind(lambda v: v is None, "None")
BOOLEAN = Kind(lambda v: isinstance(v, (bool, np.bool_)), "a boolean")
RANDOM_STATE = Kind(_is_random_state, "None, a non-negative int, a numpy Generator or a numpy "
                                      "RandomState")


def validate_params(params: dict, constraints: dict) -> None:
    """Check every parameter against its list of accepted forms (:class:`Interval`,
    :class:`Options`, :class:`Kind`); the first that fails raises a ValueError naming the
    parameter, every accepted form and the value given."""
    for name, accepted in constraints.items():
        value = params[name]
        if not any(c.matches(value) for c in accepted):
            forms = [str(c) for c in accepted]
            what = forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]
            raise ValueError(f"{name} must be {what}, got {value!r}.")


def check_float_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """float32 or float64 as a numpy dtype, else a ValueError naming ``name``."""
    try:
        dt = None if dtype is None else np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt not in FLOAT_DTYPES:
        raise ValueError(f"{name} must be float32 or float64, got {dtype!r}.")
    return dt


def check_grid(grid: Any, name: str = "grid") -> Tuple[int, int]:
    """A grid of regions (H, W): a pair of integers >= 1, else a ValueError naming ``name``."""
    if (not isinstance(grid, (tuple, list)) or len(grid) != 2
            or not all(isinstance(g, numbers.Integral) and not isinstance(g, (bool, np.bool_))
                       and g >= 1 for g in grid)):
        raise ValueError(f"{name} must be a pair (H, W) of positive integers, got {grid!r}.")
    return int(grid[0]), int(grid[1])


# -- integer arrays and buffers updated in place (what kernels index by and write to) --------
def integer_array(a: Any, name: str) -> np.ndarray:
    """``a`` as an array of integers (any shape), else a ValueError naming ``name``."""
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError) as exc:        # ragged nested sequences
        raise ValueError(f"{name} must be an array of integers: {exc}") from None
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must be an array of integers, got dtype {arr.dtype}.")
    return arr


def check_indices(a: Any, name: str, shape: Optional[Tuple[int, ...]], high: Any, *,
                  dtype: Any = np.int32) -> np.ndarray:
    """``a`` as a C-contiguous ``dtype`` array of ``shape`` (None: any 1-D) with
    0 <= a < high (high may be an array broadcast against a); a ValueError naming ``name``
    otherwise."""
    arr = integer_array(a, name)
    if shape is None:
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}.")
    elif arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}.")
    if arr.size and ((arr < 0).any() or (arr >= high).any()):
        bad = np.argwhere((arr < 0) | (arr >= high))[0]
        at = tuple(int(i) for i in bad)
        lim = np.broadcast_to(np.asarray(high), arr.shape)[at]
        raise ValueError(f"{name}{list(at)} = {arr[at]} is out of range [0, {lim}).")
    return np.ascontiguousarray(arr, dtype=dtype)


def check_inplace(a: Any, name: str, shape: Tuple[int, ...]) -> np.ndarray:
    """An array updated in place: must already be C-contiguous float64 of ``shape``."""
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64 and a.flags.c_contiguous
            and a.shape == tuple(shape)):
        got = (f"{a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray)
               else type(a).__name__)
        raise ValueError(f"{name} must be a C-contiguous float64 array of shape {tuple(shape)} "
                         f"(it is updated in place), got {got}.")
    return a


class _NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted estimator (scikit-learn's, when it is installed)."""


class _ConvergenceWarning(UserWarning):
    """Warns that a fit did not reach the requested solution quality (scikit-learn's, when it
    is installed)."""


#: Names resolved on first use (PEP 562): scikit-learn's classes, so that its users catch
#: ours, without importing scikit-learn (about a second) when gmmfast is imported. Use them
#: as ``_validation.NotFittedError`` at the point of raising/warning, not by a module-level
#: ``from ... import``, which would resolve them at import time.
_SKLEARN_CLASSES = {"NotFittedError": _NotFittedError, "ConvergenceWarning": _ConvergenceWarning}


def check_input_file(path: Any) -> None:
    """Raise ValueError, naming ``path``, unless it is a regular file: a folder cannot be
    read, and a pipe or a device would be read without end or block (``os.stat`` opens
    nothing). A missing file is left to the reader's error."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a folder, not a file of points.")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file (a pipe, a device or a socket); "
                         "points are read from a file.")


def __getattr__(name: str) -> Any:
    if name not in _SKLEARN_CLASSES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        import sklearn.exceptions
        value = getattr(sklearn.exceptions, name)
    except ImportError:  # pragma: no cover - exercised only without scikit-learn
        value = _SKLEARN_CLASSES[name]
    globals()[name] = value
    return value


_CONTROLLER = None


def blas_single_threaded():
    """Context in which BLAS uses one thread (our OpenMP threads call it in parallel).

    The threadpool controller is built once: scanning the loaded libraries
    costs about a millisecond, which small fits would otherwise pay each time.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


def check_threads(n_threads: Any, name: str = "n_threads") -> int:
    """Threads for a kernel: an integer >= 1, capped at what the machine runs (a huge request
    would make OpenMP fail to start its team)."""
    import os

    from ._kernels._common import openmp_max_threads
    n = check_int(n_threads, name, 1)
    return min(n, max(int(openmp_max_threads()), os.cpu_count() or 1))
