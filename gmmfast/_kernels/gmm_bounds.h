/* The incremental Lloyd pass's scan of the bounds (kmeans_lazy_pass), in C.
 *
 * 1. gmm_lazy_keep: which rows of a batch keep their label on their loosened bounds alone
 *    (no read of X, no write); the others are listed for the kernel's checks and search.
 * 2. gmm_watch_mark: the watch list's mask of a batch (rows whose bounds may fail within
 *    the mask's caps).
 *
 * Every row of a pass goes through the first, so it is written as one branch-free loop the
 * compiler vectorises (gathers of the per-center shifts by label), compiled for AVX-512,
 * AVX2 and the baseline and chosen by the search's level. The arithmetic is that of the
 * scalar code it replaced, operation for operation, with contraction into fused
 * multiply-adds turned off: every variant keeps the same rows.
 */
#ifndef GMM_BOUNDS_H
#define GMM_BOUNDS_H

#include <stdint.h>
#include "gmm_simd.h"

#if defined(__clang__)
#define GMM_NO_CONTRACT _Pragma("clang fp contract(off)")
#define GMM_NO_CONTRACT_ATTR
#elif defined(__GNUC__)
#define GMM_NO_CONTRACT
#define GMM_NO_CONTRACT_ATTR __attribute__((optimize("fp-contract=off")))
#else
#define GMM_NO_CONTRACT
#define GMM_NO_CONTRACT_ATTR
#endif

/* Rows a call of the scan decides at once (its keep flags live on the stack). */
#define GMM_KEEP_BLOCK 256

/* One row of gmm_lazy_keep: LOW, LOWJ, UP and XSQ are its lower bounds (on the distances
 * to the centers that did not jump and to those that did), its upper bound and ||x||^2, O
 * its label; KEEP gets whether its bounds keep it. */
#define GMM_KEEP_ROW(LOW, LOWJ, UP, XSQ, O, KEEP) {                                         \
    double lb_ = (LOW) - low_shift[O], ub_ = (UP) + up_shift[O];                            \
    double lj_ = (LOWJ) - jump_shift[O], lg_ = jump_gap[O] - ub_;                           \
    lj_ = lj_ > lg_ ? lj_ : lg_;                                                            \
    double l_ = lb_ < lj_ ? lb_ : lj_;                                                      \
    l_ = l_ > 0 ? l_ : 0.0;                                                                 \
    double tau_ = tol * ((XSQ) + maxcsq);                                                   \
    (KEEP) = ub_ * ub_ * (1.0 + 1e-12) + tau_ < l_ * l_;                                    \
}

/* Rows p0..p1-1 (row i = idx[p], or p without idx): a row keeps its label when
 *   ub = upper[i] + up_shift[o], lb = lower[i] - low_shift[o],
 *   lj = max(lower_jumped[i] - jump_shift[o], jump_gap[o] - ub),
 *   l = max(0, min(lb, lj)) (0 if NaN), tau = tol (xsq[i] + maxcsq):
 *   ub^2 (1 + 1e-12) + tau < l^2      (o = labels[i]).
 * The positions p of the rows not kept go to miss[], in order; returns their number. */
#define GMM_DEFINE_LAZY_KEEP(NAME, TARGET)                                                  \
TARGET GMM_NO_CONTRACT_ATTR static intptr_t NAME(                                           \
        const int *restrict labels, const double *restrict upper,                           \
        const double *restrict lower, const double *restrict lower_jumped,                  \
        const double *restrict xsq, const int64_t *restrict idx, intptr_t p0, intptr_t p1,  \
        const double *restrict up_shift, const double *restrict low_shift,                  \
        const double *restrict jump_shift, const double *restrict jump_gap, double tol,     \
        double maxcsq, int64_t *restrict miss) {                                            \
    GMM_NO_CONTRACT                                                                         \
    int keep[GMM_KEEP_BLOCK];                                                               \
    intptr_t m = 0;                                                                         \
    for (intptr_t b0 = p0; b0 < p1; b0 += GMM_KEEP_BLOCK) {                                 \
        intptr_t nb = p1 - b0 < GMM_KEEP_BLOCK ? p1 - b0 : GMM_KEEP_BLOCK;                  \
        if (idx) {                       /* the watched rows */                             \
            for (intptr_t q = 0; q < nb; q++) {                                             \
                int64_t i = idx[b0 + q];                                                    \
                GMM_KEEP_ROW(lower[i], lower_jumped[i], upper[i], xsq[i], labels[i],        \
                             keep[q])                                                       \
            }                                                                               \
        } else {                         /* consecutive rows: no index (vectorised) */      \
            const int *restrict lab = labels + b0;                                          \
            const double *restrict up = upper + b0, *restrict xs = xsq + b0;                \
            const double *restrict lo = lower + b0, *restrict lj = lower_jumped + b0;       \
            for (intptr_t q = 0; q < nb; q++)                                               \
                GMM_KEEP_ROW(lo[q], lj[q], up[q], xs[q], lab[q], keep[q])                   \
        }                                                                                   \
        for (intptr_t q = 0; q < nb; q++) {      /* branch-free: a store per row */         \
            miss[m] = b0 + q;                                                               \
            m += !keep[q];                                                                  \
        }                                                                                   \
    }                                                                                       \
    return m;                                                                               \
}

/* Rows p0..p1-1: mask[p] = 1 unless ub^2 (1 + 1e-12) + tol (xsq[p] + csq_cap) < lb^2, with
 * ub = upper[p] + up_cap[o], lb = max(0, min(lower[p] - low_cap[o], lower_jumped[p] -
 * jump_cap[o])) (0 if NaN), o = labels[p]. */
#define GMM_DEFINE_WATCH_MARK(NAME, TARGET)                                                    \
TARGET GMM_NO_CONTRACT_ATTR static void NAME(                                                \
        const int *restrict labels, const double *restrict upper,                            \
        const double *restrict lower, const double *restrict lower_jumped,                   \
        const double *restrict xsq, intptr_t p0, intptr_t p1,                                \
        const double *restrict up_cap, const double *restrict low_cap,                       \
        const double *restrict jump_cap, double tol, double csq_cap,                         \
        unsigned char *restrict mask) {                                                      \
    GMM_NO_CONTRACT                                                                          \
    for (intptr_t p = p0; p < p1; p++) {                                                     \
        int o = labels[p];                                                                   \
        double ub = upper[p] + up_cap[o];                                                    \
        double lb = lower[p] - low_cap[o], lj = lower_jumped[p] - jump_cap[o];               \
        lb = lb < lj ? lb : lj;                                                              \
        lb = lb > 0 ? lb : 0.0;                                                              \
        mask[p] = !(ub * ub * (1.0 + 1e-12) + tol * (xsq[p] + csq_cap) < lb * lb);           \
    }                                                                                        \
}

#if GMM_X86
GMM_DEFINE_LAZY_KEEP(gmm_lazy_keep_avx512, GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"))
GMM_DEFINE_LAZY_KEEP(gmm_lazy_keep_avx2, GMM_TARGET("avx2,fma"))
GMM_DEFINE_WATCH_MARK(gmm_watch_mark_avx512, GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"))
GMM_DEFINE_WATCH_MARK(gmm_watch_mark_avx2, GMM_TARGET("avx2,fma"))
#endif
GMM_DEFINE_LAZY_KEEP(gmm_lazy_keep_base, )
GMM_DEFINE_WATCH_MARK(gmm_watch_mark_base, )

static intptr_t gmm_lazy_keep(int level, const int *labels, const double *upper,
                              const double *lower, const double *lower_jumped,
                              const double *xsq, const int64_t *idx, intptr_t p0,
                              intptr_t p1, const double *up_shift, const double *low_shift,
                              const double *jump_shift, const double *jump_gap, double tol,
                              double maxcsq, int64_t *miss) {
#if GMM_X86
    if (level == 2)
        return gmm_lazy_keep_avx512(labels, upper, lower, lower_jumped, xsq, idx, p0, p1,
                                    up_shift, low_shift, jump_shift, jump_gap, tol, maxcsq,
                                    miss);
    if (level == 1)
        return gmm_lazy_keep_avx2(labels, upper, lower, lower_jumped, xsq, idx, p0, p1,
                                  up_shift, low_shift, jump_shift, jump_gap, tol, maxcsq,
                                  miss);
#endif
    (void)level;
    return gmm_lazy_keep_base(labels, upper, lower, lower_jumped, xsq, idx, p0, p1, up_shift,
                              low_shift, jump_shift, jump_gap, tol, maxcsq, miss);
}

static void gmm_watch_mark(int level, const int *labels, const double *upper,
                           const double *lower, const double *lower_jumped,
                           const double *xsq, intptr_t p0, intptr_t p1,
                           const double *up_cap, const double *low_cap,
                           const double *jump_cap, double tol, double csq_cap,
                           unsigned char *mask) {
#if GMM_X86
    if (level == 2) {
        gmm_watch_mark_avx512(labels, upper, lower, lower_jumped, xsq, p0, p1, up_cap,
                              low_cap, jump_cap, tol, csq_cap, mask);
        return;
    }
    if (level == 1) {
        gmm_watch_mark_avx2(labels, upper, lower, lower_jumped, xsq, p0, p1, up_cap, low_cap,
                            jump_cap, tol, csq_cap, mask);
        return;
    }
#endif
    (void)level;
    gmm_watch_mark_base(labels, upper, lower, lower_jumped, xsq, p0, p1, up_cap, low_cap,
                        jump_cap, tol, csq_cap, mask);
}

#endif
