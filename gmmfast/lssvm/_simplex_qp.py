"""The simplex QP of the cutting plane: maximise b.a - a'Ga / (2 lam) over the simplex.

The dual of the cutting plane's restricted problem (one variable per plane).
Active-set steps first (exact on the support, robust to a singular Gram
matrix), then SMO in our own kernel (:func:`gmmfast._kernels._lssvm.simplex_qp`),
in chunks so that Ctrl-C stops a long solve.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .._kernels import _lssvm as kernels
from .._validation import check_array, check_int, check_real

__all__ = ["solve_simplex_qp"]


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


#: Negative eigenvalues of G down to -PSD_RTOL * K * max|G_ij| are rounding (those of a Gram
#: matrix A A' computed in float64 are at most about K d eps max|G_ij| in magnitude, d the
#: columns of A) and accepted; below that G is not positive semi-definite.
PSD_RTOL = 1e-8


def _check_psd(G: np.ndarray, scale: float) -> None:
    """G (symmetric to rounding, largest |entry| ``scale``) positive semi-definite to
    rounding, else a ValueError naming G and its smallest eigenvalue. A Cholesky
    factorisation of the symmetrised G + tol I (tol = PSD_RTOL K scale) settles the common
    case; the eigenvalues, only when it fails."""
    K = G.shape[0]
    tol = PSD_RTOL * K * scale
    S = (G + G.T) / 2
    try:
        np.linalg.cholesky(S + tol * np.eye(K))
        return
    except np.linalg.LinAlgError:
        pass
    low = float(np.linalg.eigvalsh(S)[0])
    if low < -tol:
        raise ValueError(f"G must be a symmetric positive semi-definite Gram matrix; its "
                         f"smallest eigenvalue is {low:.3g} (below the rounding tolerance "
                         f"-{tol:.3g}): the QP is not concave and its maximiser is not found.")


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
        A symmetric positive semi-definite Gram matrix (finite; eigenvalues down to
        -1e-8 K max|G_ij| are taken for rounding).
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
    _check_psd(G, scale)
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
        steps, fw = kernels.simplex_qp(G, b, lam, alpha, tol, chunk)
        done += steps
        if steps < chunk:            # converged, or no step can make progress
            break
    return float(fw)
