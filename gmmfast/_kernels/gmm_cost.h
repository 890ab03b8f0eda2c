/* The cost of a wide row: ||x - c||^2 for d >= GMM_COST_WIDE_D, in double.
 *
 * _common.pxd's sqdist (and sqdist_resid, which also adds w (x - c) to a residual sum) sum
 * short rows in four scalar chains; a chain waits for each addition, so at d = 128 a cost
 * took about 100 cycles, and an exact pass computes two or more per row. Wide rows take
 * this arithmetic instead, the same on every machine:
 *
 *   t_f = (double)x_f - (double)c_f;  s_l = fma(t_f, t_f, s_l) over f = l (mod 16), f
 *   ascending, from s_l = +0;  then u_l = s_l + s_{l+8} (l < 8), v_l = u_l + u_{l+4}
 *   (l < 4), w_l = v_l + v_{l+2} (l < 2), cost = w_0 + w_1;
 *   with the residual: r_f = fma(w, t_f, r_f).
 *
 * Every operation is rounded once (fma included), so the AVX-512 variant (two vectors of 8
 * lanes), the AVX2 one (four of 4) and the portable one (C's fma) give the same bits; a
 * row's last d mod 16 features are copied into a zeroed block first (t = 0 adds +0, which
 * changes no sum). The variant is chosen once, when the module is loaded.
 */
#ifndef GMM_COST_H
#define GMM_COST_H

#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define GMM_COST_X86 1
#else
#define GMM_COST_X86 0
#endif

/* Rows this wide or wider take this file's arithmetic; narrower ones sqdist's chains. */
#define GMM_COST_WIDE_D 32

/* 2 = AVX-512, 1 = AVX2, 0 = portable: what the processor supports, capped by the
 * environment variable GMMFAST_SIMD ("avx512", "avx2" or "generic", as faiss's
 * FAISS_OPT_LEVEL; gmmfast/_kernels/__init__.py refuses other values before this runs).
 * gmm_simd.h's search dispatches on the same levels. */
static int gmm_cpu_level(void) {
    int level = 0;
#if GMM_COST_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
            && __builtin_cpu_supports("avx512vl")) level = 2;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) level = 1;
#endif
    const char *cap = getenv("GMMFAST_SIMD");
    if (cap != NULL) {
        int c = strcmp(cap, "avx2") == 0 ? 1 : strcmp(cap, "generic") == 0 ? 0 : 2;
        if (c < level) level = c;
    }
    return level;
}

/* The 16 partial sums to one value, by the fixed tree above. */
static inline double gmm_cost_tree(const double *s) {
    double u[8], v[4];
    for (int l = 0; l < 8; l++) u[l] = s[l] + s[l + 8];
    for (int l = 0; l < 4; l++) v[l] = u[l] + u[l + 4];
    return (v[0] + v[2]) + (v[1] + v[3]);
}

/* The last d mod 16 features of x and c (from f) as doubles in zeroed blocks of 16. */
#define GMM_COST_TAIL(x, c, f, d, xt, ct) do {                                               \
        for (int l_ = 0; l_ < 16; l_++) {                                                    \
            (xt)[l_] = (f) + l_ < (d) ? (double)(x)[(f) + l_] : 0.0;                         \
            (ct)[l_] = (f) + l_ < (d) ? (double)(c)[(f) + l_] : 0.0;                         \
        }                                                                                    \
    } while (0)

/* The portable variant: one lane at a time. With r (not NULL): r_f = fma(w, t_f, r_f). */
#define GMM_DEFINE_COST_BASE(NAME, T)                                                        \
static double NAME##_base(const T *x, const T *c, intptr_t d, double w, double *r) {        \
    double s[16] = {0};                                                                      \
    intptr_t f = 0;                                                                          \
    for (; f + 16 <= d; f += 16)                                                             \
        for (int l = 0; l < 16; l++) {                                                       \
            double t = (double)x[f + l] - (double)c[f + l];                                  \
            s[l] = fma(t, t, s[l]);                                                          \
            if (r) r[f + l] = fma(w, t, r[f + l]);                                           \
        }                                                                                    \
    if (f < d) {                                                                             \
        double xt[16], ct[16];                                                               \
        GMM_COST_TAIL(x, c, f, d, xt, ct);                                                   \
        for (int l = 0; l < 16; l++) {                                                       \
            double t = xt[l] - ct[l];                                                        \
            s[l] = fma(t, t, s[l]);                                                          \
            if (r && f + l < d) r[f + l] = fma(w, t, r[f + l]);                              \
        }                                                                                    \
    }                                                                                        \
    return gmm_cost_tree(s);                                                                 \
}

GMM_DEFINE_COST_BASE(gmm_cost_d, double)
GMM_DEFINE_COST_BASE(gmm_cost_f, float)

#if GMM_COST_X86
#define GMM_COST_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#define GMM_COST_AVX2 __attribute__((target("avx2,fma")))

/* Loads 8 (AVX-512) or 4 (AVX2) coordinates as doubles. */
GMM_COST_AVX512 static inline __m512d gmm_cost_ld8_d(const double *p) { return _mm512_loadu_pd(p); }
GMM_COST_AVX512 static inline __m512d gmm_cost_ld8_f(const float *p) {
    return _mm512_cvtps_pd(_mm256_loadu_ps(p));
}
GMM_COST_AVX2 static inline __m256d gmm_cost_ld4_d(const double *p) { return _mm256_loadu_pd(p); }
GMM_COST_AVX2 static inline __m256d gmm_cost_ld4_f(const float *p) {
    return _mm256_cvtps_pd(_mm_loadu_ps(p));
}

/* AVX-512: lanes 0..7 and 8..15 of the partial sums in two vectors. */
#define GMM_DEFINE_COST_AVX512(NAME, T, SUF)                                                 \
GMM_COST_AVX512 static double NAME##_avx512(const T *x, const T *c, intptr_t d, double w,   \
                                            double *r) {                                     \
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd(), wv = _mm512_set1_pd(w);      \
    intptr_t f = 0;                                                                          \
    for (; f + 16 <= d; f += 16) {                                                           \
        __m512d t0 = _mm512_sub_pd(gmm_cost_ld8_##SUF(x + f), gmm_cost_ld8_##SUF(c + f));    \
        __m512d t1 = _mm512_sub_pd(gmm_cost_ld8_##SUF(x + f + 8), gmm_cost_ld8_##SUF(c + f + 8)); \
        s0 = _mm512_fmadd_pd(t0, t0, s0);                                                    \
        s1 = _mm512_fmadd_pd(t1, t1, s1);                                                    \
        if (r) {                                                                             \
            _mm512_storeu_pd(r + f, _mm512_fmadd_pd(wv, t0, _mm512_loadu_pd(r + f)));        \
            _mm512_storeu_pd(r + f + 8, _mm512_fmadd_pd(wv, t1, _mm512_loadu_pd(r + f + 8))); \
        }                                                                                    \
    }                                                                                        \
    double s[16];                                                                            \
    if (f < d) {                                                                             \
        double xt[16], ct[16];                                                               \
        GMM_COST_TAIL(x, c, f, d, xt, ct);                                                   \
        __m512d t0 = _mm512_sub_pd(_mm512_loadu_pd(xt), _mm512_loadu_pd(ct));               \
        __m512d t1 = _mm512_sub_pd(_mm512_loadu_pd(xt + 8), _mm512_loadu_pd(ct + 8));       \
        s0 = _mm512_fmadd_pd(t0, t0, s0);                                                    \
        s1 = _mm512_fmadd_pd(t1, t1, s1);                                                    \
        if (r) {                                                                             \
            double tt[16];                                                                   \
            _mm512_storeu_pd(tt, t0);                                                        \
            _mm512_storeu_pd(tt + 8, t1);                                                    \
            for (intptr_t l = 0; f + l < d; l++) r[f + l] = fma(w, tt[l], r[f + l]);         \
        }                                                                                    \
    }                                                                                        \
    _mm512_storeu_pd(s, s0);                                                                 \
    _mm512_storeu_pd(s + 8, s1);                                                             \
    return gmm_cost_tree(s);                                                                 \
}

/* AVX2: lanes 0..3, 4..7, 8..11 and 12..15 in four vectors. */
#define GMM_DEFINE_COST_AVX2(NAME, T, SUF)                                                   \
GMM_COST_AVX2 static double NAME##_avx2(const T *x, const T *c, intptr_t d, double w,       \
                                        double *r) {                                         \
    __m256d s[4], wv = _mm256_set1_pd(w);                                                    \
    for (int v = 0; v < 4; v++) s[v] = _mm256_setzero_pd();                                  \
    intptr_t f = 0;                                                                          \
    for (; f + 16 <= d; f += 16)                                                             \
        for (int v = 0; v < 4; v++) {                                                        \
            __m256d t = _mm256_sub_pd(gmm_cost_ld4_##SUF(x + f + 4 * v),                     \
                                      gmm_cost_ld4_##SUF(c + f + 4 * v));                    \
            s[v] = _mm256_fmadd_pd(t, t, s[v]);                                              \
            if (r) _mm256_storeu_pd(r + f + 4 * v,                                           \
                                    _mm256_fmadd_pd(wv, t, _mm256_loadu_pd(r + f + 4 * v))); \
        }                                                                                    \
    double out[16];                                                                          \
    if (f < d) {                                                                             \
        double xt[16], ct[16], tt[16];                                                       \
        GMM_COST_TAIL(x, c, f, d, xt, ct);                                                   \
        for (int v = 0; v < 4; v++) {                                                        \
            __m256d t = _mm256_sub_pd(_mm256_loadu_pd(xt + 4 * v), _mm256_loadu_pd(ct + 4 * v)); \
            s[v] = _mm256_fmadd_pd(t, t, s[v]);                                              \
            _mm256_storeu_pd(tt + 4 * v, t);                                                 \
        }                                                                                    \
        if (r) for (intptr_t l = 0; f + l < d; l++) r[f + l] = fma(w, tt[l], r[f + l]);      \
    }                                                                                        \
    for (int v = 0; v < 4; v++) _mm256_storeu_pd(out + 4 * v, s[v]);                         \
    return gmm_cost_tree(out);                                                               \
}

GMM_DEFINE_COST_AVX512(gmm_cost_d, double, d)
GMM_DEFINE_COST_AVX512(gmm_cost_f, float, f)
GMM_DEFINE_COST_AVX2(gmm_cost_d, double, d)
GMM_DEFINE_COST_AVX2(gmm_cost_f, float, f)
#endif

/* The variant this module uses: the best the processor supports, chosen when the module is
 * loaded (before any thread runs), or the one gmm_cost_use() asked for (tests). */
static int gmm_cost_level = 0;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void gmm_cost_init(void) { gmm_cost_level = gmm_cpu_level(); }
#endif

/* ||x - c||^2 by this file's arithmetic at `level` (r: NULL, or a residual to add w (x - c) to). */
#define GMM_DEFINE_COST_AT(NAME, T)                                                          \
static double NAME##_at(int level, const T *x, const T *c, intptr_t d, double w, double *r) { \
    GMM_COST_DISPATCH(level, NAME, x, c, d, w, r);                                           \
}                                                                                            \
static inline double NAME(const T *x, const T *c, intptr_t d) {                              \
    return NAME##_at(gmm_cost_level, x, c, d, 0.0, NULL);                                    \
}                                                                                            \
static inline double NAME##_resid(const T *x, const T *c, intptr_t d, double w, double *r) { \
    return NAME##_at(gmm_cost_level, x, c, d, w, r);                                         \
}

#if GMM_COST_X86
#define GMM_COST_DISPATCH(level, NAME, ...) do {                                              \
        if ((level) == 2) return NAME##_avx512(__VA_ARGS__);                                 \
        if ((level) == 1) return NAME##_avx2(__VA_ARGS__);                                   \
        return NAME##_base(__VA_ARGS__);                                                     \
    } while (0)
#else
#define GMM_COST_DISPATCH(level, NAME, ...) do { (void)(level); return NAME##_base(__VA_ARGS__); } while (0)
#endif

GMM_DEFINE_COST_AT(gmm_cost_d, double)
GMM_DEFINE_COST_AT(gmm_cost_f, float)

#endif
