/* SIMD kernels of the k-means family, chosen at run time (AVX-512, AVX2, portable).
 *
 * 1. gmm_argmin2_{d,f}: nearest (and second-nearest) center of a list of rows,
 *    vectorised over centers.
 * 2. gmm_minother_{d,f}: the least search value over all centers but one, a lower bound
 *    for the incremental passes' check of the centers that jumped.
 * 3. gmm_pp_{d,f}: one k-means++ step, vectorised over candidates.
 * 4. gmm_ppp_f: one k-means++ step on panels of float rows, vectorised over rows.
 *
 * Nearest-center search:
 *
 * For each point x_i, label_i = first argmin_j (csq_j - 2 x_i . c_j), the
 * ranking of ||x_i - c_j||^2 without ||x_i||^2 (as scikit-learn's Lloyd).
 * Centers come transposed, scaled by -2 (exact) and padded: CT is d x kp,
 * CT[f, j] = -2 c_jf, kp a multiple of
 * gmm_argmin_block_{d,f}() (the centers one block covers); padded centers
 * have csq = +inf and are never chosen.
 *
 * The loop is a small register-blocked gemm: a block of P points against V
 * vectors of W centers, so each loaded vector of centers feeds P fused
 * multiply-adds and each broadcast coordinate feeds V. The running minimum,
 * its index and the second minimum are kept per lane and reduced to the first
 * index of the minimum, exactly what a scalar loop over j returns.
 *
 * Three variants are compiled (AVX-512, AVX2, baseline; GCC/Clang on x86-64)
 * and the best one the processor supports is chosen at run time; other
 * compilers and architectures get the portable variant.
 */
#ifndef GMM_SIMD_H
#define GMM_SIMD_H

#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include "gmm_cost.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define GMM_X86 1
#define GMM_TARGET(t) __attribute__((target(t)))
#else
#define GMM_X86 0
#define GMM_TARGET(t)
#endif
#if GMM_X86
#include <immintrin.h>
#endif

/* Lane-wise minimum and maximum of two vectors of type V (IV: the integer vector of the same
 * lanes): (a < b ? a : b) and (a > b ? a : b), as the x86 min/max instructions define them
 * (the search's values are never NaN). The generic form is a compare and a select; the x86
 * variants use the instructions. */
#define GMM_MIN_GENERIC(V, IV, a, b) ({ V a_ = (a), b_ = (b); IV m_ = a_ < b_;             \
                                        (V)((m_ & (IV)a_) | (~m_ & (IV)b_)); })
#define GMM_MAX_GENERIC(V, IV, a, b) ({ V a_ = (a), b_ = (b); IV m_ = a_ > b_;             \
                                        (V)((m_ & (IV)a_) | (~m_ & (IV)b_)); })
#define GMM_MIN_PS256(V, IV, a, b) ((V)_mm256_min_ps((__m256)(a), (__m256)(b)))
#define GMM_MAX_PS256(V, IV, a, b) ((V)_mm256_max_ps((__m256)(a), (__m256)(b)))
#define GMM_MIN_PD256(V, IV, a, b) ((V)_mm256_min_pd((__m256d)(a), (__m256d)(b)))
#define GMM_MAX_PD256(V, IV, a, b) ((V)_mm256_max_pd((__m256d)(a), (__m256d)(b)))
#define GMM_MIN_PS512(V, IV, a, b) ((V)_mm512_min_ps((__m512)(a), (__m512)(b)))
#define GMM_MAX_PS512(V, IV, a, b) ((V)_mm512_max_ps((__m512)(a), (__m512)(b)))
#define GMM_MIN_PD512(V, IV, a, b) ((V)_mm512_min_pd((__m512d)(a), (__m512d)(b)))
#define GMM_MAX_PD512(V, IV, a, b) ((V)_mm512_max_pd((__m512d)(a), (__m512d)(b)))

/* 2 = AVX-512, 1 = AVX2, 0 = portable (gmm_cost.h's levels). */
static int gmm_argmin_level(void) { return gmm_cpu_level(); }

/* Centers covered by one block of the chosen variant: pad k to a multiple of this. */
static intptr_t gmm_argmin_block_d(int level) { return level == 2 ? 16 : level == 1 ? 8 : 4; }
static intptr_t gmm_argmin_block_f(int level) { return level == 2 ? 32 : level == 1 ? 16 : 8; }

/* The columns both searches scan: a multiple of the variant's vector width W that covers m
 * centers. The columns past it are padding (csq +inf, CT 0: values +inf for finite rows,
 * which change no best, second or index), so k = 100 in float32 searches 112 columns, not the
 * layout's 128. The caller knows m; nothing in the layout is read to find it. */
static intptr_t gmm_search_cols_d(int level, intptr_t m) {
    intptr_t w = level == 2 ? 8 : 4;
    return (m + w - 1) / w * w;
}
static intptr_t gmm_search_cols_f(int level, intptr_t m) {
    intptr_t w = level == 2 ? 16 : 8;
    return (m + w - 1) / w * w;
}

/* ---- nearest and second-nearest center of a list of rows -------------------------------
 *
 * For rows[0..n-1] of X: labels[q] (first minimum of csq_j - 2 x.c_j over the columns
 * j < kc, gmm_search_cols of the number of centers), best[q] that minimum and second[q] the
 * smallest value over the other centers (j != labels[q]), which bounds the distance to
 * every other center from below once ||x||^2 is added and the rounding allowed for. Lanes
 * keep their best and second-best values; the lanes are then merged.
 */
/* Merging the W lanes of one row's search: b = the least of `best` in every lane, bi = the
 * first index holding it (the least index among the lanes whose best is b), s = the least of
 * the other lanes' best values and of the winning lane's second. With GCC, a butterfly of
 * log2(W) shuffles per reduction (the minimum is exact, so the order of the reduction does
 * not change it: the same label, best and second as the scalar loop); other compilers
 * merge lane by lane. */
#if defined(__GNUC__) && !defined(__clang__)
/* Every lane of the vector v (type V, IV the integer vector of its W lanes, IT their type)
 * set to the least of v's lanes, by log2(W) shuffles of the lane indices `lane` (0..W-1). */
#define GMM_LANEMIN_TREE(V, IV, IT, W, v, lane) do {                                         \
        _Pragma("GCC unroll 8")                                                            \
        for (int h = W / 2; h >= 1; h /= 2) {                                              \
            V o = __builtin_shuffle(v, lane ^ (IT)h);                                      \
            IV m = o < v;                                                                  \
            v = (V)((m & (IV)o) | (~m & (IV)v));                                           \
        }                                                                                  \
    } while (0)
#define GMM_DEFINE_MERGE(NAME, T, IT, W, TARGET)                                            \
/* every lane set to the least of v's lanes */                                             \
TARGET static inline NAME##_vec NAME##_lanemin(NAME##_vec v, NAME##_ivec lane) {           \
    GMM_LANEMIN_TREE(NAME##_vec, NAME##_ivec, IT, W, v, lane);                             \
    return v;                                                                              \
}                                                                                          \
TARGET static inline void NAME##_merge(NAME##_vec best, NAME##_vec sec, NAME##_ivec idx,   \
                                       NAME##_ivec lane, NAME##_vec *bout,                 \
                                       NAME##_ivec *biout, NAME##_vec *sout) {             \
    NAME##_vec b = NAME##_lanemin(best, lane);                                             \
    NAME##_ivec eq = best == b;                                                            \
    NAME##_ivec bi = (eq & idx) | (~eq & ((NAME##_ivec){0} + (IT)INT32_MAX));              \
    _Pragma("GCC unroll 8")                                                                \
    for (int h = W / 2; h >= 1; h /= 2) {                                                  \
        NAME##_ivec oi = __builtin_shuffle(bi, lane ^ (IT)h);                              \
        NAME##_ivec m = oi < bi;                                                           \
        bi = (m & oi) | (~m & bi);                                                         \
    }                                                                                      \
    NAME##_ivec win = eq & (idx == bi);                                                    \
    *bout = b;                                                                             \
    *biout = bi;                                                                           \
    *sout = NAME##_lanemin((NAME##_vec)((win & (NAME##_ivec)sec) | (~win & (NAME##_ivec)best)), \
                           lane);                                                          \
}
#else
#define GMM_DEFINE_MERGE(NAME, T, IT, W, TARGET)                                            \
TARGET static inline void NAME##_merge(NAME##_vec best, NAME##_vec sec, NAME##_ivec idx,   \
                                       NAME##_ivec lane, NAME##_vec *bout,                 \
                                       NAME##_ivec *biout, NAME##_vec *sout) {             \
    T b = best[0];                                                                         \
    for (int l = 1; l < W; l++) b = best[l] < b ? best[l] : b;                             \
    IT bi = (IT)INT32_MAX;                                                                 \
    for (int l = 0; l < W; l++) bi = (best[l] == b && idx[l] < bi) ? idx[l] : bi;          \
    T s = (T)INFINITY;                                                                     \
    for (int l = 0; l < W; l++) {                                                          \
        T c = (best[l] == b && idx[l] == bi) ? sec[l] : best[l];                           \
        s = c < s ? c : s;                                                                 \
    }                                                                                      \
    (void)lane;                                                                            \
    *bout = (NAME##_vec){0} + b;                                                           \
    *biout = (NAME##_ivec){0} + bi;                                                        \
    *sout = (NAME##_vec){0} + s;                                                           \
}
#endif

#define GMM_DEFINE_ARGMIN2(NAME, T, IT, W, P, V, TARGET, VMIN, VMAX)                        \
typedef T NAME##_vec __attribute__((vector_size(W * sizeof(T))));                          \
typedef T NAME##_uvec __attribute__((vector_size(W * sizeof(T)), aligned(sizeof(T))));     \
typedef IT NAME##_ivec __attribute__((vector_size(W * sizeof(T))));                        \
                                                                                           \
GMM_DEFINE_MERGE(NAME, T, IT, W, TARGET)                                                   \
                                                                                           \
/* vv (V or 1) vectors of centers from column jb: each of the P rows' values, merged into  */ \
/* its lanes' best, second and index                                                       */ \
TARGET static inline __attribute__((always_inline)) void NAME##_span(                       \
        const T *const *xp, intptr_t d, const T *CT, const T *csq, intptr_t kp, intptr_t jb, \
        const int vv, NAME##_ivec lane, NAME##_vec *best, NAME##_vec *sec, NAME##_ivec *idx) { \
    NAME##_vec acc[P][V];                                                                  \
    for (int v = 0; v < vv; v++) {                                                         \
        NAME##_vec c0 = *(const NAME##_uvec *)(csq + jb + v * W);                          \
        for (int p = 0; p < P; p++) acc[p][v] = c0;                                        \
    }                                                                                      \
    for (intptr_t f = 0; f < d; f++) {                                                     \
        NAME##_vec ct[V];                                                                  \
        for (int v = 0; v < vv; v++) ct[v] = *(const NAME##_uvec *)(CT + f * kp + jb + v * W); \
        for (int p = 0; p < P; p++) {                                                      \
            T a = xp[p][f];                                                                \
            for (int v = 0; v < vv; v++) acc[p][v] += a * ct[v];                           \
        }                                                                                  \
    }                                                                                      \
    for (int v = 0; v < vv; v++) {                                                         \
        NAME##_ivec jv = lane + (IT)(jb + v * W);                                          \
        for (int p = 0; p < P; p++) {                                                      \
            NAME##_vec a = acc[p][v];                                                      \
            NAME##_ivec m1 = a < best[p];                                                  \
            /* second: a if best <= a < second, the old best if a < best */                \
            sec[p] = VMIN(NAME##_vec, NAME##_ivec, sec[p],                                 \
                          VMAX(NAME##_vec, NAME##_ivec, best[p], a));                      \
            best[p] = VMIN(NAME##_vec, NAME##_ivec, best[p], a);                           \
            idx[p] = (m1 & jv) | (~m1 & idx[p]);                                           \
        }                                                                                  \
    }                                                                                      \
}                                                                                          \
                                                                                           \
TARGET static inline void NAME##_block(const T *X, const int64_t *rows, int np, intptr_t d, \
                                       const T *CT, const T *csq, intptr_t kp, intptr_t kc, \
                                       int *labels, T *bestv, T *second) {                 \
    NAME##_ivec lane;                                                                      \
    for (int l = 0; l < W; l++) lane[l] = l;                                               \
    NAME##_vec best[P], sec[P];                                                            \
    NAME##_ivec idx[P];                                                                    \
    for (int p = 0; p < P; p++) {                                                          \
        best[p] = (NAME##_vec){0} + (T)INFINITY;                                           \
        sec[p] = best[p];                                                                  \
        idx[p] = (NAME##_ivec){0};                                                         \
    }                                                                                      \
    const T *xp[P];                                                                        \
    for (int p = 0; p < P; p++) xp[p] = X + rows[p < np ? p : 0] * d;                      \
    intptr_t jb = 0;                                                                       \
    for (; jb + W * V <= kc; jb += W * V)                                                  \
        NAME##_span(xp, d, CT, csq, kp, jb, V, lane, best, sec, idx);                      \
    for (; jb < kc; jb += W)                                                               \
        NAME##_span(xp, d, CT, csq, kp, jb, 1, lane, best, sec, idx);                      \
    for (int p = 0; p < np; p++) {                                                         \
        /* the lanes merged: the least value, the first index holding it, and the least  */ \
        /* of the other lanes' best values and of the winning lane's second               */ \
        NAME##_vec b;                                                                      \
        NAME##_ivec bi;                                                                    \
        NAME##_vec s;                                                                      \
        NAME##_merge(best[p], sec[p], idx[p], lane, &b, &bi, &s);                          \
        labels[p] = (int)bi[0];                                                            \
        bestv[p] = b[0];                                                                   \
        second[p] = s[0];                                                                  \
    }                                                                                      \
}                                                                                          \
                                                                                           \
TARGET static void NAME(const T *X, const int64_t *rows, intptr_t n, intptr_t d,           \
                        const T *CT, const T *csq, intptr_t kp, intptr_t kc, int *labels,  \
                        T *bestv, T *second) {                                             \
    intptr_t q = 0;                                                                        \
    for (; q + P <= n; q += P)                                                             \
        NAME##_block(X, rows + q, P, d, CT, csq, kp, kc, labels + q, bestv + q, second + q); \
    if (q < n)                                                                             \
        NAME##_block(X, rows + q, (int)(n - q), d, CT, csq, kp, kc, labels + q, bestv + q, \
                     second + q);                                                          \
}

GMM_DEFINE_ARGMIN2(gmm_argmin2_d_base, double, int64_t, 4, 2, 1, , GMM_MIN_GENERIC,
                   GMM_MAX_GENERIC)
GMM_DEFINE_ARGMIN2(gmm_argmin2_f_base, float, int32_t, 8, 2, 1, , GMM_MIN_GENERIC,
                   GMM_MAX_GENERIC)
#if GMM_X86
/* AVX2, as AVX-512: 4 points x 2 vectors, 8 independent accumulators (FMA's latency times its
 * two ports); the best/second/index vectors wait in memory during the loop over features
 * (with 2 points the loop ran at half the FMA throughput). */
GMM_DEFINE_ARGMIN2(gmm_argmin2_d_avx2, double, int64_t, 4, 4, 2, GMM_TARGET("avx2,fma"),
                   GMM_MIN_PD256, GMM_MAX_PD256)
GMM_DEFINE_ARGMIN2(gmm_argmin2_f_avx2, float, int32_t, 8, 4, 2, GMM_TARGET("avx2,fma"),
                   GMM_MIN_PS256, GMM_MAX_PS256)
GMM_DEFINE_ARGMIN2(gmm_argmin2_d_avx512, double, int64_t, 8, 4, 2,
                   GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"), GMM_MIN_PD512,
                   GMM_MAX_PD512)
GMM_DEFINE_ARGMIN2(gmm_argmin2_f_avx512, float, int32_t, 16, 8, 2,
                   GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"), GMM_MIN_PS512,
                   GMM_MAX_PS512)
#endif

/* Call NAME's variant for `level` (2 = AVX-512, 1 = AVX2, else portable) with the arguments
 * that follow: one dispatcher body for every kernel family. */
#if GMM_X86
#define GMM_DISPATCH(level, NAME, ...) do {                                                   \
        if ((level) == 2) { NAME##_avx512(__VA_ARGS__); return; }                            \
        if ((level) == 1) { NAME##_avx2(__VA_ARGS__); return; }                              \
        NAME##_base(__VA_ARGS__);                                                            \
    } while (0)
#else
#define GMM_DISPATCH(level, NAME, ...) do { (void)(level); NAME##_base(__VA_ARGS__); } while (0)
#endif

static void gmm_argmin2_d(int level, const double *X, const int64_t *rows, intptr_t n,
                          intptr_t d, const double *CT, const double *csq, intptr_t kp, intptr_t kc,
                          int *labels, double *best, double *second) {
    GMM_DISPATCH(level, gmm_argmin2_d, X, rows, n, d, CT, csq, kp, kc, labels, best, second);
}

/* Kernel twin, kept for speed: the float dispatcher mirrors the double one (C has no templates). */
static void gmm_argmin2_f(int level, const float *X, const int64_t *rows, intptr_t n,
                          intptr_t d, const float *CT, const float *csq, intptr_t kp, intptr_t kc,
                          int *labels, float *best, float *second) {
    GMM_DISPATCH(level, gmm_argmin2_f, X, rows, n, d, CT, csq, kp, kc, labels, best, second);
}

/* Ask for the next block's rows while this block computes: the rows an incremental pass
 * checks against the jumped centers are scattered over X, so the prefetchers, which follow
 * strides, do not fetch them (asking 4 KB of rows ahead measured no faster; the same in the
 * search, whose rows cost far more arithmetic, no faster either). */
static inline void gmm_prefetch_rows(const void *X, const int64_t *rows, intptr_t m,
                                     intptr_t row_bytes) {
    for (intptr_t q = 0; q < m; q++) {
        const char *r = (const char *)X + rows[q] * row_bytes;
        for (intptr_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(r + b, 0, 3);
    }
}

/* The least of v's lanes: with GCC by log2(W) shuffles (GMM_LANEMIN_TREE, as the search's; a
 * row's chain of W - 1 dependent minimums took a sixth of the check's time at d = 16), by
 * a loop elsewhere. The minimum is exact: the same value either way. */
#if defined(__GNUC__) && !defined(__clang__)
#define GMM_HMIN_BODY(NAME, T, IT, W)                                                        \
    NAME##_ivec lane_;                                                                      \
    for (int l = 0; l < W; l++) lane_[l] = l;                                               \
    GMM_LANEMIN_TREE(NAME##_vec, NAME##_ivec, IT, W, v, lane_);                             \
    return v[0];
#else
#define GMM_HMIN_BODY(NAME, T, IT, W)                                                        \
    T b = v[0];                                                                             \
    for (int l = 1; l < W; l++) b = v[l] < b ? v[l] : b;                                    \
    return b;
#endif

/* ---- least value over all centers but one ----------------------------------------------
 *
 * For rows[0..n-1] of X: out[q] = the least of csq_j - 2 x.c_j over the columns j < kc of the
 * layout (kc a multiple of W, at most kp, the layout's row length) other than own[q] (-1:
 * none). Lower-bounds the distance to every such center once ||x||^2 is added and the
 * rounding allowed for; no label, so the lanes reduce by a minimum only (a few operations a
 * row, against the merge of best, index and second of gmm_argmin2). P rows share each
 * loaded vector of centers.
 */
#define GMM_DEFINE_MINOTHER(NAME, T, IT, W, P, TARGET, VMIN)                                 \
typedef T NAME##_vec __attribute__((vector_size(W * sizeof(T))));                           \
typedef T NAME##_uvec __attribute__((vector_size(W * sizeof(T)), aligned(sizeof(T))));      \
typedef IT NAME##_ivec __attribute__((vector_size(W * sizeof(T))));                         \
TARGET static inline T NAME##_hmin(NAME##_vec v) {                                          \
    GMM_HMIN_BODY(NAME, T, IT, W)                                                           \
}                                                                                           \
TARGET static inline void NAME##_block(const T *X, const int64_t *rows, int np, intptr_t d,  \
                                       const T *CT, const T *csq, intptr_t kp, intptr_t kc,  \
                                       const int *own, T *out) {                            \
    NAME##_ivec lane;                                                                       \
    for (int l = 0; l < W; l++) lane[l] = l;                                                \
    NAME##_vec inf = (NAME##_vec){0} + (T)INFINITY;                                         \
    NAME##_vec best[P];                                                                     \
    NAME##_ivec ownv[P];                                                                    \
    const T *xp[P];                                                                         \
    for (int p = 0; p < P; p++) {                                                           \
        best[p] = inf;                                                                      \
        ownv[p] = (NAME##_ivec){0} + (IT)own[p < np ? p : 0];                               \
        xp[p] = X + rows[p < np ? p : 0] * d;                                               \
    }                                                                                       \
    for (intptr_t jb = 0; jb < kc; jb += W) {                                               \
        NAME##_vec acc[P];                                                                  \
        NAME##_vec c0 = *(const NAME##_uvec *)(csq + jb);                                   \
        for (int p = 0; p < P; p++) acc[p] = c0;                                            \
        for (intptr_t f = 0; f < d; f++) {                                                  \
            NAME##_vec ct = *(const NAME##_uvec *)(CT + f * kp + jb);                       \
            for (int p = 0; p < P; p++) acc[p] += xp[p][f] * ct;                            \
        }                                                                                   \
        NAME##_ivec jv = lane + (IT)jb;                                                     \
        for (int p = 0; p < P; p++) {                                                       \
            NAME##_ivec m = jv == ownv[p];                                                  \
            NAME##_vec a = (NAME##_vec)((m & (NAME##_ivec)inf) | (~m & (NAME##_ivec)acc[p])); \
            best[p] = VMIN(NAME##_vec, NAME##_ivec, best[p], a);                            \
        }                                                                                   \
    }                                                                                       \
    for (int p = 0; p < np; p++) out[p] = NAME##_hmin(best[p]);                             \
}                                                                                           \
TARGET static void NAME(const T *X, const int64_t *rows, intptr_t n, intptr_t d,            \
                        const T *CT, const T *csq, intptr_t kp, intptr_t kc, const int *own, \
                        T *out) {                                                           \
    intptr_t q = 0, rb = d * (intptr_t)sizeof(T);                                           \
    for (; q + P <= n; q += P) {                                                            \
        if (q + 2 * P <= n) gmm_prefetch_rows(X, rows + q + P, P, rb);                      \
        NAME##_block(X, rows + q, P, d, CT, csq, kp, kc, own + q, out + q);                 \
    }                                                                                       \
    if (q < n)                                                                              \
        NAME##_block(X, rows + q, (int)(n - q), d, CT, csq, kp, kc, own + q, out + q);      \
}

GMM_DEFINE_MINOTHER(gmm_minother_d_base, double, int64_t, 4, 4, , GMM_MIN_GENERIC)
GMM_DEFINE_MINOTHER(gmm_minother_f_base, float, int32_t, 8, 4, , GMM_MIN_GENERIC)
#if GMM_X86
GMM_DEFINE_MINOTHER(gmm_minother_d_avx2, double, int64_t, 4, 8, GMM_TARGET("avx2,fma"),
                    GMM_MIN_PD256)
GMM_DEFINE_MINOTHER(gmm_minother_f_avx2, float, int32_t, 8, 8, GMM_TARGET("avx2,fma"),
                    GMM_MIN_PS256)
GMM_DEFINE_MINOTHER(gmm_minother_d_avx512, double, int64_t, 8, 8,
                    GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"), GMM_MIN_PD512)
GMM_DEFINE_MINOTHER(gmm_minother_f_avx512, float, int32_t, 16, 8,
                    GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"), GMM_MIN_PS512)
#endif

static void gmm_minother_d(int level, const double *X, const int64_t *rows, intptr_t n,
                           intptr_t d, const double *CT, const double *csq, intptr_t kp,
                           intptr_t kc, const int *own, double *out) {
    GMM_DISPATCH(level, gmm_minother_d, X, rows, n, d, CT, csq, kp, kc, own, out);
}

/* Kernel twin, kept for speed: the float dispatcher mirrors the double one (C has no templates). */
static void gmm_minother_f(int level, const float *X, const int64_t *rows, intptr_t n,
                           intptr_t d, const float *CT, const float *csq, intptr_t kp,
                           intptr_t kc, const int *own, float *out) {
    GMM_DISPATCH(level, gmm_minother_f, X, rows, n, d, CT, csq, kp, kc, own, out);
}

/* ---- one k-means++ step --------------------------------------------------------------------
 *
 * For the points x_0..x_{n-1} of a chunk and up to tp centers given transposed as doubles
 * (CT, d x tp, tp a multiple of the vector width W; unused lanes are ignored):
 * - if update != 0, lane 0 is the center chosen last: closest_i = min(closest_i, ||x_i - c_0||^2)
 *   and *pot += s_i closest_i (the new potential);
 * - gain[t] += s_i max(0, closest_i - ||x_i - c_t||^2) for every lane t (after the update):
 *   what candidate t would lower the potential by.
 * Sums run in point order (they depend on the chunk only, never on threads). Distances are
 * direct differences accumulated in double, one lane per center, for double rows; float rows
 * take GMM_DEFINE_PPF's float lanes (below).
 */
#define GMM_DEFINE_PP_V(NAME, T, W, V, P, TARGET)                                           \
TARGET static inline void NAME##_v##V(const T *X, intptr_t n, intptr_t d, const double *CT,  \
                                      intptr_t tp, const T *sw, double *closest, int update, \
                                      double *pot, double *gain) {                           \
    NAME##_vec gv[V];                                                                        \
    for (int v = 0; v < V; v++) gv[v] = (NAME##_vec){0};                                   \
    double pt = 0.0;                                                                         \
    for (intptr_t i = 0; i < n; i += P) {                                                    \
        int np = n - i < P ? (int)(n - i) : P;                                               \
        NAME##_vec acc[P][V];                                                                \
        for (int p = 0; p < P; p++) for (int v = 0; v < V; v++) acc[p][v] = (NAME##_vec){0}; \
        const T *xp[P];                                                                      \
        for (int p = 0; p < P; p++) xp[p] = X + (i + (p < np ? p : 0)) * d;                  \
        for (intptr_t f = 0; f < d; f++) {                                                   \
            NAME##_vec ct[V];                                                                \
            for (int v = 0; v < V; v++) ct[v] = *(const NAME##_uvec *)(CT + f * tp + v * W); \
            for (int p = 0; p < P; p++) {                                                    \
                double a = (double)xp[p][f];                                                 \
                for (int v = 0; v < V; v++) {                                                \
                    NAME##_vec t = a - ct[v];                                                \
                    acc[p][v] += t * t;                                                      \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        for (int p = 0; p < np; p++) {                                                       \
            double cl = closest[i + p], s = (double)sw[i + p];                               \
            if (update) {                                                                    \
                if (acc[p][0][0] < cl) { cl = acc[p][0][0]; closest[i + p] = cl; }           \
                pt += s * cl;                                                                \
            }                                                                                \
            NAME##_vec clv = (NAME##_vec){0} + cl;                                           \
            for (int v = 0; v < V; v++) {                                                    \
                NAME##_vec g = clv - acc[p][v];                                              \
                NAME##_ivec pos = g > (NAME##_vec){0};                                       \
                gv[v] += s * (NAME##_vec)(pos & (NAME##_ivec)g);                             \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (update) *pot = pt;                                                                   \
    for (int v = 0; v < V; v++) for (int l = 0; l < W; l++) gain[v * W + l] = gv[v][l];      \
}

#define GMM_DEFINE_PP(NAME, T, W, TARGET)                                                    \
typedef double NAME##_vec __attribute__((vector_size(W * sizeof(double))));                 \
typedef double NAME##_uvec __attribute__((vector_size(W * sizeof(double)), aligned(8)));    \
typedef int64_t NAME##_ivec __attribute__((vector_size(W * sizeof(double))));               \
GMM_DEFINE_PP_V(NAME, T, W, 1, 4, TARGET)                                                    \
GMM_DEFINE_PP_V(NAME, T, W, 2, 4, TARGET)                                                    \
GMM_DEFINE_PP_V(NAME, T, W, 3, 3, TARGET)                                                    \
GMM_DEFINE_PP_V(NAME, T, W, 4, 2, TARGET)                                                    \
/* returns 0, or -1 if tp is not 1 to 4 multiples of W */                                   \
TARGET static int NAME(const T *X, intptr_t n, intptr_t d, const double *CT, intptr_t tp,    \
                       const T *sw, double *closest, int update, double *pot, double *gain) { \
    switch (tp % W ? 0 : tp / W) {                                                           \
    case 1: NAME##_v1(X, n, d, CT, tp, sw, closest, update, pot, gain); return 0;            \
    case 2: NAME##_v2(X, n, d, CT, tp, sw, closest, update, pot, gain); return 0;            \
    case 3: NAME##_v3(X, n, d, CT, tp, sw, closest, update, pot, gain); return 0;            \
    case 4: NAME##_v4(X, n, d, CT, tp, sw, closest, update, pot, gain); return 0;            \
    default: return -1;                                                                      \
    }                                                                                        \
}

/* float rows: the distances in float lanes (2W a vector, direct differences of the float
 * values, summed in float: relative error below (d + 2) 2^-24), twice the lanes of a double
 * vector; the update, the potential and the gains as above, in double. The caller passes
 * CTf, the columns of CT in float, tpf = ceil(tp / 2W) 2W columns (zero past tp). */
#define GMM_DEFINE_PPF_V(NAME, W, V, P, TARGET)                                             \
TARGET static inline void NAME##_f##V(const float *X, intptr_t n, intptr_t d,                \
                                      const float *CTf, intptr_t tp, const float *sw,        \
                                      double *closest, int update, double *pot,              \
                                      double *gain) {                                        \
    enum { TPF = V * 2 * W };                                                                \
    NAME##_vec gv[2 * V];                                                                    \
    for (int v = 0; v < 2 * V; v++) gv[v] = (NAME##_vec){0};                               \
    double pt = 0.0;                                                                         \
    for (intptr_t i = 0; i < n; i += P) {                                                    \
        int np = n - i < P ? (int)(n - i) : P;                                               \
        NAME##_fvec acc[P][V];                                                               \
        for (int p = 0; p < P; p++) for (int v = 0; v < V; v++) acc[p][v] = (NAME##_fvec){0};\
        const float *xp[P];                                                                  \
        for (int p = 0; p < P; p++) xp[p] = X + (i + (p < np ? p : 0)) * d;                  \
        for (intptr_t f = 0; f < d; f++) {                                                   \
            NAME##_fvec ct[V];                                                               \
            for (int v = 0; v < V; v++)                                                      \
                ct[v] = *(const NAME##_ufvec *)(CTf + f * TPF + v * 2 * W);                  \
            for (int p = 0; p < P; p++) {                                                    \
                float a = xp[p][f];                                                          \
                for (int v = 0; v < V; v++) {                                                \
                    NAME##_fvec t = a - ct[v];                                               \
                    acc[p][v] += t * t;                                                      \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
        for (int p = 0; p < np; p++) {                                                       \
            float lanes[TPF];                                                                \
            for (int v = 0; v < V; v++) *(NAME##_ufvec *)(lanes + v * 2 * W) = acc[p][v];   \
            double cl = closest[i + p], s = (double)sw[i + p];                               \
            if (update) {                                                                    \
                if ((double)lanes[0] < cl) { cl = (double)lanes[0]; closest[i + p] = cl; }   \
                pt += s * cl;                                                                \
            }                                                                                \
            NAME##_vec clv = (NAME##_vec){0} + cl;                                           \
            for (int v = 0; v < 2 * V; v++) {                                                \
                NAME##_vec g = clv - __builtin_convertvector(                                \
                    *(const NAME##_uhvec *)(lanes + v * W), NAME##_vec);                     \
                NAME##_ivec pos = g > (NAME##_vec){0};                                       \
                gv[v] += s * (NAME##_vec)(pos & (NAME##_ivec)g);                             \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    if (update) *pot = pt;                                                                   \
    for (int t = 0; t < tp; t++) gain[t] = gv[t / W][t % W];                                 \
}

#define GMM_DEFINE_PPF(NAME, W, TARGET)                                                      \
typedef double NAME##_vec __attribute__((vector_size(W * sizeof(double))));                 \
typedef int64_t NAME##_ivec __attribute__((vector_size(W * sizeof(double))));               \
typedef float NAME##_fvec __attribute__((vector_size(2 * W * sizeof(float))));              \
typedef float NAME##_ufvec __attribute__((vector_size(2 * W * sizeof(float)), aligned(4))); \
typedef float NAME##_uhvec __attribute__((vector_size(W * sizeof(float)), aligned(4)));     \
GMM_DEFINE_PPF_V(NAME, W, 1, 8, TARGET)                                                      \
GMM_DEFINE_PPF_V(NAME, W, 2, 4, TARGET)                                                      \
/* returns 0, -1 if tp is not 1 to 4 multiples of W, or -2 if the float copy of CT could  \
 * not be allocated (then the gains and the potential are NaN) */                           \
TARGET static int NAME(const float *X, intptr_t n, intptr_t d, const double *CT, intptr_t tp,\
                       const float *sw, double *closest, int update, double *pot,           \
                       double *gain) {                                                       \
    if (tp % W || tp < W || tp > 4 * W) return -1;                                          \
    intptr_t tpf = tp <= 2 * W ? 2 * W : 4 * W;                                              \
    float stack[4096];                                                                       \
    float *CTf = d * tpf <= 4096 ? stack : (float *)malloc(d * tpf * sizeof(float));         \
    if (CTf == NULL) {                                                                       \
        for (intptr_t t = 0; t < tp; t++) gain[t] = NAN;                                     \
        if (update) *pot = NAN;                                                              \
        return -2;                                                                           \
    }                                                                                        \
    for (intptr_t f = 0; f < d; f++)                                                         \
        for (intptr_t t = 0; t < tpf; t++)                                                   \
            CTf[f * tpf + t] = t < tp ? (float)CT[f * tp + t] : 0.0f;                        \
    if (tpf == 2 * W) NAME##_f1(X, n, d, CTf, tp, sw, closest, update, pot, gain);           \
    else NAME##_f2(X, n, d, CTf, tp, sw, closest, update, pot, gain);                        \
    if (CTf != stack) free(CTf);                                                             \
    return 0;                                                                                \
}

GMM_DEFINE_PP(gmm_pp_d_base, double, 2, )
GMM_DEFINE_PPF(gmm_pp_f_base, 2, )
#if GMM_X86
GMM_DEFINE_PP(gmm_pp_d_avx2, double, 4, GMM_TARGET("avx2,fma"))
GMM_DEFINE_PPF(gmm_pp_f_avx2, 4, GMM_TARGET("avx2,fma"))
GMM_DEFINE_PP(gmm_pp_d_avx512, double, 8, GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"))
GMM_DEFINE_PPF(gmm_pp_f_avx512, 8, GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"))
#endif

/* ---- one k-means++ step on row panels ------------------------------------------------------
 *
 * GMM_DEFINE_PPF's step for float rows stored in panels of GMM_PANEL rows: panel b holds rows
 * GMM_PANEL b .. GMM_PANEL b + GMM_PANEL - 1 feature-major (XP[(b d + f) GMM_PANEL + r] =
 * x_{GMM_PANEL b + r, f}; rows past n are zero), so a vector of GMM_PANEL rows meets each
 * candidate's coordinate once: one subtraction and one fused multiply-add serve GMM_PANEL
 * rows, where the row kernel spends them on one row and its candidates' lanes (7 of 16 used
 * at k = 100). Any tp from 1 to GMM_PP_MAX_TP centers (CT d x tp, no padding), in groups of
 * at most GMAX a pass over the panel (as many accumulators as the registers hold: 12
 * vectors with AVX-512's 32 registers, 6 of two with AVX2's 16, 3 of four portable). Each (row, center) distance is the row
 * kernel's sum, feature by feature in the same order. The update, the potential and the
 * gains are those of the row kernel too, summed per row lane and the lanes then added in
 * lane order: the sums depend on the chunk only, never on the thread count.
 *
 * A step reads each row once for its few candidates, little arithmetic a byte, and where
 * memory is slow (an AMD EPYC Zen 3: about 12 GB/s on one core) it waited on it: the AVX2
 * and portable steps ask for the panels GMM_PPP_AHEAD bytes ahead of the one they compute
 * on (a step over 1e5 x 64 and x 128 rows then took 0.72x-0.82x its time). The AVX-512 step
 * does not yet: on an Intel Xeon (Emerald Rapids) the same request took a step over 1e6 rows
 * (from memory) to 0.58x-0.61x, over rows in its L3 to 0.73x-0.96x, in L2 1.00x (interleaved
 * in one process, the same bits), but turning it on changes the time of nearly every
 * published result, all measured with AVX-512: it waits for a change that re-measures them
 * anyway (AHEAD 0 below). n_xp: the rows of XP from the chunk's first,
 * so the requests run on into the next chunk but never past XP. d >= 1 (the caller checks).
 */
#define GMM_PANEL 16
#define GMM_PPP_AHEAD 16384
#define GMM_PP_MAX_TP 32

/* A panel's GMM_PANEL rows in NV native float vectors of GMM_PANEL / NV lanes (AVX-512: one,
 * AVX2: two, portable: four; W doubles a vector): a 64-byte vector type on a narrower target
 * was built 8 bytes at a time through the stack (k-means++ 8x slower on AVX2 than on
 * AVX-512). Each lane's sum is the same, feature by feature. */
#define GMM_PPP_NV(W) (GMM_PANEL / (2 * (W)))
#define GMM_DEFINE_PPP_G(NAME, G, NV, AHEAD, TARGET)                                        \
TARGET static inline void NAME##_g##G(const float *P, intptr_t d, const float *Cf,          \
                                      intptr_t tp, float *dist, const float *Q) {            \
    enum { FW = GMM_PANEL / (NV) };                                                          \
    NAME##_fv acc[G][(NV)];                                                                  \
    for (int t = 0; t < G; t++)                                                              \
        for (int v = 0; v < NV; v++) acc[t][v] = (NAME##_fv){0};                           \
    for (intptr_t f = 0; f < d; f++) {                                                       \
        if (AHEAD) __builtin_prefetch(Q + f * GMM_PANEL, 0, 3);                              \
        for (int v = 0; v < NV; v++) {                                                       \
            NAME##_fv x = *(const NAME##_ufv *)(P + f * GMM_PANEL + v * FW);                 \
            for (int t = 0; t < G; t++) {                                                    \
                NAME##_fv u = x - Cf[f * tp + t];                                            \
                acc[t][v] += u * u;                                                          \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    for (int t = 0; t < G; t++)                                                              \
        for (int v = 0; v < NV; v++)                                                         \
            *(NAME##_fv *)(dist + t * GMM_PANEL + v * FW) = acc[t][v];                      \
}

#define GMM_DEFINE_PPP(NAME, W, GMAX, AHEAD, TARGET)                                           \
typedef float NAME##_fv __attribute__((vector_size(2 * W * sizeof(float))));               \
typedef float NAME##_ufv __attribute__((vector_size(2 * W * sizeof(float)), aligned(4)));  \
typedef float NAME##_hv __attribute__((vector_size(W * sizeof(float))));                   \
typedef double NAME##_dv __attribute__((vector_size(W * sizeof(double))));                 \
typedef double NAME##_udv __attribute__((vector_size(W * sizeof(double)), aligned(8)));    \
typedef int64_t NAME##_iv __attribute__((vector_size(W * sizeof(double))));                \
GMM_DEFINE_PPP_G(NAME, 1, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 2, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 3, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 4, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 5, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 6, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 7, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 8, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 9, GMM_PPP_NV(W), AHEAD, TARGET)                                     \
GMM_DEFINE_PPP_G(NAME, 10, GMM_PPP_NV(W), AHEAD, TARGET)                                    \
GMM_DEFINE_PPP_G(NAME, 11, GMM_PPP_NV(W), AHEAD, TARGET)                                    \
GMM_DEFINE_PPP_G(NAME, 12, GMM_PPP_NV(W), AHEAD, TARGET)                                    \
/* returns 0, -1 if tp is not 1 to GMM_PP_MAX_TP, or -2 if the float copy of CT could not  \
 * be allocated (then the gains and the potential are NaN) */                               \
TARGET static int NAME(const float *XP, intptr_t n, intptr_t n_xp, intptr_t d,              \
                       const double *CT, intptr_t tp, const float *sw, double *closest,      \
                       int update, double *pot, double *gain) {                              \
    enum { H = GMM_PANEL / W };                                                              \
    if (tp < 1 || tp > GMM_PP_MAX_TP) return -1;                                            \
    float stack[4096];                                                                       \
    float *Cf = d * tp <= 4096 ? stack : (float *)malloc(d * tp * sizeof(float));           \
    if (Cf == NULL) {                                                                        \
        for (intptr_t t = 0; t < tp; t++) gain[t] = NAN;                                     \
        if (update) *pot = NAN;                                                              \
        return -2;                                                                           \
    }                                                                                        \
    for (intptr_t j = 0; j < d * tp; j++) Cf[j] = (float)CT[j];                              \
    float dist[GMM_PP_MAX_TP * GMM_PANEL] __attribute__((aligned(64)));                     \
    NAME##_dv gv[GMM_PP_MAX_TP][H], pv[H];                                                  \
    for (int h = 0; h < H; h++) pv[h] = (NAME##_dv){0};                                    \
    for (intptr_t t = 0; t < tp; t++) for (int h = 0; h < H; h++) gv[t][h] = (NAME##_dv){0};\
    int ng = (int)((tp + GMAX - 1) / GMAX);                                                  \
    intptr_t ahead = GMM_PANEL * (1 + (AHEAD) / (d * GMM_PANEL * 4));                        \
    for (intptr_t i = 0; i < n; i += GMM_PANEL) {                                            \
        const float *P = XP + i * d;                                                         \
        const float *Q = i + ahead < n_xp ? P + ahead * d : P;                               \
        for (int g = 0, t0 = 0; g < ng; g++) {                                               \
            int gs = ((int)tp - t0) / (ng - g);                                              \
            float *dg = dist + t0 * GMM_PANEL;                                               \
            switch (gs) {                                                                    \
            case 1: NAME##_g1(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 2: NAME##_g2(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 3: NAME##_g3(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 4: NAME##_g4(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 5: NAME##_g5(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 6: NAME##_g6(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 7: NAME##_g7(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 8: NAME##_g8(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 9: NAME##_g9(P, d, Cf + t0, tp, dg, g ? P : Q); break;                      \
            case 10: NAME##_g10(P, d, Cf + t0, tp, dg, g ? P : Q); break;                    \
            case 11: NAME##_g11(P, d, Cf + t0, tp, dg, g ? P : Q); break;                    \
            default: NAME##_g12(P, d, Cf + t0, tp, dg, g ? P : Q); break;                    \
            }                                                                                \
            t0 += gs;                                                                        \
        }                                                                                    \
        int np = n - i < GMM_PANEL ? (int)(n - i) : GMM_PANEL;                               \
        double clb[GMM_PANEL] __attribute__((aligned(64)));                                  \
        double sb[GMM_PANEL] __attribute__((aligned(64)));                                   \
        for (int r = 0; r < GMM_PANEL; r++) {   /* rows past n: weight 0, never chosen */   \
            clb[r] = r < np ? closest[i + r] : 0.0;                                          \
            sb[r] = r < np ? (double)sw[i + r] : 0.0;                                        \
        }                                                                                    \
        for (int h = 0; h < H; h++) {                                                        \
            NAME##_dv cl = *(const NAME##_dv *)(clb + h * W);                                \
            NAME##_dv s = *(const NAME##_dv *)(sb + h * W);                                  \
            if (update) {                                                                    \
                NAME##_dv d0 = __builtin_convertvector(                                      \
                    *(const NAME##_hv *)(dist + h * W), NAME##_dv);                          \
                NAME##_iv m = d0 < cl;                                                       \
                cl = (NAME##_dv)((m & (NAME##_iv)d0) | (~m & (NAME##_iv)cl));                \
                *(NAME##_dv *)(clb + h * W) = cl;                                            \
                pv[h] += s * cl;                                                             \
            }                                                                                \
            for (intptr_t t = 0; t < tp; t++) {                                              \
                NAME##_dv g = cl - __builtin_convertvector(                                  \
                    *(const NAME##_hv *)(dist + t * GMM_PANEL + h * W), NAME##_dv);          \
                NAME##_iv pos = g > (NAME##_dv){0};                                          \
                gv[t][h] += s * (NAME##_dv)(pos & (NAME##_iv)g);                             \
            }                                                                                \
        }                                                                                    \
        if (update) for (int r = 0; r < np; r++) closest[i + r] = clb[r];                    \
    }                                                                                        \
    if (update) {                                                                            \
        double pt = 0.0;                                                                     \
        for (int r = 0; r < GMM_PANEL; r++) pt += pv[r / W][r % W];                          \
        *pot = pt;                                                                           \
    }                                                                                        \
    for (intptr_t t = 0; t < tp; t++) {                                                      \
        double gt = 0.0;                                                                     \
        for (int r = 0; r < GMM_PANEL; r++) gt += gv[t][r / W][r % W];                       \
        gain[t] = gt;                                                                        \
    }                                                                                        \
    if (Cf != stack) free(Cf);                                                               \
    return 0;                                                                                \
}

GMM_DEFINE_PPP(gmm_ppp_f_base, 2, 3, GMM_PPP_AHEAD, )
#if GMM_X86
GMM_DEFINE_PPP(gmm_ppp_f_avx2, 4, 6, GMM_PPP_AHEAD, GMM_TARGET("avx2,fma"))
GMM_DEFINE_PPP(gmm_ppp_f_avx512, 8, 12, 0, GMM_TARGET("avx512f,avx512dq,avx512vl,avx2,fma"))
#endif

/* Kernel twin, kept for speed: the panel step's dispatcher has the row steps' shape (they
 * return a status, which GMM_DISPATCH does not). */
static int gmm_ppp_f(int level, const float *XP, intptr_t n, intptr_t n_xp, intptr_t d,
                     const double *CT, intptr_t tp, const float *sw, double *closest,
                     int update, double *pot, double *gain) {
#if GMM_X86
    if (level == 2)
        return gmm_ppp_f_avx512(XP, n, n_xp, d, CT, tp, sw, closest, update, pot, gain);
    if (level == 1)
        return gmm_ppp_f_avx2(XP, n, n_xp, d, CT, tp, sw, closest, update, pot, gain);
#endif
    return gmm_ppp_f_base(XP, n, n_xp, d, CT, tp, sw, closest, update, pot, gain);
}

/* Center lanes per vector of the chosen variant (a call takes 1 to 4 vectors). */
static intptr_t gmm_pp_width(int level) { return level == 2 ? 8 : level == 1 ? 4 : 2; }

static int gmm_pp_d(int level, const double *X, intptr_t n, intptr_t d, const double *CT,
                    intptr_t tp, const double *sw, double *closest, int update, double *pot,
                    double *gain) {
#if GMM_X86
    if (level == 2) return gmm_pp_d_avx512(X, n, d, CT, tp, sw, closest, update, pot, gain);
    if (level == 1) return gmm_pp_d_avx2(X, n, d, CT, tp, sw, closest, update, pot, gain);
#endif
    return gmm_pp_d_base(X, n, d, CT, tp, sw, closest, update, pot, gain);
}

static int gmm_pp_f(int level, const float *X, intptr_t n, intptr_t d, const double *CT,
                    intptr_t tp, const float *sw, double *closest, int update, double *pot,
                    double *gain) {
#if GMM_X86
    if (level == 2) return gmm_pp_f_avx512(X, n, d, CT, tp, sw, closest, update, pot, gain);
    if (level == 1) return gmm_pp_f_avx2(X, n, d, CT, tp, sw, closest, update, pot, gain);
#endif
    return gmm_pp_f_base(X, n, d, CT, tp, sw, closest, update, pot, gain);
}

#endif
