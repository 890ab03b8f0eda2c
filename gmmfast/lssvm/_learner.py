"""LatentSSVM: latent structural SVMs trained by CCP or by G-MM (random or biased bounds)."""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, Callable, Optional, Union

import numpy as np

from .._base import BaseEstimator, _same
from .._validation import (NONE, RANDOM_STATE, Interval, Kind, Options, blas_single_threaded,
                           check_random_state, validate_params)
from ..core import generalized_mm
from ._dcd import check_dcd_model
from ._family import LSSVMBounds
from ._models import LatentModel, check_model_loss_matrix, check_n_latent
from ._multifold import MultifoldBias
from ._potts_bias import PottsBias

METHODS = ("ccp", "gmm-random", "gmm-biased")
RANDOM_BOUNDS = ("walk", "subset")
SOLVERS = ("cutting-plane", "bcfw", "dcd")
NAMED_INITS = ("center", "top-left", "random")
#: Random-walk proposals per latent variable (per example for one-variable models) and
#: iteration when walk_steps="auto".
AUTO_STEPS_PER_EXAMPLE = 10
BIASES = ("multifold", "potts")
#: tol = inf is accepted, as generalized_mm accepts it: training stops at the first gap.
INFINITY = Kind(lambda v: (isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                           and v == math.inf), "inf")


class LatentInitWarning(UserWarning):
    """The initial latent values carry no signal: their bound is minimised at w = 0.

    Then F(w_1) = F(0), the gap d_1 = b_1(w_1) - F(w_1) is 0 and Algorithm 1
    stops at t = 1 with the null model, whatever the bound selection. This
    happens when, for every class, the features of that class's fixed latent
    values can be balanced by a mixture of the other classes' candidates (0 is
    in the subdifferential of the first bound at 0), as for random latent
    values on data whose candidates carry no class signal, and always for
    random part labels in a model whose class-dependence is only through the
    parts (RegionPartModel). Catch it with ``warnings.catch_warnings``.
    """


class FirstBoundWarning(UserWarning):
    """Training stopped at t = 1: the first bound's gap was within ``tol``, no latent value moved.

    The gap d_1 = b_1(w_1) - F(w_1) measures how much the latent completion at
    w_1 could still lower the bound; when it is at most tol * F(w_0) Algorithm 1
    stops before selecting a second bound, so the model is the first bound's
    minimiser and ``latent_`` is the initialisation. This is a near-fixed point
    of the completion, not necessarily a good model: random part labels in a
    model with class-specific parts give every part of a class about the same
    template, so every labeling scores about the same (d_1 ~ 1e-4 F(w_0) on the
    texture scenes) and a smaller ``tol`` lets CCP and G-MM move on from it. With
    d_1 = 0 the initial values are an exact fixed point (every example's initial
    value scores highest at w_1, as when few examples in many dimensions are
    separated by any fixed latent values): no tol helps, and G-MM, whose
    freedom is a fraction of d_1, cannot move either. Catch it with
    ``warnings.catch_warnings``.
    """


def objective_at_zero(model: LatentModel, y: np.ndarray) -> float:
    """F(0) = mean_i max_y Delta(y_i, y): the objective of the null model on labels ``y``
    (``model.loss_matrix()`` checked: a model written in Python may return any array)."""
    Lm = check_model_loss_matrix(model)
    return float(np.mean(Lm[y].max(axis=1)))


def _lam_floor(R: float, solver_tol: float, f0: float) -> float:
    """4 eps R^2 / (solver_tol F(0)): see :meth:`LatentSSVM._check_lam_floor`."""
    return 4.0 * np.finfo(np.float64).eps * R * R / (solver_tol * f0)


def lam_floor(model: LatentModel, X: Any, y: Any, solver_tol: float) -> float:
    """The smallest ``lam`` :meth:`LatentSSVM.fit` accepts for ``model`` on examples ``X``
    with labels ``y`` (integers) at ``solver_tol``; 0 when the model bounds no feature norm
    (fit then checks nothing). On a subset of X (a cross-validation fold) the feature-norm
    bound R is at most X's, so with the 0-1 loss (F(0) = 1 on any labels) the floor is at
    most this one."""
    R = model.feature_norm_bound(model.prepare(X))
    f0 = objective_at_zero(model, np.asarray(y))
    if R is None or not R > 0 or not f0 > 0:
        return 0.0
    return float(_lam_floor(R, solver_tol, f0))


def named_latent_init(model: LatentModel, data: Any, init: str,
                      rng: np.random.Generator) -> np.ndarray:
    """Latent values "center" / "top-left" (nearest candidate to (0.5, 0.5) / (0, 0)) or "random".

    "random" draws every latent variable uniformly among its values (shape
    (n,) + latent_shape); "center" and "top-left" need one latent int per
    example and its candidates' positions.
    """
    nl = np.asarray(model.n_latent(data))
    n = nl.shape[0]
    if init == "random":
        return np.floor(rng.random(nl.shape) * nl).astype(np.int32)
    pos = model.latent_positions(data)
    if pos is None:
        raise ValueError(f"latent_init={init!r} needs a model that knows the positions of its "
                         "latent values (e.g. LatentMulticlassModel(positions=...)); pass an "
                         "array of latent values or 'random'.")
    target = np.array([0.5, 0.5]) if init == "center" else np.array([0.0, 0.0])
    dist = ((np.asarray(pos, dtype=np.float64) - target) ** 2).sum(axis=1)
    z = np.empty(n, dtype=np.int32)
    for L in np.unique(nl):
        z[nl == L] = int(np.argmin(dist[:L]))
    return z


class LatentSSVM(BaseEstimator):
    """Latent structural SVM (Yu & Joachims 2009) trained by CCP or by G-MM.

    Minimises the LS-SVM objective (paper eq. 8)::

        F(w) = lam/2 ||w||^2 + 1/n sum_i [max_{y,z} (w.phi(x_i,y,z) + Delta(y,y_i))
                                         - max_z w.phi(x_i,y_i,z)]

    by bounds that fix the latent values z_i in the last term (section 4.2).
    "ccp" picks the bound that touches F (latent completion, CCCP); the G-MM
    methods pick any bound whose value at the previous solution is at most
    v = eta F + (1 - eta) b of the previous iteration: at random
    ("gmm-random") or maximising a bias ("gmm-biased"; multi-fold MIL by
    default, section 4.3). Each bound is minimised by a warm-started bound
    solver (``solver``; the 1-slack cutting plane by default).

    Parameters
    ----------
    model : LatentModel
        e.g. :class:`LatentMulticlassModel`.
    lam : float > 0, default=0.01
        lambda of the objective.
    method : {"ccp", "gmm-random", "gmm-biased"}, default="ccp"
    eta : float in (0, 1], default=0.1
        Progress coefficient of G-MM (ignored by "ccp"; eta = 1 gives CCP).
    bias : "multifold", "potts", MultifoldBias, PottsBias or callable, default="multifold"
        Bias of "gmm-biased". "multifold" is ``MultifoldBias(n_folds)``; pass a
        MultifoldBias to set its solver tolerance. "potts" is ``PottsBias()``,
        the coherence of region labelings (paper eq. 16; needs a model with a
        ``grid``, e.g. :class:`RegionPartModel`). A callable
        ``bias(family, w_prev, z_prev)`` returns a table of gains g_i(z) (shape
        (n,) + latent_shape + (max_latent,)); the valid bound maximising
        sum_i g_i(z_i) is chosen (Lagrangian relaxation of the budget).
    n_folds : int, default=10
        Folds K of the multi-fold bias.
    random_bounds : {"walk", "subset"}, default="walk"
        Random bounds of "gmm-random": the uniform random walk over valid
        latent configurations, or the paper's experimental scheme (CCP values
        for a random subset S_t, grown until the bound is valid).
    walk_steps : int or "auto", default="auto"
        Random-walk proposals per iteration; "auto" is 10 per latent variable
        (per example for one-variable models).
    tol : float >= 0, default=1e-3
        Stop when the gap d_t = b_t(w_t) - F(w_t) is at most tol * F(w_0).
    max_iter : int, default=100
        G-MM (or CCP) iterations.
    solver : {"cutting-plane", "bcfw", "dcd"}, default="cutting-plane"
        Bound minimiser: the 1-slack cutting plane (Joachims et al. 2009),
        block-coordinate Frank-Wolfe (Lacoste-Julien et al. 2013) or dual
        coordinate ascent over per-example working sets ("dcd", liblinear's
        Crammer-Singer method extended to latent labellings; needs a model with
        ``dcd_epoch``, i.e. LatentMulticlassModel); all warm-started across
        iterations, all stopped by a certified duality gap.
    solver_tol : float > 0, default=1e-4
        Duality-gap tolerance of each bound minimisation (whichever ``solver``),
        relative to F(w_0).
    solver_max_iter : int, default=500
        Cutting planes (or BCFW / DCD epochs) per bound minimisation.
    random_state : None, int or numpy Generator
    verbose : int, default=0
        Show a progress bar.
    cp_tol, cp_max_iter : deprecated
        The old names of ``solver_tol`` and ``solver_max_iter`` (they govern every
        solver, not only the cutting plane); still accepted with a
        DeprecationWarning, to be removed in gmmfast 0.3.

    Attributes
    ----------
    coef_ : ndarray (size_joint_feature,)
        w. For LatentMulticlassModel, w.reshape(n_classes, d)[y] scores class y.
    latent_ : ndarray of int32 (n,) + latent_shape
        The latent values of the last bound (the imputed z that ``coef_`` was trained with).
    latent_init_ : ndarray of int32 (n,) + latent_shape
    objective_ : float
        ``F(coef_)``.
    n_iter_ : int
    history_ : gmmfast.core.History
        Bound values, thresholds, gaps per iteration (``invariant_violations()``).
    solve_info_ : list of SolveInfo
        Bound-solver statistics per iteration (iterations, certified gap, primal, dual).
    n_kept_previous_ : int
        Iterations where the solver's answer had a larger bound value than w_{t-1}
        (the bound is solved to a tolerance), so w_{t-1} was kept: this keeps
        b_t(w_t) <= b_t(w_{t-1}) exactly.
    converged_ : bool
        Whether the gap reached tol before max_iter.
    bias_ : MultifoldBias, PottsBias or callable or None
        The bias used by "gmm-biased" (a MultifoldBias keeps its folds and fold statistics,
        a PottsBias its multipliers and energies per iteration).
    """

    _parameter_constraints: dict = {
        "model": [Kind(lambda m: isinstance(m, LatentModel), "a gmmfast.lssvm.LatentModel")],
        "lam": [Interval("real", 0, None, closed="neither")],
        "method": [Options(*METHODS)],
        "eta": [Interval("real", 0, 1, closed="right")],
        "bias": [Options(*BIASES),
                 Kind(lambda b: callable(b) or hasattr(b, "select_valid"),
                      "a MultifoldBias, a PottsBias or a callable bias(family, w_prev, z_prev) "
                      "-> gain table")],
        "n_folds": [Interval("int", 2)],
        "random_bounds": [Options(*RANDOM_BOUNDS)],
        "walk_steps": [Options("auto"), Interval("int", 0)],
        "tol": [Interval("real", 0), INFINITY],
        "max_iter": [Interval("int", 1)],
        "solver": [Options(*SOLVERS)],
        "solver_tol": [Interval("real", 0, None, closed="neither")],
        "solver_max_iter": [Interval("int", 1)],
        "random_state": [RANDOM_STATE],
        "verbose": [Interval("int", 0)],
        "cp_tol": [NONE, Interval("real", 0, None, closed="neither")],
        "cp_max_iter": [NONE, Interval("int", 1)],
    }

    def __init__(self, model: LatentModel, *, lam: float = 0.01, method: str = "ccp",
                 eta: float = 0.1, bias: Union[str, Callable] = "multifold", n_folds: int = 10,
                 random_bounds: str = "walk", walk_steps: Union[int, str] = "auto",
                 tol: float = 1e-3, max_iter: int = 100, solver: str = "cutting-plane",
                 solver_tol: float = 1e-4, solver_max_iter: int = 500,
                 random_state: Any = None, verbose: int = 0, cp_tol: Optional[float] = None,
                 cp_max_iter: Optional[int] = None):
        self.model = model
        self.lam = lam
        self.method = method
        self.eta = eta
        self.bias = bias
        self.n_folds = n_folds
        self.random_bounds = random_bounds
        self.walk_steps = walk_steps
        self.tol = tol
        self.max_iter = max_iter
        self.solver = solver
        self.solver_tol = solver_tol
        self.solver_max_iter = solver_max_iter
        self.cp_tol = cp_tol
        self.cp_max_iter = cp_max_iter
        self.random_state = random_state
        self.verbose = verbose

    # -- validation -------------------------------------------------------------
    def _fit_params(self, data: Any) -> dict:
        """The parameters as fit uses them (checked against ``_parameter_constraints``
        first): "auto" walk steps for this data, the values of the deprecated names, and a
        model that has the DCD kernels when solver="dcd"."""
        model = self.model
        if self.solver == "dcd":
            check_dcd_model(model)
        n_vars = int(np.prod(model.latent_shape(data), dtype=np.int64))
        walk_steps = self.walk_steps
        if isinstance(walk_steps, str):          # "auto"
            walk_steps = AUTO_STEPS_PER_EXAMPLE * model.n_samples(data) * n_vars
        return dict(lam=float(self.lam), eta=float(self.eta), tol=float(self.tol),
                    max_iter=int(self.max_iter), walk_steps=int(walk_steps),
                    n_folds=int(self.n_folds),
                    solver_tol=float(self._renamed("cp_tol", "solver_tol", 1e-4)),
                    solver_max_iter=int(self._renamed("cp_max_iter", "solver_max_iter", 500)),
                    verbose=int(self.verbose))

    @staticmethod
    def _warn_stopped_at_first_bound(res: Any, f0: float, p: dict) -> None:
        """LatentInitWarning (w_1 = 0) or FirstBoundWarning (no latent value updated) when
        the run stopped, converged, at t = 1."""
        if not (res.n_iter == 1 and res.converged):
            return
        if res.history.objective[0] > f0 - p["solver_tol"] * f0:
            warnings.warn(
                f"the first bound (the initial latent values) is minimised at w = 0 (to the "
                f"solver tolerance): F(w_1) = {res.history.objective[0]:.6g} against F(0) = "
                f"{f0:.6g}, the gap d_1 is 0 and training stopped at t = 1 with a null model. "
                "The initial latent values carry no signal this model can use (typical of "
                "random latent values); start from informative ones (e.g. 'center', coherent "
                "labels) or check that the data carry class information.",
                LatentInitWarning, stacklevel=3)
        elif p["max_iter"] > 1:
            d1 = float(res.history.gap[0])
            if d1 > 0:
                why = (f"the first bound's gap d_1 = {d1:.3g} is at most tol * F(w_0) = "
                       f"{p['tol'] * f0:.3g}, so no latent value was updated and the model is "
                       "the first bound's minimiser. The initial latent values are close to a "
                       "fixed point of the latent completion (random part labels with "
                       "class-specific parts are one: every part template is about the class "
                       "mean); "
                       f"a tol below {d1 / f0:.2g} trains on from them.")
            else:
                why = ("the initial latent values are a fixed point of the latent completion "
                       "(d_1 = 0: at w_1 every example's initial value scores highest), so "
                       "no latent value was updated and neither CCP nor G-MM can move (G-MM's "
                       "freedom is a fraction of d_1). Typical when the features separate the "
                       "training set with any fixed latent values (few examples, many "
                       "dimensions): use more examples, a larger lam or other initial values.")
            warnings.warn("training stopped at t = 1: " + why, FirstBoundWarning, stacklevel=3)

    @staticmethod
    def _check_lam_floor(model: LatentModel, data: Any, lam: float, solver_tol: float,
                         f0: float) -> None:
        """Reject a lam below which no bound can be minimised to the solver tolerance.

        Every solver works with the dual gradient g_k = b_k - a_k.(A'alpha) / lam
        (a_k = plane or labelling features, ||a_k|| <= 2R where R bounds ||phi||),
        which double precision gives only to eps ||a_k||^2 / lam = 4 eps R^2 / lam;
        a duality gap of solver_tol F(0) cannot be certified below that:
        lam >= 4 eps R^2 / (solver_tol F(0)).
        """
        R = model.feature_norm_bound(data)
        if R is None or not R > 0:
            return
        floor = _lam_floor(R, solver_tol, f0)
        if not lam >= floor:
            raise ValueError(
                f"lam={lam!r} is too small for this data: below 4 eps R^2 / (solver_tol F(0)) "
                f"= {floor:.3g} (eps = machine epsilon, R = max ||phi|| = {R:.3g}) the rounding "
                "error of the solvers' dual gradients exceeds the tolerance solver_tol * F(0), "
                f"so no bound can be minimised to it. Use lam >= {floor:.3g} (or a larger "
                "solver_tol, or rescale the features).")

    @staticmethod
    def _check_scores_at_zero(family: LSSVMBounds) -> None:
        """The loss-augmented pass at w = 0 (the one the first bound's check makes) free of
        NaN and infinity: else a joint feature is not finite (0 * NaN = 0 * inf = NaN), a
        ValueError naming the model (it was reported as a first bound not touching F). The
        base class's enumeration checks every feature it reads (naming joint_feature and the
        example); this catches a model whose own batch methods give NaN or infinity."""
        aug = family.at(family.w0).aug
        if (np.isnan(aug.table).any() or not np.isfinite(aug.H).all()
                or not np.isfinite(aug.phi_sum).all()):
            name = type(family.model).__name__
            raise ValueError(f"{name}'s scores at w = 0 are NaN or infinite: its joint "
                             f"features must be finite ({name}.joint_feature, or its "
                             "loss_augmented / latent_table, gave NaN or infinity).")

    def _fresh_bias(self) -> Any:
        """The bias of "gmm-biased" as fit uses it, its parameters checked (before any work,
        so that a bad one fails fast and leaves the estimator as it was): "multifold" and
        "potts" built, a MultifoldBias or PottsBias copied (fit never mutates params), a
        callable as it is."""
        bias = self.bias
        if isinstance(bias, str):
            bias = MultifoldBias(int(self.n_folds)) if bias == "multifold" else PottsBias()
        elif isinstance(bias, MultifoldBias):
            bias = MultifoldBias(bias.n_folds, tol=bias.tol, max_iter=bias.max_iter)
        elif isinstance(bias, PottsBias):
            bias = bias.fresh()
        if isinstance(bias, (MultifoldBias, PottsBias)):
            bias.check_params()
        return bias

    def _check_bias_fits(self, bias: Any, data: Any, n: int) -> None:
        """The bias usable on these data (checked before any pass over them): the multifold
        bias needs 2 examples, the Potts bias a model with a grid of regions."""
        if isinstance(bias, MultifoldBias):
            bias.check_n_samples(n)
        elif isinstance(bias, PottsBias):
            bias.check_model(self.model, tuple(self.model.latent_shape(data)))

    def _renamed(self, old: str, new: str, default: Any) -> Any:
        """The value of parameter ``new``, or of its deprecated name ``old`` (with a warning)."""
        value = getattr(self, old)
        if value is None:
            return getattr(self, new)
        warnings.warn(f"{old} is deprecated (it governs every bound solver, not only the cutting "
                      f"plane) and will be removed in gmmfast 0.3; use {new}.",
                      DeprecationWarning, stacklevel=4)
        if not _same(getattr(self, new), default):
            raise ValueError(f"give either {new} or its deprecated name {old}, not both "
                             f"({new}={getattr(self, new)!r}, {old}={value!r}).")
        return value

    def _check_y(self, y: Any, n: int) -> np.ndarray:
        arr = np.asarray(y)
        if arr.shape != (n,):
            raise ValueError(f"y must have shape ({n},) (one label per example), got {arr.shape}.")
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise ValueError(f"y must contain integer labels in [0, {self.model.n_classes - 1}], "
                             f"got dtype {arr.dtype}.")
        C = self.model.n_classes
        if arr.size and (arr.min() < 0 or arr.max() >= C):
            raise ValueError(f"y must contain labels in [0, {C - 1}] (n_classes={C}); found "
                             f"{arr.min()}..{arr.max()}.")
        return np.ascontiguousarray(arr, dtype=np.int32)

    def _latent_init(self, data: Any, latent_init: Any, rng: np.random.Generator) -> np.ndarray:
        model = self.model
        n = model.n_samples(data)
        nl = check_n_latent(model, data, (n,) + tuple(model.latent_shape(data)))
        if latent_init is None:
            latent_init = "center" if model.latent_positions(data) is not None else "random"
        if isinstance(latent_init, str):
            if latent_init not in NAMED_INITS:
                raise ValueError(f"latent_init must be one of {NAMED_INITS} or an array of "
                                 f"{n} latent values, got {latent_init!r}.")
            return named_latent_init(model, data, latent_init, rng)
        z = np.asarray(latent_init)
        if z.shape != nl.shape or z.dtype.kind not in "iu":
            what = f"{n} integer latent values" if nl.ndim == 1 else \
                f"integer latent values of shape {nl.shape}"
            raise ValueError(f"latent_init must be one of {NAMED_INITS} or {what}, got dtype "
                             f"{z.dtype} and shape {z.shape}.")
        bad = np.argwhere((z < 0) | (z >= nl))
        if bad.size:
            at = tuple(int(a) for a in bad[0])
            where = at[0] if len(at) == 1 else at
            raise ValueError(f"latent_init[{where}] = {z[at]} is out of range: example "
                             f"{at[0]} has latent values 0..{nl[at] - 1} there.")
        return np.array(z, dtype=np.int32, order="C")    # a copy: latent_init_ is ours

    # -- fitting ------------------------------------------------------------------
    def fit(self, X: Any, y: Any, latent_init: Any = None) -> "LatentSSVM":
        """Train on examples X with labels y.

        Parameters
        ----------
        X : the model's input (LatentMulticlassModel: (n, L, d) array or list of (L_i, d) arrays)
        y : array of int, shape (n,), labels in [0, n_classes)
        latent_init : "center", "top-left", "random" or array of int (n,), optional
            The first bound's latent values. Default: "center" when the model
            knows its candidates' positions, else "random".

        Returns
        -------
        self

        Warns
        -----
        LatentInitWarning
            The first bound is minimised at w = 0: the initial latent values carry no signal.
        FirstBoundWarning
            Training stopped at t = 1 (max_iter > 1) with the first bound's gap within tol:
            no latent value was updated.
        """
        validate_params(self.get_params(), self._parameter_constraints)
        bias = self._fresh_bias() if self.method == "gmm-biased" else None
        model = self.model
        data = model.prepare(X)
        n = model.n_samples(data)
        p = self._fit_params(data)
        if bias is not None:
            self._check_bias_fits(bias, data, n)
        y = self._check_y(y, n)
        rng = check_random_state(self.random_state)
        z0 = self._latent_init(data, latent_init, rng)
        f0 = objective_at_zero(model, y)
        if not f0 > 0:
            raise ValueError("F(0) = mean_i max_y Delta(y_i, y) is 0: the loss never "
                             "penalises any label, there is nothing to learn.")
        self._check_lam_floor(model, data, p["lam"], p["solver_tol"], f0)
        # the input is valid: from here an interruption (Ctrl-C) or a failure leaves the
        # estimator unfitted, never half-updated (every attribute is set at the end)
        self._fitted = False
        with blas_single_threaded():
            family = LSSVMBounds(model, data, y, p["lam"], z0,
                                 solver_tol=p["solver_tol"] * f0,
                                 solver_max_iter=p["solver_max_iter"],
                                 random_bounds=self.random_bounds,
                                 walk_steps=p["walk_steps"], solver=self.solver,
                                 seed=int(rng.integers(2**63)))
            self._check_scores_at_zero(family)
            if family.bound_value(z0, family.w0) != family.objective(family.w0):
                raise ValueError("the latent initialisation does not touch F at w = 0; the "
                                 "model's scores at w = 0 must all be 0.")
            method, eta = self.method, p["eta"]
            if method == "ccp":
                selection, eta = "mm", 1.0
            elif method == "gmm-random":
                selection = "random"
            else:
                if isinstance(bias, (MultifoldBias, PottsBias)):
                    bias.setup(family, rng)
                selection = bias
            res = self._run(family, p, eta, selection, rng)
        self._warn_stopped_at_first_bound(res, f0, p)
        self.coef_ = res.w
        self.latent_ = family.z_prev if family.z_prev is not None else z0
        self.latent_init_ = z0
        self.objective_ = float(res.objective)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.history_ = res.history
        self.solve_info_ = family.solve_info
        self.bias_ = selection if not isinstance(selection, str) else None
        if isinstance(self.bias_, MultifoldBias):
            self.bias_.release()         # keep its folds and statistics, not the data
        self.n_kept_previous_ = family.kept_previous
        self._fitted = True
        return self

    def _run(self, family, p, eta, selection, rng):
        callback, bar = None, None
        if p["verbose"]:
            from tqdm.auto import tqdm
            bar = tqdm(total=p["max_iter"], desc=f"LatentSSVM {self.method}", leave=False)

            def callback(t, history):
                bar.update(1)
                bar.set_postfix(objective=f"{history.objective[-1]:.5g}",
                                gap=f"{history.gap[-1]:.3g}")
        try:
            return generalized_mm(family, family.w0, eta=eta, tol=p["tol"],
                                  max_iter=p["max_iter"], selection=selection,
                                  random_state=rng, callback=callback)
        finally:
            if bar is not None:
                bar.close()

    # -- prediction ---------------------------------------------------------------
    def _prepare_test(self, X: Any) -> Any:
        self._check_is_fitted()
        data = self.model.prepare(X)
        self.model.check_size(data, self.coef_.shape[0])
        return data

    def predict(self, X: Any, return_latent: bool = False):
        """argmax_y max_z w.phi(x, y, z) for each example (and the maximising z if asked)."""
        data = self._prepare_test(X)
        n = self.model.n_samples(data)
        y0 = np.zeros(n, dtype=np.int32)
        with blas_single_threaded():
            aug = self.model.loss_augmented(data, y0, self.coef_, np.arange(n, dtype=np.int64),
                                            augment=False)
        return (aug.y_hat, aug.z_hat) if return_latent else aug.y_hat

    def score(self, X: Any, y: Any) -> float:
        """Classification accuracy on (X, y)."""
        data = self._prepare_test(X)
        y = self._check_y(y, self.model.n_samples(data))
        return float(np.mean(self.predict(data) == y))

    def objective(self, X: Any, y: Any) -> float:
        """``F(coef_)`` on (X, y) with this estimator's lam."""
        data = self._prepare_test(X)
        y = self._check_y(y, self.model.n_samples(data))
        zshape = (self.model.n_samples(data),) + tuple(self.model.latent_shape(data))
        fam = LSSVMBounds(self.model, data, y, float(self.lam), np.zeros(zshape, dtype=np.int32),
                          solver_tol=1.0, solver_max_iter=1)
        return fam.objective(np.asarray(self.coef_, dtype=np.float64))
