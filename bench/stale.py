"""Which published results were measured before the last change to the code they measure?

Run it before a release (and before quoting a figure)::

    python bench/stale.py          # the results files cited by README.md and docs/
    python bench/stale.py --all    # every file in bench/results/

A results file is *cited* when README.md, a file of docs/ (``*.rst``, ``*.md``, ``*.py``, at
any depth) or ``examples/*.py`` names it: ``bench/results/NAME.md`` (or any path ending in
``results/NAME.ext``), or the bare ``NAME.ext`` of a file in bench/results/ (or of a bench
script's results: ``walk_throughput.md`` for bench/walk_throughput.py, even if missing), or a
pattern matching it (``scenes_table3_truth_d66_n100_walk*.md``).

Each cited file is read for its header (bench/_common.py writes it): the ``- command:`` line
names the bench script, the ``- commit:`` line the commit it ran on, and a ``SIMD level``
phrase the kernels' SIMD level. A figure or table without a header of its own (``.png``,
``.csv``, ``.json``) takes the header of the results file that names it, else of the
results file whose name is the longest prefix of its own (``scale_faiss_pareto.png``:
``scale_faiss.md``).

A file is **stale** when

- ``git log COMMIT..HEAD -- <measured paths>`` lists a commit (the code it measures changed
  after it ran; the measured paths of each script are in :data:`MEASURED` below, the whole
  package but for docs-only files by default, plus the script itself; a scenes_table3 run
  from :data:`NAMED_INITS` only measures what the objects' scripts do) that changed code: a
  commit whose measured files are all Python files with the same syntax tree once docstrings
  are left out (it changed comments or docstrings only) changes no measurement; of
  bench/_common.py only the definitions that make data or time (:data:`MEASURED_PARTS`)
  count, not the header or the writing of the file; a commit in :data:`DECLARED_UNCHANGED`
  (read by a person, its reason written there and printed) does not count either, nor one in
  :data:`DECLARED_UNCHANGED_FOR` for the scripts it names, or
- its header has no commit, or one this repository does not know (a typo, a rebased or
  unpushed commit), or no SIMD level (or "not recorded"), or
- it is cited but does not exist, or
- it is a merged report (scale.py's or scale_dask's: several runs, each listed with its own
  commit) and a run's commit is stale in the sense above for the package code it measured
  (the bench script itself is judged at the header's commit, the code that wrote the report):
  a report whose cells were re-measured in part keeps its other cells' commits, and those stay
  stale until they are re-run too. ``--commands`` then lists those runs only.

A header's commit marked "(with uncommitted changes)" is checked as that commit: the
uncommitted changes usually became the next commit, so if that one touched measured paths the
file is reported stale, which is the honest answer (nobody knows which code ran).

Exit status: 1 when any checked file is stale, 0 otherwise (2 on a usage error).
"""
from __future__ import annotations

import argparse
import ast
import functools
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]

#: Files under gmmfast/ that change no measurement (never counted as a change).
DOCS_ONLY = ("gmmfast/py.typed", "gmmfast/_version.py", "gmmfast/**/*.md", "gmmfast/**/*.rst",
             "gmmfast/**/*.txt")

#: What every measurement runs through: the core loop, validation, the kernels and their build.
_BASE = ("gmmfast/__init__.py", "gmmfast/core.py", "gmmfast/_base.py", "gmmfast/_validation.py",
         "gmmfast/_lazy.py", "gmmfast/_kernel_info.py", "gmmfast/latent.py", "gmmfast/_kernels/",
         "setup.py")
#: The Dask path: gmmfast.cluster._dask (which the fit driver imports for a dask array only)
#: and the two modules only it imports. A fit in memory imports none of them
#: (tests/test_stale.py checks it in a fresh process): they are left out of what every script
#: but scale_dask measures.
DASK = tuple(f":(exclude)gmmfast/cluster/{m}.py" for m in ("_dask", "_dask_blocks",
                                                            "_dask_family"))
_CLUSTER_AND_DASK = _BASE + ("gmmfast/cluster/", "gmmfast/metrics.py", "gmmfast/datasets/",
                             "gmmfast/experiments/")
_CLUSTER = _CLUSTER_AND_DASK + DASK
#: Code only the default clustering search runs. RESTARTS: the seeding restarts
#: (``selection="merge-split"`` with ``init="k-means++"``) and the Lloyd runs the escapes'
#: re-splits make with the same kernel; ESCAPES: the escape proposals (merge-split, with
#: ``patience`` > 0). The LS-SVM, scene and Potts measurements reach neither (their k-means is
#: Lloyd's, ``selection="mm"``), nor the random-walk scripts (walk_steps, walk_throughput);
#: lloyd_iteration starts from given centers with ``patience=0`` (no restarts, no proposals,
#: though its merge-split fit calls the escapes' entry, which returns at once). eta_sweep and
#: walk_samplers fit merge-split with escapes from given centers: they reach both.
#: tests/test_stale.py checks these rules. They are left out of what those measure.
RESTARTS = (":(exclude)gmmfast/_kernels/_restarts.pyx", ":(exclude)gmmfast/cluster/_restarts.py")
ESCAPES = (":(exclude)gmmfast/cluster/_escape.py",)
NOT_REACHED = RESTARTS + ESCAPES
#: The k-means kernels: only gmmfast.cluster calls them (gmmfast.kernel_info reads the SIMD
#: level from _kmeans, no kernel). The LS-SVM and Potts scripts never import gmmfast.cluster
#: (tests/test_stale.py checks it in a fresh process), so these are left out of theirs.
CLUSTER_KERNELS = tuple(f":(exclude)gmmfast/_kernels/{f}" for f in (
    "_kmeans.pyx", "gmm_simd.h", "gmm_cost.h", "_restarts.pyx", "_walks.pyx", "_sparse.pyx",
    "gmm_sparse.h"))
#: The scene models (discover_parts runs k-means, so the clustering code counts).
_LSSVM = _BASE + ("gmmfast/lssvm/", "gmmfast/potts/", "gmmfast/cluster/", "gmmfast/metrics.py",
                  "gmmfast/datasets/", "gmmfast/experiments/") + NOT_REACHED + DASK
#: The latent SVMs of the cluttered objects (Table 2, the solvers): no k-means.
_OBJECTS = _BASE + ("gmmfast/lssvm/", "gmmfast/potts/", "gmmfast/metrics.py",
                    "gmmfast/datasets/", "gmmfast/experiments/") + CLUSTER_KERNELS
_POTTS = _BASE + ("gmmfast/potts/", "gmmfast/datasets/") + CLUSTER_KERNELS
#: scenes_table3 from named initialisations only (``--inits`` of "random" and "truth", no
#: Potts weight): discover_parts, the scenes' only k-means, runs for the coherent inits
#: alone, so such a run measures what the objects' scripts measure (tests/test_stale.py runs
#: every method from both named inits in a fresh process and checks gmmfast.cluster is never
#: imported).
NAMED_INITS = ("random", "truth")
_INITS = re.compile(r"--inits[= ]+([^\s`]+)")
#: bench/_common.py's data (mixture) and timing (alternate) enter these scripts' figures.
_COMMON = ("bench/_common.py",)
#: Files of which only some top-level definitions are measured: a change elsewhere in them
#: (the results header, the writing of the file) changes no figure.
MEASURED_PARTS: Dict[str, Tuple[str, ...]] = {
    "bench/_common.py": ("mixture", "mixture_file", "alternate"),
}

#: Commits that change measured code but, for the reason given, no figure of any result: a
#: guard that only inputs no benchmark draws reach. A person writes each entry after reading
#: the change; the report names every one that applied. Full hash -> why.
#: Why the latent SVMs' input checks of 2026-12-01 change no result.
_LSSVM_CHECKS = (
    "valid input gives the same results: 20 fit configurations (digits and region models; "
    "CCP, random walks, subsets, multifold and Potts biases; cutting-plane, BCFW and DCD "
    "solvers; a plain-Python model; solve_simplex_qp at K = 3, 12, 40; potts_select) saved "
    "126 arrays (coef_, objective_, latent_, the histories, predictions) bit-identical on "
    "b84aeb8 and after (/work/q/s29/lssvm_ident, Intel Xeon, 2026-12-01)")

#: Why the experiment commands' argument checks of 2026-12-01 change no result.
_CLI_CHECKS = (
    "the experiment commands check their arguments and outputs before any work; the "
    "experiments' code keeps its arithmetic (the data drawn by the same generator calls, "
    "cached for the command's reuse; the lambda floor and F(0) moved into functions, the same "
    "formulas; compare's file names one constant): gmmfast compare --trials 2 wrote the same "
    "compare.csv but its seconds, scene-compare --quick and lssvm-compare --quick the same "
    "tables but their times (and the latter's unseeded oracle row, seeded in 41b2d4e) on "
    "b84aeb8 and after (Intel Xeon, 2026-12-01)")

#: Why the latent SVMs' feature and bias checks of 2026-12-01 change no result.
_LSSVM_FEATURE_CHECKS = (
    "every joint feature of a plain-Python model checked where it is used (no bench script "
    "trains one: they train LatentMulticlassModel and RegionPartModel, whose kernels' features "
    "are not re-checked), the model's loss_matrix() and a MultifoldBias's or PottsBias's "
    "parameters checked once at the start of a fit, PottsBias(n_bisect=0) accepted: valid "
    "input gives the same results: 46 fits (digits: CCP, random walks, subsets, multifold "
    "biases, cutting-plane, BCFW and DCD, 2 seeds, a custom loss; scenes: CCP, walks, "
    "subsets, Potts biases (n_bisect 30 and 5), multifold, shared and class-specific parts, "
    "2 seeds; a plain-Python model) and potts_select on 12 problems saved 695 arrays "
    "(coef_, latent_, objective_, the histories) bit-identical on fa688d0 and after "
    "(/work/q/s32/lssvm_ident.py, Intel Xeon, 2026-12-02)")

#: Why the command-line hardening of 2026-12-02 changes no result.
_CLI_WRITES = (
    "the commands' outputs written whole (gmmfast/_atomic.py), their arguments and files "
    "checked before work, Ctrl-C at start-up, load_sipu's failed download cleaned up, "
    "read_points' float64 .npy memory-mapped (the same values): no computed number changes; "
    "bench scripts reach only load_sipu (its cached path unchanged), run_jobs (without "
    "shared=, fn(job) as before) and table2/table3.compare, which now draw the data once "
    "and pass them to every run (same generator and seed, drawn outside the timed fits): "
    "cluster x3, compare x2, lssvm-compare --quick and scene-compare --quick wrote 39 files "
    "identical (24 byte for byte, 15 but their seconds) on 3290378 and after "
    "(/work/q/s32/cli/identity.sh, Intel Xeon, 2026-12-02)")

#: Why the Dask path's input checks of 2026-12-02 change no result.
_DASK_CHECKS = (
    "a Dask fit checks its blocks (sparse, misdeclared shape or dtype, the in-memory fit's "
    "underflow and objective-range checks from each block's largest value in the first "
    "pass) and its sample_weight (persisted once) as an in-memory fit does, seeds its sample "
    "through the internal seeders, re-raises its own task errors clean; an in-memory fit "
    "drops _dask_passes; the range checks are one function for both (_validation): Dask and "
    "in-memory fits (2 seeds, float32 and float64, 4 selections, 4 inits, weights none, "
    "numpy and dask, 2 chunkings, 24 coarse-to-fine fits) saved 6012 arrays bit-identical "
    "on 3290378 and after (/work/q/s32/dask/identity.py), and a pass over 20 blocks of "
    "10k x 16 took the same time within noise (44-48 ms before, 36-44 ms after, median of "
    "7, machine shared; Intel Xeon, 2026-12-02)")

DECLARED_UNCHANGED: Dict[str, str] = {
    "0b0107fa71c3d16dd1687ac854c07b32bac1dd84":
        "GMMFAST_SIMD read where the kernels choose their level (gmm_cpu_level) and checked "
        "at import; bench headers name it and FAISS_OPT_LEVEL when set: no earlier result "
        "ran with it set, and unset the level is the processor's, as before (a getenv at "
        "load).",
    "fecb5c35836e589195ff58aa263d9533e99610a4":
        "k-means++'s panel step in the target's native vector width (AVX2 and portable "
        "builds: two and four vectors a panel; AVX-512 one, as before): every result here ran "
        "the AVX-512 kernels, whose loops are the same; the seeds are bit-identical at every "
        "SIMD level (kmeans_plusplus on 1e5 x 16 and x 128 rows, k = 100, float32 and float64, "
        "and on the scale mixtures), and AVX-512 seeding took the same time in interleaved "
        "processes (20,000 x 128, k = 100: 51.1-53.6 ms before, 50.7-52.3 after; 64,000 x "
        "64, k = 1000: 1.00-1.11 s, 1.04-1.10 s; AMD EPYC Zen 4, 2026-11-30).",
    "77f9ae10ab73e94d8e53e7c39cc3189ed15f6afd":
        "the regroup's carried bound (min(own, max(other, gap))) written once as an inline "
        "helper for lazy_regroup and predict_lazy_kept: the same comparisons in the same "
        "order; bench/passes.py's per-pass counts (changed, searched, tightened, jumped) "
        "and SSE/n are identical before and after at 1e5, 1e6 and 1e7 x 16, k = 1000.",
    "bba54f907922ea0d665e98461847b5999af55787":
        "kernel-twin comments in _kmeans.pyx (two comment lines reworded, no line moved) and "
        "gmm_simd.h: the disassembly of _kmeans's module is identical before and after "
        "(objdump -d).",
    "1b418bfcddf04a3e498a026c87067aa60cb231ab":
        "the minother section's comment of gmm_simd.h moved back above its macro: comments "
        "only; every gmm_* function of _kmeans and _restarts compiled to the same "
        "instructions (objdump, before and after).",
    "6599cf745aa09971bf995ebde450786a7b8d76e4":
        "the lane-minimum shuffle loop of gmm_simd.h written once as a macro used by the "
        "search's merge and the jumped centers' check: every gmm_* function of _kmeans and "
        "_restarts compiled to the same instructions (objdump, before and after).",
    "79360b996f83b00e00d5e08c8b56a3d5c39fe24a":
        "comments above the walks' two block helpers (_kmeans.pyx _walk_blocks, _walks.pyx "
        "_local_blocks) marking them as kernel twins: no operation changed.",
    "23dbc057b4f63e70d1e2f76cc3af7384c2d662c3":
        "comments above the walks' two parallel loops (_kmeans.pyx walk, _walks.pyx "
        "local_walk) and _restarts._search's signature wrapped over four lines: no operation "
        "changed.",
    "29a8057ef9d0545ecf46c8a0ed9a3532099ac706":
        "the float64 screening guard: rows with ||x||^2 + max ||c||^2 outside [1e-30, 1e37) "
        "are searched in float64; every benchmark's rows are inside (|x| < 1e4), so the labels "
        "are the same, at one comparison a screened row",
    "dcb7435ed2096ddbeb7b7d5883993968386ffb36":
        "the lazy pass's docstring in _kmeans.pyx, nothing else (the syntax-tree comparison "
        "that lets docstring-only commits through reads Python files only)",
    "4f3c2f7ae439a0f352eaa9992f1249c0eb9f5417":
        "the lazy pass's check output renamed (jbest -> jlb2) and an unused local dropped "
        "from the test-only jump_lower_bounds: the same operations",
    "bd7dadee3343613a5284e8a8eb1c93645d285a7f":
        "a comment above sqnorm in _kmeans.pyx (sqdist's kernel twin), nothing else",
    "95468e1bff11067d0e07c2888da3e23f01702314":
        "pp_step_panel's Cython wrapper refuses d = 0 (one comparison a call, before the "
        "kernel), and a comment in gmm_simd.h: all 68 gmm_* functions of _kmeans and those of "
        "_restarts and _walks compile to the same instructions as f089f29's build (objdump, "
        "function by function, AVX2 machine, 2026-12-01)",
    "63338527d86bb36a7b6c9955bf9b3aa3736abb9f":
        "float64 rows beyond float32's range seeded and searched in float64: for data in range "
        "(every benchmark's) k-means++ adds one max over the seeded rows' distances and a copy "
        "of the generator's state (5 us at 20,086 rows, 16 us at 1e5, 0.36 ms at 1e6; 2 us), "
        "and the search layout one comparison of max ||c||^2 per pass; the 68 gmm_* functions "
        "of _kmeans compile to the same instructions as main's b529a7e build (objdump, function "
        "by function), and 33 fits and seedings (GMMKMeans default, eta=1, KMeans, "
        "kmeans_plusplus; float32 and float64, d = 2 to 128, k = 15 to 1000) came out "
        "bit-identical before and after (/work/q/s28/ident.py, Intel Xeon, AVX-512, "
        "2026-12-01)",
    "2b14fdfa10b5e4e10e88b52fd090875a7331ab35":
        "gmmfast cluster compares its output paths with its input before any work: the CLI's "
        "argument checks only, which no bench script runs",
    "d45ecd8940bbf0c94338e941240f08ae084efb9d":
        "GMMKMeans's parameter checks: restarts capped at 1,000,000 and init's array form "
        "array-like; every value a bench script passes is accepted as before and takes the "
        "same path",
    "b7cfd2efdcd45167dddd23ff6dcd2a8ddecf1890":
        "INIT_FORMS split over lines (the same syntax tree but for line numbers)",
    "b8f7c54f82e23eff78e8ff8417f597eca8c6915e":
        "a comment in gmm_simd.h (what the AVX-512 panel step's prefetch measured), nothing "
        "else",
    "129b20f001b9c013f42f373ef2b73e7c3d8478c9":
        "the data checks: a fit refuses data below min_abs (one comparison of the extent it "
        "already computes; 0.75 us) and names weights beyond X's dtype (the weights' check now "
        "skips check_array's second scan: 69 us against 121 us at 1e5 weights); every bench's "
        "data and weights pass as before, and the 33 fits and seedings of /work/q/s28/ident.py "
        "are bit-identical to b529a7e's (Intel Xeon, AVX-512, 2026-12-01)",
    "a9ace2a7b49a7fac24f1afbfabaa586c8ea3f8cb":
        "which entry points ask for that underflow check (an argument of as_rows): the same "
        "checks of the same data otherwise",
    "3baa7f2dd43c07a372b21469d69161df86c77a47":
        "set_output checks that pandas or polars is installed when one is chosen, and "
        "transform imports it through importlib: no bench script calls set_output, and "
        "without it transform returns the same ndarray as before",
    "c5ebc305734808756a9c45c8f0dd47d8a8e13a3b":
        "the fits check that the objective cannot overflow float64 (unweighted: n times a "
        "bound, about 1 us; weighted: one sum of the weights, 0.04 ms at 1e5 and 0.44 ms at "
        "1e6), cost totals summed by exact_sum (math.fsum's value; inf only where fsum raised), "
        "sparse fits held to the underflow check, the Dask first pass checking each block "
        "with check_magnitude instead of np.isfinite (1.06 against 0.70 ms a block of "
        "100,000 x 16, 12.3 against 12.9 ms at x 128, once per fit), init='random' naming too "
        "few weighted rows: every bench's data passes as before, the 33 fits and seedings of "
        "/work/q/s28/ident.py and 16 Dask fits (/work/q/s29/ident_dask.py: default, eta=1, "
        "weighted, random walks; float64 and float32) are bit-identical to b84aeb8's (Intel "
        "Xeon, AVX-512, 2026-12-01)",
    "27caa0d3fd0a709e0732a61d772d9843e33c670b":
        "centroid_index and sse_per_point check their arrays' magnitude (one scan of k "
        "centroids, or of X where sse_per_point is called, which the bench scripts do not): "
        "the same arithmetic after the check",
    "6311f4ad796968cc7008c2376d19cd7c890fb6c3":
        "generalized_mm's stop gap is inf when tol is inf (it was inf x |F(w_0)|, NaN at "
        "F(w_0) = 0): no bench script runs with tol = inf, and for finite tol the same product",
    "11c05d301383476866de1fae1f9adaa0383cb7e7":
        "the Potts functions check that an energy cannot overflow float64, from the extent "
        "check_array computed before (the same one scan of the unaries or costs), and sum "
        "with exact_sum (math.fsum's value when finite): alpha_expansion, grid_energy and "
        "potts_lagrangian gave bit-identical labels, energies and costs on b84aeb8 and after "
        "(/work/q/s29/ident_potts.py: 18 arrays, L = 2, 5, 20; Intel Xeon, 2026-12-01)",
    "d6251c4c1c3d8de15230543df84bbd0fc2aae6d1":
        ("solve_simplex_qp refuses an indefinite G (a Cholesky at its public entry; the cutting-plane solver calls the internal _qp, unchanged): " + _LSSVM_CHECKS),
    "186a95a1a1cd20603b48cdde32d77b1411204bd6":
        ("RegionPartModel.phi_sum checks z's shape (m, R), which every internal caller passes: " + _LSSVM_CHECKS),
    "e461282ad653d0e624dfc1e08734fb88df221c13":
        ("check_loss_matrix through check_array (the same float64 copy of a numeric loss matrix, once per fit): " + _LSSVM_CHECKS),
    "fbc77a5e184b90a15e9c8757274857941299485c":
        ("potts_select checks its counts and refuses -inf costs through lagrangian_select's cost check: " + _LSSVM_CHECKS),
    "6ed8805b27c06cb39b85d0e9c107bdfdaad035e8":
        ("MultifoldBias checks n_folds, tol and max_iter in setup (once per fit): " + _LSSVM_CHECKS),
    "7b2d0b12ed4394f71a26ed7507c0aff9c63ddf1e":
        ("LatentSSVM and LSSVMBounds check what a model or bias returns (n_latent, size_joint_feature, one joint_feature call, the scores of the first pass at w = 0, a select_valid bound's shape and range, a gain table's dtype): once per fit or per selection, on arrays of the examples' size: " + _LSSVM_CHECKS),
    "ea9c1176a3df336449ab646d9b9d4208dcfa0757": _CLI_CHECKS,
    "7e55521c0c76f56968b5703ccdb8bc2b42fbdde6": _CLI_CHECKS,
    "df37410a7364b9a5d55de9b74fd9ce30717ef0a2": _CLI_CHECKS,
    "467c951772b398bdbaf7287baa95dbd33de9f774": _CLI_CHECKS,
    "d6c4dac020c7181ffcddc8973eb3e692a7399bf8":
        "KMeans on sparse X takes the objective-range check's extent from check_csr (one scan "
        "of the stored values a fit where there were two; dense X is untouched): 3246 arrays "
        "of k-means fits and seedings (/work/q/s30/ident.py: GMMKMeans default and eta = 1, "
        "KMeans dense, weighted and sparse float64 / float32, kmeans_plusplus; d = 2 to 128, "
        "k = 15 to 1000) bit-identical on 6484d12 and after (Intel Xeon, 2026-12-01); the "
        "one bench with sparse fits, dropin.md (100k x 10,000 CSR, 5.86e6 stored values), "
        "saves the scan: 13 ms of its 2.63 s fit (0.5 %), inside its run-to-run spread",
    "fe8826e290fd6e32ff1185c519c16b25f9a814ae":
        "the k-means objective's and the Potts energies' range checks share one helper "
        "(_validation.check_sum_bound): the same comparison of the same bound, the messages "
        "unchanged (/work/q/s30/msgs.py); k-means fits bit-identical (the 3246 arrays of "
        "/work/q/s30/ident.py) and 126 Potts outputs (/work/q/s30/ident_potts.py: "
        "alpha_expansion with its trace, grid_energy, potts_energy, potts_lagrangian; L = 2, "
        "5, 20; float32 and float64) bit-identical on 6484d12 and after (Intel Xeon, "
        "2026-12-01)",
    "97e1d1a2591f7f6070557d6078256840829f277e":
        "a bias's score checked to be a real number, on read-only views of the labels and "
        "costs (biased selection only: no bench script selects with a bias): GMMKMeans with "
        "selection='balanced', balanced_bias and a lambda, float32 and float64, 108 arrays "
        "(/work/q/s30/ident_bias.py) bit-identical on 6484d12 and after (Intel Xeon, "
        "2026-12-01)",
    "154f517873ea870a3e149caa5ce057de6a868b56": _LSSVM_FEATURE_CHECKS,
    "dadb2ae6efe3d2a93abb175c3550230ca5bfc23f": _LSSVM_FEATURE_CHECKS,
    "3a2d8ba3090a2d1feba59fcc80dfb85c3a80f9c3": _LSSVM_FEATURE_CHECKS,
    "1d482c1a06b4c0a3e15be2bdb4c4c4eafa60824f": _LSSVM_FEATURE_CHECKS,
    "eebc932698bf1563f166914dfb1ebd54d0f01cbc": _LSSVM_FEATURE_CHECKS,
    "329037840c6fcb223e4cb26b30eeee8421cc029c": _LSSVM_FEATURE_CHECKS,
    "02f012bb7dc847f7a1105b56ee22b0b7c0f12e7c": _CLI_WRITES,
    "8cd2cab9cbc8997a60a6735cdd55e08273da7465": _CLI_WRITES,
    "cdb276dc756b1c57b6cb09755c3f133e12e127f7": _CLI_WRITES,
    "b8c968ea3202ad064213aa4ff00216de230e9ff5": _CLI_WRITES,
    "09b9e6b3f8c5f1448cb8788e6cc646af708369c5": _CLI_WRITES,
    "ebc8968664aa2ad173a9f985c4af785402c877b1": _CLI_WRITES,
    "53d42486acfcb80ba6b446bb422dc47e445e6dc9": _CLI_WRITES,
    "c06c5f71dfc9867aa90657ac68a08d41e4d16912": _CLI_WRITES,
    "f2e21f1556a7a2f58705c65bc598e3600b159727": _DASK_CHECKS,
    "2ecc4e8bf3567eac6e5c15368b0bacb8a9cb52e0": _DASK_CHECKS,
    "2d7e141adcf5b4dc176f525361185d39b7f731bb": _DASK_CHECKS,
    "a80089d0e83860b90b1725a173d4327d588b3759": _DASK_CHECKS,
    "0bd7545333624446175f155d9ae31686fc403b7d": _DASK_CHECKS,
    "27fc80d66c1b0fa419129a5e92def0307d9bf361": _DASK_CHECKS,
    "05d74e8598b28032efe3e134387d23b10e68627d": _DASK_CHECKS,
    "07ee68d3a3e6ea821694d1127373b854b78deb60": _DASK_CHECKS,
    "a73771cf44232accbfd073a489317e94eeda6fc0":
        "read_points refuses an empty path before anything else; every other path runs "
        "the same code (no bench script reads points with read_points)",
    "036ede4cad1b493e23d3e00051ba38f5eb48d373":
        "python -m gmmfast.cli runs gmmfast/__main__.py, whose lines it "
        "copied: the same calls; no bench script runs either entry point",
    "f2b20a17f0996ed35b20ff69803d463ffaf72c4a":
        "a Dask fit seeds its sample through seed_centers instead of a copy of its last "
        "lines: the same _plusplus/_parallel calls with the same arguments; the 6012 arrays "
        "of /work/q/s32/dask/identity.py bit-identical on 3290378 and after (Intel Xeon, "
        "2026-12-02)",
    "b3d76f4a7426cc01b545f01d605f7748fb84ee55":
        "load_sipu writes a download through gmmfast._atomic instead of its own temporary "
        "file: the same bytes kept (its SHA-256 checked as before), a cached file read by "
        "the same code; the scripts read the data, never time the download",
}

#: The same for the results of some scripts only: commits that change code those scripts
#: reach but, checked by a person as the reason says, none of their figures. Full hash ->
#: (the bench scripts, why).
_SCENE_PARTS_SAME = (
    "the k-means kernels' batch (the AVX-512 search's 8-point blocks, the lazy pass's batched "
    "check of the jumped centers, k-means++ in float lanes): the scene scripts reach k-means "
    "only through discover_parts, and its parts and the coherent labels from them (Potts "
    "weights 0, 0.25, 0.5, 1; d = 66 with 100 training images, and the defaults) came out "
    "bit-identical on the batch's build and on d65a801's (AVX-512, 2026-11-29); the latent "
    "SVMs they train and time are code the batch does not touch")
_SCENE_PARTS_SAME_JUMP = (
    "the incremental passes' check of the jumped centers (gmm_minother, the loose upper bound "
    "checked first, the dispatch macro): the scene scripts reach k-means only through "
    "discover_parts, and its parts and the coherent labels from them (Potts weights 0, 0.25, "
    "0.5, 1; d = 66 with 100 training images, and the defaults) came out bit-identical on "
    "0559dfe's build and on fe68f8b's (AVX-512, 2026-11-29); the latent SVMs they train and "
    "time are code the change does not touch")
_SCENE_PARTS_SAME_SEARCH = (
    "the passes' ||x||^2 in four partial sums, the search's last padding vector skipped, the "
    "jumped check's row prefetch: the scene scripts reach k-means only through discover_parts, "
    "and its parts and the coherent labels from them (Potts weights 0, 0.25, 0.5, 1; d = 66 "
    "with 100 training images, and the defaults) came out bit-identical on 38aedee's build and "
    "on 043d7f1's (AVX-512, 2026-11-29); the latent SVMs they train and time are code the "
    "change does not touch")
_WIDE_COST = (
    "the search's padding check a vector at a time, and wide rows' costs (d >= 32) in "
    "gmm_cost.h's SIMD arithmetic: _common.pxd's sqdist and sqdist_resid, the only code the "
    "change gives other results, are called by the k-means kernels alone (_kmeans, _restarts, "
    "_walks), which the LS-SVM and Potts scripts never reach; the scene scripts reach k-means "
    "only through discover_parts, and its parts and the coherent labels from them (Potts "
    "weights 0, 0.25, 0.5, 1; d = 66 with 100 training images, and the defaults) came out "
    "bit-identical on 2c48ecd's build and on main's 34e2d7f (AVX-512, 2026-11-29)")
_WALK_WIDTH = (
    "sqdist split into sqdist_narrow and row_cost (the same arithmetic), the walks compiled "
    "per row width, the search told its column count by its caller, two unused things "
    "dropped from gmm_cost.h: the code the LS-SVM and Potts modules compile from _common.pxd "
    "is unchanged (they call none of sqdist, sqdist_narrow or row_cost), and the rest is in "
    "the k-means kernels, which their scripts never reach; the scene scripts reach k-means "
    "only through discover_parts, and its parts and the coherent labels from them (Potts "
    "weights 0, 0.25, 0.5, 1; d = 66 with 100 training images, and the defaults) came out "
    "bit-identical on 4aafca7's build and on main's 0828778 (AVX-512, 2026-11-30)")
_NEIGHBOURS_MIDDLE = (
    "the center graph's neighbours by one scan in a kernel (nearest_others), the walks' twin "
    "parallel loops folded into one helper each, a middle level of 256 rows per center in "
    "'auto' (fits of 1e7 rows and more at k = 1000), numpy.random imported with the package: "
    "the LS-SVM and Potts scripts reach none of the k-means code (and numpy.random was "
    "imported before their timers either way); the scene scripts reach k-means only through "
    "discover_parts (Lloyd from k-means++ on every row: no levels), and its parts and the "
    "coherent labels from them (Potts weights 0, 0.25, 0.5, 1; d = 66 with 100 training "
    "images, and the defaults) came out bit-identical on 46912a2's build and on main's "
    "9c92e02 (AVX-512, 2026-11-30)")
_BOUNDS_SCAN = (
    "the incremental Lloyd pass's scan of the bounds moved into a vectorised C loop "
    "(gmm_bounds.h), the same rows kept and the same bits stored, and the jumped centers' "
    "check reducing a row's lanes by shuffles: the LS-SVM and Potts "
    "scripts reach none of the k-means code; the scene scripts reach k-means only through "
    "discover_parts, whose parts and the coherent labels from them (Potts weights 0, 0.25, "
    "0.5, 1; d = 66 with 100 training images, and the defaults) came out bit-identical on "
    "8cc9062's build and on main's b357bfb (AVX-512, 2026-11-30)")
_WHOLE_ROWS = (
    "sample_size='auto' fits every row where its sample would hold half the rows and fewer "
    "than 2d rows per center (the default selection only): the LS-SVM and Potts scripts "
    "reach none of the k-means code; the scene scripts reach k-means only through "
    "discover_parts (Lloyd from k-means++ on every row: no levels), whose parts and the "
    "coherent labels from them (Potts weights 0, 0.25, 0.5, 1; d = 66 with 100 training "
    "images, and the defaults) came out bit-identical on 8575d74's build and on main's "
    "5e59324 (AVX-512, 2026-11-30)")
_PANEL_SEEDING = (
    "k-means++ seeds dense rows from float32 panels of 16 rows (the same distances, the sums "
    "in row lanes), and the exact pass checks more than two jumped centers blocked (exact "
    "pruning: the same labels): the LS-SVM and Potts scripts reach none of the k-means "
    "code; the scene scripts reach k-means only through discover_parts, whose parts and the "
    "coherent labels from them (Potts weights 0, 0.25, 0.5, 1; d = 66 with 100 training "
    "images, and the defaults) came out bit-identical on 180928a's build and on main's "
    "0af19b9 (AVX-512, 2026-11-30)")
_STICKY_JUMPED = (
    "the incremental Lloyd passes keep their jumped centers from pass to pass with a second "
    "lower bound per row (exact: the labels and F of a full search): the LS-SVM and Potts "
    "scripts reach none of the k-means code; the scene scripts reach k-means only through "
    "discover_parts, whose parts and the coherent labels from them (Potts weights 0, 0.25, "
    "0.5, 1; d = 66 with 100 training images, and the defaults) came out bit-identical on "
    "5d473ad's build and on main's 3141ea1 (AVX-512, 2026-11-30)")
#: The scripts whose figures no k-means code reaches but discover_parts (the scene scripts'
#: Lloyd on every row): a k-means kernel change is declared unchanged for them at once.
_OUTSIDE_KMEANS = ("scenes_table3", "scenes_calibration", "lssvm_calibration",
                   "lssvm_crammer_singer", "lssvm_inference", "lssvm_selection", "lssvm_table2",
                   "potts_throughput")
#: Every script but bench/init.py (the only one that fits with an init_size above the coarse
#: sample; scale_dask passes init_size to initial_centers, which fit_gmm's change does not reach).
_ALL_BUT_INIT = ("d31_picture", "dropin", "equal_time", "escape", "eta_sweep", "iterations",
                 "lloyd_iteration", "lssvm_calibration", "lssvm_crammer_singer",
                 "lssvm_inference", "lssvm_selection", "lssvm_table2", "memory", "passes",
                 "polish", "potts_throughput", "restarts", "scale", "scale_dask",
                 "scenes_calibration", "scenes_iteration", "scenes_selection",
                 "scenes_table3", "seeding", "seeds", "sweep", "table1", "walk_samplers",
                 "walk_steps", "walk_throughput")
#: Every script but bench/seeding_speed.py (the only one that times k-means++ at the AVX2 and
#: portable levels): _ALL_BUT_INIT with init and faiss_iterations.
_ALL_BUT_SEEDING_SPEED = tuple(sorted(_ALL_BUT_INIT + ("init", "faiss_iterations")))
_INIT_SIZE_ABOVE_SAMPLE = (
    "coarse to fine, an init_size above the coarse sample (or None) seeds on that many rows of "
    "X; init_size='auto' (every script here but bench/init.py) and smaller sizes take the old "
    "path, the rng drawn in the same order: labels, centers and inertia_ bit-identical before "
    "and after at 1e5 x 16 and x 64, k = 100, 3e5 x 16, k = 100, 2e5 x 64, k = 1000, with "
    "init_size=5000, with k-means||, with sample_size=4000 and init_size=3000, with eta = 1 "
    "on a sample, and a Dask fit on a sample (/work/q/s23/ident.py, AVX-512, 2026-11-30)")
DECLARED_UNCHANGED_FOR: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "41b2d4ec5222f21e368e46ad55d717fbdd6e5157": (
        tuple(x for x in _ALL_BUT_SEEDING_SPEED + ("seeding_speed",)
              if x not in ("lssvm_table2", "lssvm_calibration")),
        "the cluttered objects' oracle (experiments.table2.oracle_fold) seeds its solver: only "
        "bench/lssvm_table2.py and bench/lssvm_calibration.py train it"),
    "5603b4cbc513734abcf87ee8df4befcc9c42f8ef": (
        ("seeding",),
        "bench/seeding.py takes the coarse sample size from GMMParams.levels instead of its "
        "own copy of the auto rule: 20,000 rows at 1e5 x 16, x 64 and x 128, k = 100 and "
        "64,000 at 1e6 x 64, k = 1000 either way, so the same contenders ran (checked by "
        "calling both, 2026-11-30)"),
    "a5b3b38309551cdbffe52f3d9e0b466db397bb55": (_ALL_BUT_INIT, _INIT_SIZE_ABOVE_SAMPLE),
    "eefb20b61ec59b4cd32e5be1ddd8dce47411a812": (_ALL_BUT_INIT, _INIT_SIZE_ABOVE_SAMPLE),
    **{sha: (("scenes_table3", "scenes_calibration"), _SCENE_PARTS_SAME) for sha in (
        "94aa664cd5331a415dfb7217ea39bf05f37ab754", "28956fc72376c30de778d137208c6fcf94d849dc",
        "f6eb5556c8f4dc0810965156560548814b7809fe", "8a643988a903c27ee8e4444976a8cd7f835dc97c")},
    **{sha: (("scenes_table3", "scenes_calibration"), _SCENE_PARTS_SAME_JUMP) for sha in (
        "32339d5749583687853f1c172928ae15eac1b094",
        "e89fac57050fcdedb28e423dce86d09200fdc026",
        "0559dfe5147a6fd04145d8734d158c6687795a86")},
    **{sha: (("scenes_table3", "scenes_calibration"), _SCENE_PARTS_SAME_SEARCH) for sha in (
        "f9e458d820415c3f50c1b23bf34a05eb77dcc849",
        "c2a9ed97eca7a2141063b3d7170577d0a67b563d",
        "38aedeec4f79209291f51c6fd74cf784ab59d4d9",
    )},
    **{sha: (_OUTSIDE_KMEANS, _WIDE_COST) for sha in (
        "82d7702d949c1b08d34a04a982885d4f61f87bd4",
        "2c48ecd269e96b75ba5469fb952f0601a4f5bf2f")},
    **{sha: (_OUTSIDE_KMEANS, _WALK_WIDTH) for sha in (
        "ee20d77c85407807fc5550140e2e07363b73026a",
        "ff96bf7c4457df0108fea1029aadcc676a67d3f0",
        "d68f86fdac188259e42910b1040f6761fc2bc447",
        "4aafca7e2e0bf0d3dc4d9f79f0650ec9094fafd4")},
    **{sha: (_OUTSIDE_KMEANS, _NEIGHBOURS_MIDDLE) for sha in (
        "1194c2be38ed42b184fb3b9d349b3e0455d8f687",
        "d34d96a07573259e3c9c42b837e3dd13774835ff",
        "59bcd69d6910cff778a7ad0db8b91d526e18ea45",
        "46912a2f2be6b662d13a74a7649937cebc19d16f")},
    **{sha: (_OUTSIDE_KMEANS, _BOUNDS_SCAN) for sha in (
        "b39641410af4314feb0dc930451bcfe968b1c78e",
        "8cc9062dd9dce6a8c7782138a82a3759a3efb4dc",
        "2352dd90a19df1f9ee8b121f367b79406a214e04")},
    **{sha: (_OUTSIDE_KMEANS, _WHOLE_ROWS) for sha in (
        "8575d749d8194a07158431de2e647860036612f3",)},
    **{sha: (_OUTSIDE_KMEANS, _PANEL_SEEDING) for sha in (
        "5f0d8e06ec1c789dcc7fff8884c82ccc3de4c3b1",
        "f5f943db53b7a2c0a59e27ef4878f207d648db06",
        "a56427cba22539816e658df3fc0190c30edd45ff",
        "180928a4f46cfc985a104a9bd3c5832092c16381",
    )},
    **{sha: (_OUTSIDE_KMEANS, _STICKY_JUMPED) for sha in (
        "49fdc6837bfe21587f998a9a58da43e8d1261ccd",
        "5d473ad70328371b47aa37bc19ddab6d3a4fa20d",
    )},
    "f089f2901d650705a6e5f0e823d2dc308170e6ce": (
        _ALL_BUT_SEEDING_SPEED,
        "the k-means++ panel step asks for the panels 16 KB ahead, on the AVX2 and portable "
        "builds only: the AVX-512 variant compiles to the same vector instructions (objdump "
        "of gmm_ppp_f_avx512 before and after: 27 of 1474 lines differ, all scalar: register "
        "moves, lea, cmp, test and imul of the one more argument, and nops), and every "
        "result these scripts keep ran the AVX-512 kernels but scale_faiss_zen3.md, measured "
        "after it, and scale_faiss_zen4_avx2.md, removed with it (its Zen 4 is not at hand "
        "to run it again); the seeds are bit-identical (64 fits and seedings, float32 and "
        "float64, d = 2 to 128, k = 15 to 1000: /work/q/s26/ident.py, AVX2, AMD EPYC Zen 3, "
        "2026-11-30). bench/seeding_speed.py times the AVX2 and portable steps: not declared"),
    "d184d955552c962d62676429dd564d5952c658c4": (
        ("scale",),
        "bench/scale.py gains four contenders (GMMKMeans with eta=1, sample_size=16*k or "
        "32*k and max_iter=3 or 10) under new names, and the fit key that tells which "
        "contenders run the same fit gains max_iter (300, the default, for every earlier "
        "contender, so no earlier pair changes): every contender an earlier report ran runs "
        "the same code, and its rows and its Pareto verdict, which judges the gmmfast "
        "configurations that report ran, stay true; a re-run of a command that selects all "
        "contenders (or 'gmmfast*') would add the four new rows"),
}

#: Bench script (bench/NAME.py) -> the package paths its figures measure. The script itself is
#: always added; a script not listed here measures DEFAULT_MEASURED.
MEASURED: Dict[str, Tuple[str, ...]] = {
    "d31_picture": _CLUSTER,
    "dropin": _CLUSTER + _COMMON,
    "equal_time": _CLUSTER,
    "escape": _CLUSTER + _COMMON,
    "eta_sweep": _CLUSTER,
    "init": _CLUSTER + _COMMON,
    "iterations": _CLUSTER,
    "lloyd_iteration": _CLUSTER + _COMMON + RESTARTS,
    "memory": _CLUSTER,
    "polish": _CLUSTER,
    "scale": _CLUSTER + _COMMON,
    "scale_dask": _CLUSTER_AND_DASK + _COMMON,
    "sweep": _CLUSTER,
    "table1": _CLUSTER,
    "walk_samplers": _CLUSTER,
    "walk_steps": _CLUSTER + NOT_REACHED,
    "walk_throughput": _CLUSTER + NOT_REACHED,
    "lssvm_calibration": _OBJECTS,
    "lssvm_crammer_singer": _OBJECTS + _COMMON,
    "lssvm_inference": _OBJECTS + _COMMON,
    "lssvm_selection": _OBJECTS,
    "lssvm_table2": _OBJECTS,
    "potts_throughput": _POTTS + _COMMON,
    "scenes_calibration": _LSSVM,
    "scenes_iteration": _LSSVM + _COMMON,
    "scenes_selection": _LSSVM,
    "scenes_table3": _LSSVM,
}
DEFAULT_MEASURED: Tuple[str, ...] = ("gmmfast/", "setup.py")

#: Extensions of results files (a header is read from .md files only).
RESULT_EXTS = ("md", "png", "svg", "pdf", "csv", "json")
_EXT = "|".join(RESULT_EXTS)
_PATH_CITE = re.compile(rf"(?:[\w.+-]+/)*results/([\w.+-]+\.(?:{_EXT}))(?![\w.+-])")
_BARE_CITE = re.compile(rf"(?<![\w/.+-])([\w+-][\w.+-]*\.(?:{_EXT}))(?![\w.+-])")
#: A pattern naming several results files, ``scenes_table3_truth_d66_n100_walk*.md``, bare or
#: under a ``results/`` path (``bench/results/scale_faiss*.md``): at least one character of a
#: name before its first ``*`` (``*.md`` alone names no file in particular).
_GLOB_CITE = re.compile(rf"(?<![\w.*+-])(?:(?:[\w.+-]+/)*results/|(?<!/))"
                        rf"((?:[\w+-][\w.+-]*)\*[\w.*+-]*\.(?:{_EXT}))(?![\w.+-])")
_COMMAND = re.compile(r"^- command:.*?\bbench/([\w-]+)\.py", re.M)
_COMMIT = re.compile(r"^- commit:[ \t]*([^\n]*)$", re.M)
_HEADER_COMMAND = re.compile(r"^- command: `(python bench/[^`]+)`", re.M)
#: A run a merged report lists, with the commit it ran on: scale.py's "- START: `python
#: bench/...` on commit C" lines and scale_dask's "Measured: command: `python bench/...`; ...;
#: commit: C;" parts (the header names the last run only).
_RUN_COMMITS = re.compile(r"^(?:- [\dT:-]+: `(python bench/[^`]+)` on commit ([^\s;]+)"
                          r"|Measured: command: `(python bench/[^`]+)`;[^\n]*?; commit: "
                          r"([^\s;]+))", re.M)
_SIMD = re.compile(r"SIMD level[^:\n]*:\s*([^\n]*)")
_SIMD_LEVEL = re.compile(r"(AVX-?512\w*|AVX2|AVX|SSE[\d.]*|NEON|SVE|portable|scalar|generic|"
                         r"[0-2]\b)", re.I)


@dataclass
class Entry:
    """One results file and the verdict on it."""
    name: str                                    # file name in bench/results/
    cited_by: List[str] = field(default_factory=list)
    header_from: Optional[str] = None            # the .md whose header speaks for it
    script: Optional[str] = None
    command: Optional[str] = None                # the header's command line
    commit: Optional[str] = None                 # as written in the header
    dirty: bool = False
    simd: Optional[str] = None
    changes: List[str] = field(default_factory=list)   # commits since, touching measured paths
    reasons: List[str] = field(default_factory=list)
    runs: List[Tuple[str, str]] = field(default_factory=list)  # a merged report's (command,
    stale_runs: List[str] = field(default_factory=list)        # commit); the stale commands

    @property
    def stale(self) -> bool:
        return bool(self.reasons)


def git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)


def citing_files(root: Path) -> List[Path]:
    """README.md, docs/**/*.{rst,md,py} and examples/*.py, those that exist and git does not
    ignore (a docs build writes pages of its own under docs/, one per results file)."""
    out = [root / "README.md"] if (root / "README.md").is_file() else []
    docs = root / "docs"
    if docs.is_dir():
        out += sorted(p for ext in ("rst", "md", "py") for p in docs.rglob(f"*.{ext}")
                      if p.is_file())
    examples = root / "examples"
    if examples.is_dir():
        out += sorted(p for p in examples.glob("*.py") if p.is_file())
    ignored = git(root, "ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                  "--", "README.md", "docs", "examples")
    skip = {root / f for f in ignored.stdout.split("\0") if f} if ignored.returncode == 0 \
        else set()
    return [p for p in out if p not in skip]


def citations(root: Path) -> Dict[str, List[str]]:
    """Results file name -> the files citing it (relative paths)."""
    results = root / "bench" / "results"
    scripts = {p.stem for p in (root / "bench").glob("*.py")}
    cited: Dict[str, List[str]] = {}
    for path in citing_files(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        names = set()
        for m in _PATH_CITE.finditer(text):
            name = m.group(1)
            if not Path(name).stem.isupper():          # bench/results/NAME.md: a placeholder
                names.add(name)
        for m in _BARE_CITE.finditer(text):
            name = m.group(1)
            if (results / name).is_file() or Path(name).stem in scripts:
                names.add(name)
        for m in _GLOB_CITE.finditer(text):
            if results.is_dir():
                names.update(p.name for p in results.glob(m.group(1)) if p.is_file())
        for name in names:
            cited.setdefault(name, []).append(rel)
    return cited


def header_source(results: Path, name: str) -> Optional[str]:
    """The .md results file whose header speaks for ``name``."""
    if name.endswith(".md"):
        return name if (results / name).is_file() else None
    mds = sorted(p.name for p in results.glob("*.md"))
    naming = [md for md in mds if name in (results / md).read_text(errors="replace")]
    stem = name.rsplit(".", 1)[0]
    if not naming and "_" in stem:      # figure4_center.png among "figure4_top-left.png (and
        family = stem.rsplit("_", 1)[0] + "_"          # _center, _random)"
        naming = [md for md in mds if family in (results / md).read_text(errors="replace")]
    if naming:      # the shortest name first: the main file rather than a variant's
        return min(naming, key=lambda md: (len(md), md))
    prefixes = [md for md in mds if stem.startswith(md[:-3])]
    return max(prefixes, key=len) if prefixes else None


def read_header(entry: Entry, results: Path) -> None:
    text = (results / entry.header_from).read_text(encoding="utf-8", errors="replace")
    m = _COMMAND.search(text)
    entry.script = m.group(1) if m else None
    entry.command = m.group(0) if m else None
    if m:
        entry.command += text[m.end():].split("\n", 1)[0]
    entry.runs = [(m.group(1) or m.group(3), (m.group(2) or m.group(4)).removesuffix("-dirty"))
                  for m in _RUN_COMMITS.finditer(text)]
    m = _COMMIT.search(text)
    if m:
        raw = m.group(1).strip()
        entry.dirty = "uncommitted" in raw or "dirty" in raw
        word = raw.split()[0] if raw.split() else ""
        word = word.removesuffix("-dirty")
        entry.commit = word if re.fullmatch(r"[0-9a-fA-F]{4,40}", word) else (word or None)
    levels = []
    for m in _SIMD.finditer(text):
        value = m.group(1).strip()
        if value.lower().startswith("not recorded"):
            continue
        level = _SIMD_LEVEL.match(value)
        if level:
            levels.append(level.group(1))
    entry.simd = levels[0] if levels else None


def named_inits_only(command: Optional[str]) -> bool:
    """Whether a scenes_table3 command starts every run from a named initialisation (its
    ``--inits`` lists only "random" and "truth"; the default list has Potts weights)."""
    m = _INITS.search(command or "")
    return bool(m) and all(i in NAMED_INITS for i in m.group(1).split(","))


def measured_paths(script: Optional[str], command: Optional[str] = None) -> List[str]:
    """The paths whose changes make a results file of ``script`` (run as ``command``) stale."""
    paths = list(MEASURED.get(script, DEFAULT_MEASURED)) if script else list(DEFAULT_MEASURED)
    if script == "scenes_table3" and named_inits_only(command):
        paths = list(_OBJECTS)
    if script:
        paths.append(f"bench/{script}.py")
    return paths + [f":(exclude,glob){p}" for p in DOCS_ONLY]


def _code(source: Optional[str]) -> Optional[str]:
    """The syntax tree of Python source without its docstrings (None: not Python)."""
    if source is None:
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


def _parts(source: Optional[str], names: Tuple[str, ...]) -> Optional[str]:
    """:func:`_code` of the top-level definitions ``names`` of Python source only."""
    code = _code(source)
    if code is None:
        return None
    tree = ast.parse(source)
    kept = [node for node in tree.body if getattr(node, "name", None) in names]
    return _code(ast.unparse(ast.Module(body=kept, type_ignores=[])))


def _show(root: Path, rev: str, path: str) -> Optional[str]:
    out = git(root, "show", f"{rev}:{path}")
    return out.stdout if out.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def changes_code(root: Path, commit: str, paths: Tuple[str, ...]) -> bool:
    """Whether ``commit`` changes more than the comments and docstrings of the Python files
    among ``paths`` (of a file in :data:`MEASURED_PARTS`, of its measured definitions; a file
    added, removed or not Python counts as a change)."""
    files = git(root, "diff", "--name-only", f"{commit}^", commit, "--", *paths)
    if files.returncode != 0:          # the root commit
        return True
    for f in files.stdout.split():
        if not f.endswith(".py"):
            return True
        before, after = _show(root, f"{commit}^", f), _show(root, commit, f)
        if f in MEASURED_PARTS:
            names = MEASURED_PARTS[f]
            before, after = _parts(before, names), _parts(after, names)
        else:
            before, after = _code(before), _code(after)
        if before is None or before != after:
            return True
    return False


def declared(commit: str, script: Optional[str] = None) -> Optional[str]:
    """The full hash of :data:`DECLARED_UNCHANGED` that ``commit`` (a hash prefix) names, or
    of :data:`DECLARED_UNCHANGED_FOR` if it declares ``script``'s results unchanged."""
    commit = commit.lower()
    return next((h for h in DECLARED_UNCHANGED if h.startswith(commit)), None) or next(
        (h for h, (scripts, _) in DECLARED_UNCHANGED_FOR.items()
         if h.startswith(commit) and script in scripts), None)


def later_changes(root: Path, commit: str, paths: List[str], script: Optional[str] = None
                  ) -> Tuple[List[str], str]:
    """(the commits after ``commit`` that change the code among ``paths`` (for the results of
    ``script``), why ``commit`` cannot be judged or is off HEAD's history; "" if neither)."""
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}", commit):
        return [], f"the commit {commit!r} is not a commit hash"
    full = git(root, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}")
    if full.returncode != 0:
        return [], f"commit {commit} unknown to this repository"
    sha = full.stdout.strip()
    if git(root, "merge-base", "--is-ancestor", sha, "HEAD").returncode == 0:
        log = git(root, "log", "--format=%h", f"{sha}..HEAD", "--", *paths)
        return [c for c in log.stdout.split()
                if not declared(c, script) and changes_code(root, c, tuple(paths))], ""
    # not in HEAD's history (a rebased branch): compare the measured trees
    diff = git(root, "diff", "--name-only", sha, "HEAD", "--", *paths)
    if diff.stdout.strip():
        return [], (f"commit {commit} is not an ancestor of HEAD and the measured files "
                    f"differ: {', '.join(diff.stdout.split()[:3])}")
    return [], ""


def check_commit(entry: Entry, root: Path) -> None:
    if not entry.commit:
        entry.reasons.append("no commit in the header")
        return
    if not re.fullmatch(r"[0-9a-fA-F]{4,40}", entry.commit):
        entry.reasons.append(f"the header's commit {entry.commit!r} is not a commit hash")
        return
    paths = measured_paths(entry.script, entry.command)
    entry.changes, why = later_changes(root, entry.commit, paths, entry.script)
    if why:
        entry.reasons.append(why)
    elif entry.changes:
        shown = " ".join(entry.changes[:3]) + (" ..." if len(entry.changes) > 3 else "")
        entry.reasons.append(f"{len(entry.changes)} later commit(s) change what it "
                             f"measures: {shown}")
    if entry.dirty and entry.reasons:
        entry.reasons[-1] += " (and it ran with uncommitted changes)"
    if entry.reasons:
        return           # every run is re-run (the report's own code changed)
    # a merged report's runs on other commits: the package code each measured
    package = [p for p in paths if p != f"bench/{entry.script}.py"]
    judged: Dict[str, Tuple[List[str], str]] = {}
    for command, c in entry.runs:
        if c == entry.commit:
            continue
        if c not in judged:
            judged[c] = later_changes(root, c, package, entry.script)
        changes, why = judged[c]
        if changes or why:
            entry.stale_runs.append(command)
    for c, (changes, why) in judged.items():
        if changes or why:
            n = sum(commit == c for _, commit in entry.runs)
            entry.reasons.append(
                f"{n} run(s) of the report on commit {c}: " + (why or (
                    f"{len(changes)} later commit(s) change the code they measured: "
                    + " ".join(changes[:3]) + (" ..." if len(changes) > 3 else ""))))


def check(root: Path = ROOT, every: bool = False) -> List[Entry]:
    """The verdict on every cited results file (every one in bench/results/ with ``every``)."""
    root = Path(root)
    results = root / "bench" / "results"
    cited = citations(root)
    names = set(cited)
    if every and results.is_dir():
        names |= {p.name for p in results.iterdir()
                  if p.is_file() and p.suffix.lstrip(".") in RESULT_EXTS}
    entries = []
    for name in sorted(names):
        entry = Entry(name, sorted(set(cited.get(name, []))))
        entries.append(entry)
        if not (results / name).is_file():
            entry.reasons.append("cited but not in bench/results/")
            continue
        entry.header_from = header_source(results, name)
        if entry.header_from is None:
            entry.reasons.append("no results file with a header names it")
            continue
        read_header(entry, results)
        check_commit(entry, root)
        if entry.simd is None:
            entry.reasons.append("no SIMD level in the header")
    return entries


def table(entries: Sequence[Entry], verbose: bool = False) -> str:
    rows = [("results file", "status", "commit", "SIMD", "script", "cited by", "why")]
    for e in entries:
        commit = (e.commit or "-") + ("*" if e.dirty else "")
        why = "; ".join(e.reasons) or "nothing it measures changed since"
        if verbose and e.changes:
            why += f" [all: {' '.join(e.changes)}]"
        if e.header_from and e.header_from != e.name:
            why += f" (header of {e.header_from})"
        rows.append((e.name, "STALE" if e.stale else "fresh", commit, e.simd or "-",
                     e.script or "-", ", ".join(e.cited_by) or "-", why))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths) + "  " + "-" * 3)
    return "\n".join(lines)


def commands(entries: Sequence[Entry], root: Path = ROOT) -> List[str]:
    """The commands that re-measure the stale files, one per run, in the order their reports
    list them (a merged report's every run, then its header's command; only its stale runs
    when the header's commit is fresh), each once."""
    results = Path(root) / "bench" / "results"
    out: List[str] = []
    reports = {e.header_from: e for e in entries if e.stale and e.header_from}
    for md, e in reports.items():
        text = (results / md).read_text(encoding="utf-8", errors="replace")
        runs = e.stale_runs or [c for c, _ in e.runs] + _HEADER_COMMAND.findall(text)[:1]
        for c in runs:
            # the header writes the last run's command without its shell quotes: once only
            if c.replace("'", "") not in {o.replace("'", "") for o in out}:
                out.append(c)
    return out


def main(argv: Optional[Iterable[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Report which results files cited by README.md and docs/ were measured "
                    "before the last change to the code they measure.")
    parser.add_argument("--all", action="store_true",
                        help="check every file in bench/results/, not only the cited ones")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository (default: the one holding this script)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list every later commit, not only the first three")
    parser.add_argument("--commands", action="store_true",
                        help="print only the commands that re-measure the stale files, one a "
                             "line (run them from the repository's root)")
    args = parser.parse_args(None if argv is None else list(argv))
    if git(args.root, "rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        parser.error(f"--root {args.root}: not a git repository with a commit")
    entries = check(args.root, args.all)
    if args.commands:
        print("\n".join(commands(entries, args.root)))
        return 1 if any(e.stale for e in entries) else 0
    print(table(entries, args.verbose))
    stale = sum(e.stale for e in entries)
    print(f"\n{len(entries)} results file(s) checked ({'all' if args.all else 'cited'}), "
          f"{stale} stale. '*': measured with uncommitted changes.")
    for sha, why in DECLARED_UNCHANGED.items():
        if git(args.root, "merge-base", "--is-ancestor", sha, "HEAD").returncode == 0:
            print(f"Not counted as a change (DECLARED_UNCHANGED): {sha[:9]}: {why}.")
    shown: Dict[Tuple[Tuple[str, ...], str], List[str]] = {}
    for sha, scope in DECLARED_UNCHANGED_FOR.items():
        if git(args.root, "merge-base", "--is-ancestor", sha, "HEAD").returncode == 0:
            shown.setdefault(scope, []).append(sha[:9])
    for (scripts, why), shas in shown.items():
        print(f"Not counted as a change to the results of {', '.join(scripts)} "
              f"(DECLARED_UNCHANGED_FOR): {' '.join(shas)}: {why}.")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
