/* Dot products of one CSR row with many dense columns, for the sparse k-means kernels.
 *
 * acc[j] = sum_p v[p] CT[idx[p], j] for j < kp, CT row-major (n_features x kp): each
 * nonzero of the row adds its value times a contiguous row of CT, so the loop over j is
 * vectorised and 16 accumulators stay in registers while the nonzeros stream by.
 * Accumulated in double whatever the data type, in the order of the nonzeros.
 *
 * Compiled for AVX2 and for the baseline, chosen at load time (GCC/Clang target_clones);
 * no FMA in either, so both variants round identically and the results do not depend on
 * the machine.
 */
#ifndef GMM_SPARSE_H
#define GMM_SPARSE_H

#include <stdint.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && defined(__linux__)
#define GMM_SPARSE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GMM_SPARSE_CLONES
#endif

#define GMM_CSR_DOTS(NAME, T, IT)                                                            \
GMM_SPARSE_CLONES void NAME(intptr_t nnz, const T *v, const IT *idx, const double *CT,        \
                            intptr_t kp, double *acc) {                                      \
    intptr_t j0 = 0;                                                                         \
    for (; j0 + 16 <= kp; j0 += 16) {                                                        \
        double a[16];                                                                        \
        for (int l = 0; l < 16; l++) a[l] = 0.0;                                             \
        for (intptr_t p = 0; p < nnz; p++) {                                                 \
            const double x = (double)v[p];                                                   \
            const double *row = CT + (intptr_t)idx[p] * kp + j0;                             \
            for (int l = 0; l < 16; l++) a[l] += x * row[l];                                 \
        }                                                                                    \
        for (int l = 0; l < 16; l++) acc[j0 + l] = a[l];                                     \
    }                                                                                        \
    if (j0 < kp) {                                                                           \
        intptr_t r = kp - j0;                                                                \
        for (intptr_t l = 0; l < r; l++) acc[j0 + l] = 0.0;                                  \
        for (intptr_t p = 0; p < nnz; p++) {                                                 \
            const double x = (double)v[p];                                                   \
            const double *row = CT + (intptr_t)idx[p] * kp + j0;                             \
            for (intptr_t l = 0; l < r; l++) acc[j0 + l] += x * row[l];                      \
        }                                                                                    \
    }                                                                                        \
}

GMM_CSR_DOTS(gmm_csr_dots_d32, double, int32_t)
GMM_CSR_DOTS(gmm_csr_dots_d64, double, int64_t)
GMM_CSR_DOTS(gmm_csr_dots_f32, float, int32_t)
GMM_CSR_DOTS(gmm_csr_dots_f64, float, int64_t)

#endif
