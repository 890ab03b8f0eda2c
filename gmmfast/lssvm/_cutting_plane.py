"""Minimising one LS-SVM bound: the 1-slack cutting-plane method (Joachims, Finley, Yu 2009).

A bound fixes the latent values z of the examples ``idx`` (m of them)::

    b_z(w) = lam/2 ||w||^2 + 1/m sum_i [ max_{y,z'} (w.phi(x_i,y,z') + Delta(y_i,y)) - w.phi(x_i,y_i,z_i) ]

In the 1-slack form this is min over w, xi of lam/2 ||w||^2 + xi subject to
xi >= b_k + w.a_k for every joint labelling k, where a labelling
(y^_i, z^_i)_i gives b_k = 1/m sum Delta(y_i, y^_i) and
a_k = P_k - psi(z), with P_k = 1/m sum phi(x_i, y^_i, z^_i) and
psi(z) = 1/m sum phi(x_i, y_i, z_i). The method keeps a working set of
planes, solves the dual of the restricted problem (a QP over the simplex,
solved by our own SMO kernel :func:`gmmfast._kernels._lssvm.simplex_qp`),
adds the most violated plane at the new w (loss-augmented inference) and
stops when the duality gap ``min_w P(w) - D(alpha)`` over the evaluated
points is at most ``tol``. D(alpha) is a lower bound on min b_z for any
alpha on the simplex (weak duality), so the gap is a certificate.

Warm starts. The planes are stored as (P_k, b_k), which do not depend on z:
every stored plane is a valid cut for every bound of the family, so the
working set and the dual variables carry over from one G-MM iteration to the
next and only a = P - psi(z) is recomputed. The returned w is the best
evaluated point, and the start point is evaluated first, so the answer is
never worse (by the solver's own evaluation) than the warm start.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _lssvm as K
from .._validation import check_array, check_int, check_real
from ._models import Augmented, LatentModel, check_weights

__all__ = ["BoundSolver", "CuttingPlane", "SolveInfo", "solve_simplex_qp"]


def _lu_solve(M: np.ndarray, rhs: np.ndarray) -> Optional[np.ndarray]:
    """M x = rhs by LU when M is safely non-singular (small backward error), else None."""
    try:
        x = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(x)):
        return None
    scale = float(np.abs(M).max()) * float(np.abs(x).max()) + float(np.abs(rhs).max())
    if float(np.abs(M @ x - rhs).max()) > 1e-10 * scale:
        return None
    cond_bound = float(np.abs(x).max())
    if cond_bound > 1e8:       # huge coordinates on a simplex: a near-singular system
        return None
    return x


def _active_set(G: np.ndarray, b: np.ndarray, lam: float, alpha: np.ndarray, tol: float,
                max_iter: int) -> None:
    """Primal active-set steps for max b.a - a'Ga/(2 lam) on the simplex, from ``alpha`` (in place).

    On the support S the KKT system, scaled by lam so that its conditioning does
    not depend on lam, is G_SS x + nu 1 = lam b_S, 1'x = 1 (nu = lam mu), solved
    by least squares. Three cases:

    - it has no solution: G_SS is singular (more planes than dimensions, or
      repeated planes) and the least-squares residual d satisfies G_SS d = 0,
      1'd = 0, b_S.d > 0, a direction in which the objective grows linearly;
      alpha moves along it until a coordinate reaches 0, which leaves;
    - x >= 0: the maximum on the face; the most violating outside coordinate
      (largest b - Ga/lam above mu) enters, or the loop ends;
    - else the step towards x stops where a coordinate reaches 0, which leaves.

    Non-finite or inaccurate solutions (1'x = 1 not met to 1e-9) end the loop early, alpha
    still on the simplex: SMO finishes the job.
    """
    S = list(np.flatnonzero(alpha > 0))
    scale = max(float(np.max(np.abs(np.diag(G)))), 1e-300)
    for _ in range(max_iter):
        k = len(S)
        GS = G[np.ix_(S, S)]
        M = np.empty((k + 1, k + 1))
        M[:k, :k] = GS
        M[:k, k] = 1.0
        M[k, :k] = 1.0
        M[k, k] = 0.0
        rhs = np.append(lam * b[S], 1.0)
        cur = alpha[S]
        sol = _lu_solve(M, rhs)
        if sol is None:            # singular or ill-conditioned: the SVD tells which
            try:
                U, sv, Vt = np.linalg.svd(M)
            except np.linalg.LinAlgError:
                return
            keep = sv > sv[0] * (k + 1) * np.finfo(float).eps
            sol = Vt[keep].T @ ((U[:, keep].T @ rhs) / sv[keep])
            if not np.all(np.isfinite(sol)):
                return
        else:
            keep = np.ones(1, dtype=bool)
        if not keep.all():
            # null vectors v of M: G_SS v_x = 0 and 1'v_x = 0 (then v's last entry is 0);
            # the one most aligned with b_S is a direction of linear ascent unless b_S is
            # orthogonal to them all (then the system has solutions and sol is one)
            N = Vt[~keep, :k]
            bn = N @ b[S]
            r = int(np.argmax(np.abs(bn)))
            d = N[r] * np.sign(bn[r])
            d -= d.mean()
            nd = float(np.linalg.norm(d))
            if (nd > 0.5 and float(b[S] @ d) > 1e-10 * float(np.abs(b[S]).sum())
                    and float(np.linalg.norm(GS @ d)) <= 1e-9 * scale * nd):
                neg = d < 0
                t = float((cur[neg] / -d[neg]).min())
                new = np.maximum(cur + t * d, 0.0)
                new[new < 1e-15] = 0.0
                if not new.sum() > 0:
                    return
                alpha[S] = new / new.sum()
                S = [s_ for s_ in S if alpha[s_] > 0]
                continue
        x, mu = sol[:k], sol[k] / lam
        if not abs(float(x.sum()) - 1.0) <= 1e-9:
            # 1'x = 1 lost to rounding (lam b much larger than G): the rest is SMO's
            return
        if np.all(x >= 0):
            alpha[:] = 0.0
            alpha[S] = x
            g = b - G @ alpha / lam
            g[S] = -np.inf
            j = int(np.argmax(g))
            if g[j] - mu <= tol:
                return
            S.append(j)
            S.sort()
        else:
            neg = x < cur
            ratios = cur[neg] / (cur[neg] - x[neg])
            t = float(min(1.0, ratios.min()))
            new = cur + t * (x - cur)
            new[new < 1e-15] = 0.0
            if not new.sum() > 0:
                return
            alpha[S] = new
            alpha /= alpha.sum()
            S = [s_ for s_ in S if alpha[s_] > 0]
            if not S:
                return


#: Largest magnitude of the entries of G, b and G / lam that solve_simplex_qp accepts: below
#: it every quantity of the SMO steps (gradients, their squared differences, curvatures) is
#: finite in float64.
QP_MAX_ABS = 1e150


def solve_simplex_qp(G: Any, b: Any, lam: float, alpha: Optional[Any] = None,
                     tol: float = 1e-10, max_iter: int = 10_000_000) -> Tuple[np.ndarray, float]:
    """Maximise b.a - a'Ga / (2 lam) over the simplex; returns (alpha, dual value).

    Active-set steps (exact on the support, robust to a singular ``G``) then SMO
    (:func:`gmmfast._kernels._lssvm.simplex_qp`) until the Frank-Wolfe gap
    max_k g_k - alpha.g <= tol, g = b - G alpha / lam, which bounds the distance
    to the maximum by tol.

    Parameters
    ----------
    G : array (K, K)
        A symmetric positive semi-definite Gram matrix (finite).
    b : array (K,)
    lam : float > 0
        The entries of G, b and G / lam must be at most ``QP_MAX_ABS`` = 1e150 in
        magnitude (divide b and G by the same number to scale a problem: the
        maximiser does not change).
    alpha : array (K,), optional
        Start: a point of the simplex (default: uniform). Not modified.
    tol : float >= 0
        Absolute, in units of the objective.
    max_iter : int >= 1
        SMO steps (after the active-set steps).
    """
    b = check_array(b, "b", dtype=np.float64, ndim=1)
    K_ = b.shape[0]
    G = check_array(G, "G", dtype=np.float64, ndim=2)
    if G.shape != (K_, K_):
        raise ValueError(f"G must have shape ({K_}, {K_}) (one row and column per entry of b), "
                         f"got {G.shape}.")
    scale = max(float(np.abs(G).max()), 1e-300)
    if not np.allclose(G, G.T, rtol=0.0, atol=1e-12 * scale) or (np.diag(G) < 0).any():
        raise ValueError("G must be a symmetric positive semi-definite Gram matrix; it is not "
                         "symmetric or has a negative diagonal entry.")
    lam = check_real(lam, "lam", 0.0, low_open=True)
    tol = check_real(tol, "tol", 0.0)
    max_iter = check_int(max_iter, "max_iter", 1)
    for name, top in (("G", scale), ("b", float(np.abs(b).max())), ("G / lam", scale / lam)):
        if not top <= QP_MAX_ABS:
            raise ValueError(f"{name} has entries up to {top:.3g} in magnitude (lam={lam!r}); "
                             f"the solver accepts at most {QP_MAX_ABS:g} for G, b and G / lam: "
                             "divide b and G by the same number (the maximiser is the same).")
    if alpha is None:
        alpha = np.full(K_, 1.0 / K_)
    else:
        alpha = np.array(check_array(alpha, "alpha", dtype=np.float64, ndim=1))
        if alpha.shape != (K_,) or (alpha < 0).any() or abs(alpha.sum() - 1.0) > 1e-9:
            raise ValueError(f"alpha must be a point of the simplex: {K_} non-negative numbers "
                             f"summing to 1, got shape {alpha.shape} and sum "
                             f"{alpha.sum() if alpha.size else 0.0!r}.")
        alpha /= alpha.sum()
    _qp(G, b, lam, alpha, tol, max_iter)
    return alpha, float(alpha @ b - alpha @ G @ alpha / (2 * lam))


#: SMO steps per kernel call: between calls Python can raise KeyboardInterrupt (Ctrl-C).
QP_CHUNK = 1 << 16


def _qp(G: np.ndarray, b: np.ndarray, lam: float, alpha: np.ndarray, tol: float,
        max_iter: int) -> float:
    """Active-set steps, then SMO in chunks of QP_CHUNK steps; returns the Frank-Wolfe gap."""
    _active_set(G, b, lam, alpha, tol, max_iter=2 * b.shape[0] + 10)
    done, fw = 0, np.inf
    while done < max_iter:
        chunk = min(QP_CHUNK, max_iter - done)
        steps, fw = K.simplex_qp(G, b, lam, alpha, tol, chunk)
        done += steps
        if steps < chunk:            # converged, or no step can make progress
            break
    return float(fw)


def check_solver_args(model: Any, data: Any, y: Any, idx: Any, lam: float, tol: float,
                      max_iter: int) -> Tuple[Any, np.ndarray, np.ndarray, float, float, int]:
    """Validate a bound solver's arguments: returns (data, y as int32 labels of every example,
    idx as a non-empty int64 array of example indices, lam, tol, max_iter). The model checks
    y and idx again at every pass (O(n) with numpy)."""
    lam = check_real(lam, "lam", 0.0, low_open=True)
    tol = check_real(tol, "tol", 0.0, low_open=True)
    max_iter = check_int(max_iter, "max_iter", 1)
    if not isinstance(model, LatentModel):
        raise ValueError(f"model must be a gmmfast.lssvm.LatentModel, got {model!r:.80}.")
    data, y, idx = model._batch(data, y, idx)
    if idx.size == 0:
        raise ValueError("idx must be a non-empty 1-D array of example indices, got none.")
    R = model.feature_norm_bound(data)
    if R is not None and not np.isfinite(16.0 * R * R / lam):
        # the planes' Gram entries are up to 4 R^2; over lam, with room for their differences
        raise ValueError(f"the joint features of X (norms up to {R:.3g}) overflow the solver's "
                         f"arithmetic at lam={lam!r}: 16 R^2 / lam must be finite; scale X or "
                         "use a larger lam.")
    return data, y, idx, lam, tol, max_iter


class BoundSolver:
    """What the bound solvers share: the validated training set (model, data, y, the examples
    ``idx``), lam, the stopping rule (tol, max_iter), and one loss-augmented pass at a point.

    Subclasses define ``solve(z, w_start, aug_start=None) -> (w, Augmented, SolveInfo)``.
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, idx: np.ndarray, lam: float, *,
                 tol: float, max_iter: int, table: bool = False):
        data, y, idx, lam, tol, max_iter = check_solver_args(model, data, y, idx, lam, tol,
                                                             max_iter)
        self.model, self.data, self.y, self.idx = model, data, y, idx
        self.lam, self.tol, self.max_iter = lam, tol, max_iter
        self.table = bool(table)
        self.m = int(idx.shape[0])
        self.D = int(model.size_joint_feature(data))
        self.n_passes = 0

    def evaluate(self, w: np.ndarray) -> Augmented:
        """One loss-augmented pass at w over the examples (the plane and the primal value)."""
        self.n_passes += 1
        return self.model.loss_augmented(self.data, self.y, w, self.idx, table=self.table, phi=True)

    def _start(self, w_start: Any, aug_start: Optional[Augmented]
               ) -> Tuple[np.ndarray, Augmented]:
        """The start point checked (a vector of D reals, the same object when it is one already
        in float64) and its pass (evaluated unless given)."""
        w_start = check_weights(w_start, self.D, "w_start")
        if aug_start is None:
            return w_start, self.evaluate(w_start)
        if not isinstance(aug_start, Augmented):
            raise ValueError(f"aug_start must be None or the Augmented pass at w_start, got "
                             f"{type(aug_start).__name__}.")
        return w_start, aug_start


@dataclass
class SolveInfo:
    """Statistics of one bound minimisation."""

    n_iter: int          # planes added (= loss-augmented passes after the start point)
    gap: float           # final certified duality gap P(w) - D(alpha)
    primal: float        # P(w) of the returned w (solver's evaluation)
    dual: float
    n_planes: int        # working-set size at the end
    converged: bool


class CuttingPlane(BoundSolver):
    """The 1-slack cutting-plane solver for the bounds of one training set.

    Parameters
    ----------
    model : LatentModel
    data, y : the model's data and int32 labels (all examples)
    idx : int64 array
        The examples of this training set (all of them, or the other folds).
    lam : float
        Regularisation lambda.
    tol : float
        Absolute duality-gap tolerance.
    max_iter : int
        Cap on planes added per solve.
    table : bool
        Ask the passes for the latent score table (the G-MM family caches it).
    max_planes, inactive_limit : int
        Working-set cap; a plane inactive (alpha = 0) for ``inactive_limit``
        consecutive QPs is dropped.
    """

    def __init__(self, model: Any, data: Any, y: np.ndarray, idx: np.ndarray, lam: float, *,
                 tol: float, max_iter: int, table: bool = False, max_planes: int = 500,
                 inactive_limit: int = 50):
        super().__init__(model, data, y, idx, lam, tol=tol, max_iter=max_iter, table=table)
        self.max_planes = check_int(max_planes, "max_planes", 1)
        self.inactive_limit = check_int(inactive_limit, "inactive_limit", 0)
        self.P = np.empty((0, self.D))   # plane feature means P_k
        self.b = np.empty(0)             # plane losses b_k
        self.age = np.empty(0, dtype=np.int64)
        self.alpha: Optional[np.ndarray] = None   # [zero plane, planes...]

    def primal(self, w: np.ndarray, aug: Augmented, psi: np.ndarray) -> float:
        """P(w) = lam/2 ||w||^2 + 1/m sum_i H_i - psi.w."""
        return 0.5 * self.lam * float(w @ w) + float(aug.H.sum()) / self.m - float(psi @ w)

    def _add(self, aug: Augmented) -> None:
        self.P = np.vstack([self.P, aug.phi_sum[None, :] / self.m])
        self.b = np.append(self.b, aug.loss_sum / self.m)
        self.age = np.append(self.age, 0)
        if self.alpha is not None:
            self.alpha = np.append(self.alpha, 0.0)

    def _prune(self) -> None:
        keep = self.age <= self.inactive_limit
        if keep.sum() > self.max_planes:
            order = np.argsort(self.age, kind="stable")
            keep = np.zeros_like(keep)
            keep[order[: self.max_planes]] = True
        if keep.all():
            return
        drop_mass = float(self.alpha[1:][~keep].sum())
        self.P, self.b, self.age = self.P[keep], self.b[keep], self.age[keep]
        self.alpha = np.concatenate([[self.alpha[0] + drop_mass], self.alpha[1:][keep]])

    def solve(self, z: np.ndarray, w_start: np.ndarray, aug_start: Optional[Augmented] = None
              ) -> Tuple[np.ndarray, Augmented, SolveInfo]:
        """Minimise b_z from ``w_start``; returns the best point, its pass and statistics.

        ``z`` holds the latent values of the examples ``idx`` (in that order);
        ``aug_start`` is the pass at ``w_start`` if already known.
        """
        lam, m = self.lam, self.m
        psi = self.model.phi_sum(self.data, self.y, z, self.idx) / m
        w_start, aug_start = self._start(w_start, aug_start)
        best_w, best_aug = w_start, aug_start
        best_p = self.primal(w_start, aug_start, psi)
        self._add(aug_start)
        if self.alpha is None:
            self.alpha = np.zeros(1 + self.b.shape[0])
            self.alpha[0] = 1.0
        A = self.P - psi                                  # rows a_k (zero plane excluded)
        G = np.zeros((A.shape[0] + 1, A.shape[0] + 1))
        G[1:, 1:] = A @ A.T
        dual, gap, it, converged = -np.inf, np.inf, 0, False
        while True:
            bb = np.concatenate([[0.0], self.b])
            # the restricted QP needs no more accuracy than a fraction of the current gap
            qp_tol = 0.1 * self.tol if not np.isfinite(gap) else max(0.1 * self.tol, 0.01 * gap)
            _qp(G, bb, lam, self.alpha, qp_tol, 10_000_000)
            a = self.alpha[1:]
            w = -(a @ A) / lam
            dual = float(a @ self.b) - 0.5 * lam * float(w @ w)
            gap = best_p - dual
            if gap <= self.tol:
                converged = True
                break
            if it >= self.max_iter:
                break
            aug = self.evaluate(w)
            p = self.primal(w, aug, psi)
            if p < best_p:
                best_w, best_aug, best_p = w, aug, p
            it += 1
            gap = best_p - dual
            if gap <= self.tol:
                converged = True
                break
            active = self.alpha[1:] > 0
            self.age[active] = 0
            self.age[~active] += 1
            n_before = self.b.shape[0]
            self._prune()
            if self.b.shape[0] != n_before:
                A = self.P - psi
                G = np.zeros((A.shape[0] + 1, A.shape[0] + 1))
                G[1:, 1:] = A @ A.T
            self._add(aug)
            a_new = self.P[-1] - psi
            row = A @ a_new
            A = np.vstack([A, a_new[None, :]])
            k = A.shape[0]
            G2 = np.zeros((k + 1, k + 1))
            G2[:k, :k] = G
            G2[k, 1:k] = row
            G2[1:k, k] = row
            G2[k, k] = float(a_new @ a_new)
            G = G2
        info = SolveInfo(n_iter=it, gap=float(gap), primal=float(best_p), dual=float(dual),
                         n_planes=int(self.b.shape[0]), converged=converged)
        return best_w, best_aug, info
