"""Table 1 of the paper: G-MM against k-means from identical initialisations.

GMM-200 (generated, seed 0), Norm-25 (generated, seed 0) and D31 (SIPU, from
../shared/data), plus R15 for context; 50 trials per initialisation (forgy,
random partition, k-means++). Rows: k-means (Lloyd, eta = 1), the paper's
G-MM (random bounds from the uniform walk, eta = 0.02, 30 proposals per point
and iteration) and G-MM with the package defaults (merge-split, eta = 0.1).
Objective: SSE per point. The paper's Cloud set is not available.

The same runs as ``gmmfast compare --dataset NAME --trials 50`` (it is this
code); this script adds the paper's numbers and one PNG per data set.
"""
import argparse
import json
import os
import time


from _common import DATA, RESULTS, markdown_table, write_results

# Table 1 of the paper: (avg, std, best) per init: forgy, random partition, k-means++
PAPER = {
    "Norm-25": {"k-means": [(1.9e5, 2e5, 7.0e4), (5.8e5, 3e5, 2.2e5), (5.3e3, 9e3, 1.5)],
                "G-MM": [(9.7e3, 1e4, 1.5), (2.0e4, 0, 2.0e4), (4.5e3, 8e3, 1.5)]},
    "D31": {"k-means": [(1.69, 0.03, 1.21), (52.61, 47.06, 4.00), (1.55, 0.17, 1.10)],
            "G-MM": [(1.43, 0.15, 1.10), (1.21, 0.05, 1.10), (1.45, 0.14, 1.10)]},
    "GMM-200": {"k-means": [(2.25, 0.10, 2.07), (11.20, 0.63, 9.77), (2.12, 0.07, 1.99)],
                "G-MM": [(2.04, 0.09, 1.90), (1.85, 0.02, 1.80), (1.98, 0.06, 1.89)]},
}


WHY = """Why the numbers differ from the paper's:

- **Empty clusters.** Our k-means keeps an empty cluster's previous center; the
  paper's code moved it to the origin (its appendix), which is why its
  random-partition k-means means are so large (D31: 52.6 +- 47.1, far outside
  the data). Random partition puts every initial center near the data mean, so
  k-means is bad from it either way, but less so here.
- **k-means++.** Our k-means++ (like scikit-learn's) is the greedy variant
  (2 + log k candidates per center); the paper's looks like the plain one: our
  k-means from k-means++ is much better on GMM-200 (about 1.82 against 2.12), and
  so is G-MM started there.
- **Walk length.** The paper does not give its walk length, only that a walk
  "can take a couple of minutes". Ours is 30 proposals per point and iteration
  (GMMKMeans's auto); on GMM-200 from random partition quality keeps improving
  with longer walks (bench/results/walk_steps.md: 2.34, 2.08, 1.98 SSE/n for 10, 30,
  100 proposals per point), towards the paper's 1.85, at 20 times the cost.
- **Data.** GMM-200 and Norm-25 are regenerated from their descriptions (seed 0),
  so the instances differ from the paper's. The paper's Norm-25 numbers are on
  another scale than the set it describes: the optimum of the described set has
  SSE/n of about 15 (15 dimensions of unit variance) where the paper's best is
  1.5, and its random-partition k-means mean (5.8e5) exceeds the SSE/n of the
  one-cluster solution of the described set (its total variance, about
  15 x 500^2 / 12 = 3.1e5), which no k-means fixed point can. We report Norm-25 as
  described (Arthur & Vassilvitskii 2007) and compare directions only.
- **Cloud** is not available, so its row is missing.
"""


def _cpus() -> int:
    """The CPUs this process may run on (what OpenMP's default thread count follows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--sets", default="gmm200,norm25,d31,r15")
    ap.add_argument("--eta", type=float, default=0.02)
    args = ap.parse_args()
    from gmmfast.experiments.table1 import (INITS, METHODS, details, fmt, load_dataset,
                                      plot_objectives, run_trials, summarize, table1)

    sections, direction, diffs, all_summaries = [], [], [], {}
    t_all = time.perf_counter()
    for spec in args.sets.split(","):
        data = load_dataset(spec, data_home=str(DATA))
        t0 = time.perf_counter()
        records = run_trials(data, trials=args.trials, eta=args.eta)
        wall = time.perf_counter() - t0
        assert all(r["invariant_violations"] == 0 for r in records)
        summary = summarize(records)
        all_summaries[data.name] = summary
        png = f"table1_{spec}.png"
        plot_objectives(records, METHODS, INITS, args.eta, RESULTS / png,
                        f"{data.name}: SSE per point, {args.trials} trials")
        text = [f"## {data.name} (n={data.X.shape[0]}, d={data.X.shape[1]}, k={data.k}); "
                f"{wall:.0f} s", "", table1(summary, METHODS, INITS, args.eta), ""]
        if data.name in PAPER:
            rows = []
            for method, ours in (("k-means", "k-means"), ("G-MM", "gmm-paper")):
                row = [f"paper: {method}"]
                for i, init in enumerate(INITS):
                    a, s, b = PAPER[data.name][method][i]
                    row += [f"{fmt(a)} +- {fmt(s)}", fmt(b)]
                rows.append(row)
            text += ["The paper's Table 1 for this set:", "",
                     markdown_table(["", "forgy avg +- std", "best", "random partition avg +- std",
                                     "best", "k-means++ avg +- std", "best"], rows), ""]
            for method, ours in (("k-means", "k-means"), ("G-MM", "gmm-paper")):
                for i, init in enumerate(INITS):
                    a = PAPER[data.name][method][i][0]
                    o = summary[ours][init]["mean"]
                    diffs.append([data.name, method, init, fmt(o), fmt(a), fmt(o - a),
                                  f"{100 * (o - a) / a:+.0f}%"])
            for init in INITS:
                km = summary["k-means"][init]["mean"]
                for m in ("gmm-paper", "gmm"):
                    g = summary[m][init]["mean"]
                    direction.append([data.name, init, m, fmt(km), fmt(g),
                                      "yes" if g <= km else "**no**"])
        text += [details(summary, METHODS, INITS, args.eta), "", f"![{data.name}]({png})", ""]
        sections.append("\n".join(text))
        print(data.name, "done", f"{wall:.0f} s", flush=True)
    (RESULTS / "table1.json").write_text(json.dumps(all_summaries, indent=1))
    body = (f"{args.trials} trials per initialisation; in a trial every method starts from the "
            "same centers (`gmmfast.cluster.initial_centers`). Objective: SSE per point. "
            f"Default OpenMP threads ({_cpus()}: the CPUs this process may run on), runs of "
            "other jobs may share the cores: seconds are indicative. "
            f"Total {time.perf_counter() - t_all:.0f} s.\n\n"
            "Methods: **k-means** = Lloyd (GMMKMeans eta=1; an empty cluster keeps its previous "
            "center), **G-MM (paper)** = random valid bounds from the uniform walk, "
            f"eta={args.eta:g}, walk_steps='auto' (30 proposals per point and iteration), "
            "**G-MM (defaults)** = GMMKMeans() with merge-split selection, eta=0.1. The paper's "
            "Cloud set is not available here; R15 is shown instead (not in the paper).\n\n"
            "### Direction of every cell we can run (G-MM mean <= k-means mean)\n\n"
            + markdown_table(["data", "init", "G-MM", "k-means mean", "G-MM mean", "G-MM <= k-means"],
                             direction)
            + "\n\n### Our means against the paper's\n\n"
            + markdown_table(["data", "method", "init", "ours", "paper", "ours - paper",
                              "relative"], diffs)
            + "\n\n" + WHY + "\n\n" + "\n".join(sections))
    write_results("table1", "Table 1: G-MM vs k-means from identical initialisations", body)


if __name__ == "__main__":
    main()
