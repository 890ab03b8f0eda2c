"""Sphinx configuration for gmmfast's documentation.

Build from the repository's root (warnings are errors):

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# gmmfast as installed (the wheel in CI, or `pip install -e .` while developing): never the
# source tree by path, whose kernels are not built in a fresh clone.
import gmmfast  # noqa: E402

# The gallery and autodoc import gmmfast many times; one thread keeps the build polite on
# a shared machine and its output independent of the core count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

project = "gmmfast"
author = "gmmfast developers"
copyright = "gmmfast developers"
release = gmmfast.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "**.ipynb_checkpoints", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]

# -- autodoc / autosummary / numpydoc ------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"              # numpydoc's Parameters sections say the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False     # the class template lists the methods itself
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
}
intersphinx_timeout = 5
# Offline builds must not fail on -W because the inventories cannot be fetched.
if os.environ.get("GMMFAST_DOCS_OFFLINE", "1") == "1":
    intersphinx_mapping = {}

# -- myst ----------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
# The results files are written by the benchmark scripts, not for Sphinx: a "###" straight
# after a "#" is fine on GitHub and only a style warning here.
suppress_warnings = ["myst.header"]

# -- sphinx-gallery ------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "show_memory": False,
    "min_reported_time": 0,
    "doc_module": ("gmmfast",),
    "backreferences_dir": "gen_modules/backreferences",
    "reference_url": {"gmmfast": None},
}

# -- HTML ----------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"gmmfast {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_show_sourcelink = False
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "contributing": []}

# -- benchmark pages, generated from bench/results at build time ---------------------
RESULTS = ROOT / "bench" / "results"
BENCH_OUT = DOCS / "benchmarks" / "generated"

# (slug, title, one-line description, file stems: a prefix ending in "*" takes every file
# that starts with it). Every results .md must land in exactly one group (the build fails
# otherwise); docs/benchmarks/SLUG.md is the group's page.
BENCH_GROUPS = [
    ("clustering", "Clustering quality at equal time",
     "G-MM k-means against k-means from the same initialisations (the paper's Table 1) "
     "and against scikit-learn's restarts at equal wall time.",
     ["table1", "equal_time", "sweep", "escape", "d31_picture", "eta_sweep", "init",
      "iterations", "polish", "walk_samplers", "walk_steps"]),
    ("scale", "Large data: scale against faiss and scikit-learn",
     "Coarse-to-fine fits on 1e5 to 1e8 rows, the iterations faiss runs, memory, the 1e5-row "
     "cells over many seeds, and k-means++ chosen on a sample or on every row.",
     ["scale_faiss", "scale_faiss_1e5", "scale_faiss_d64", "scale_faiss_d128",
      "scale_faiss_d128k100", "scale_faiss_k1000", "scale_faiss_1e7d64", "scale_faiss_1e7d128",
      "scale_faiss_1e7d64k1000", "scale_faiss_1e7d128k1000", "scale_faiss_1e7k1000",
      "scale_faiss_2threads", "scale_faiss_xeon_grid", "scale_faiss_xeon_1e7",
      "scale_faiss_xeon_memmap", "scale_faiss_zen4",
      "scale_faiss_zen3", "scale_faiss_xeon", "faiss_iterations",
      "memory", "seeds", "seeding"]),
    ("dask", "Dask",
     "GMMKMeans on a dask array against dask-ml's KMeans.",
     ["scale_dask"]),
    ("kernels", "Kernels",
     "One Lloyd iteration, the labelling pass against faiss's search, k-means++ at each SIMD "
     "level, one seeding restart, the random walk, alpha-expansion and the scikit-learn "
     "drop-in.",
     ["lloyd_iteration", "search", "seeding_speed", "restarts", "walk_throughput",
      "potts_throughput", "dropin"]),
    ("lssvm", "Latent structural SVMs (Table 2)",
     "CCP against G-MM on cluttered objects, and the solver checks.",
     ["lssvm_*"]),
    ("scenes", "Scenes (Table 3)",
     "The region-part scene model on texture scenes.",
     ["scenes_*"]),
]


def _group_files(results):
    stems = sorted(p.stem for p in results.glob("*.md"))
    taken, groups = set(), []
    for slug, title, blurb, patterns in BENCH_GROUPS:
        members = []
        for pat in patterns:
            if pat.endswith("*"):
                hits = [s for s in stems if s.startswith(pat[:-1]) and s not in taken]
            else:
                hits = [pat] if pat in stems and pat not in taken else []
            for s in hits:
                taken.add(s)
                members.append(s)
        groups.append((slug, title, blurb, members))
    rest = [s for s in stems if s not in taken]
    if rest:
        raise RuntimeError(f"bench/results files in no group of docs/conf.py's BENCH_GROUPS: "
                           f"{rest}; add each to a group")
    return groups


def _title(text):
    """The first level-1 heading of a markdown text, or None."""
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _owner(name, stems):
    """The results file a figure or CSV belongs to: the longest stem it starts with."""
    base = name.rsplit(".", 1)[0]
    hits = [s for s in stems if base == s or base.startswith(s + "_")]
    return max(hits, key=len) if hits else None


SCALE_SUMMARY = "| cell | GMMKMeans() s | faiss defaults + search s | ratio |"
#: Scale reports of other machines with only the default and faiss's defaults run: the
#: time test's check there, kept out of the grid (with one faiss point, its Pareto column
#: would be the moonshot's test) and described on the scale page.
SCALE_OTHER_MACHINES = ("scale_faiss_zen4", "scale_faiss_zen3", "scale_faiss_xeon")


def _scale_grid(texts):
    """One table of every scale cell: the rows of the done-when table that bench/scale.py
    writes in each report (under "The done-when tests of issue 25"), with the report's
    threads per contender, its date, CPU and SIMD level, and its file (a {doc} link by
    absolute name: the grid is included into another page); sorted by n, d, k."""
    rows, header = [], None
    for stem, text in texts.items():
        if stem in SCALE_OTHER_MACHINES:
            continue
        lines = text.splitlines()
        starts = [i for i, line in enumerate(lines) if line.startswith(SCALE_SUMMARY)]
        if not starts:
            if stem.startswith("scale_faiss"):
                raise RuntimeError(f"bench/results/{stem}.md has no done-when summary (a line "
                                   f"starting {SCALE_SUMMARY!r}): bench/scale.py's report and "
                                   f"docs/conf.py's _scale_grid disagree")
            continue
        header = lines[starts[0]]
        threads = re.search(r"^Threads per contender: ([\d, ]+)", text, re.M)
        date = re.search(r"^- date: (\d{4}-\d\d-\d\d)", text, re.M)
        machine = re.search(r"^- machine: ([^,]+),.*SIMD level of the kernels: ([\w-]+)", text,
                            re.M)
        cpu = (re.sub(r"\((R|TM)\)|\bProcessor\b|\bCPU\b|\d+-Core", "", machine.group(1))
               .split("@")[0].split() if machine else [])
        where = f"{' '.join(cpu)}, {machine.group(2)}" if machine else "?"
        for line in lines[starts[0] + 2:]:
            if not line.startswith("|"):
                break
            cell = line.split("|")[1]
            key = tuple(int(v.replace(",", "")) for v in re.findall(r"[\d,]+", cell)[:3])
            rows.append((key, line.rstrip() + f" {threads.group(1).strip() if threads else '?'} "
                         f"| {date.group(1) if date else '?'}, {where} "
                         f"| {{doc}}`{stem} </benchmarks/generated/scale/{stem}>` |"))
    if not rows:
        return "No scale results.\n"
    rows.sort(key=lambda r: r[0])
    return "\n".join([header + " threads | measured (date, CPU, SIMD) | results file |",
                      "|---" * (header.count("|") - 1 + 3) + "|",
                      *[line for _, line in rows]]) + "\n"


def write_benchmark_pages(app=None):
    """One page per bench/results/*.md (its text and its figures), one index per group.

    The pages are copies made at build time into docs/benchmarks/generated/, which
    .gitignore lists: the results files stay the single source.
    """
    if BENCH_OUT.exists():
        shutil.rmtree(BENCH_OUT)
    BENCH_OUT.mkdir(parents=True)
    image_ref = re.compile(r"!\[[^\]]*\]\(([^)\s]+\.png)\)")
    stems = sorted(p.stem for p in RESULTS.glob("*.md"))
    texts = {s: (RESULTS / f"{s}.md").read_text(encoding="utf-8") for s in stems}
    mentioned = {s: set(re.findall(r"[\w.\-]+\.png", t)) for s, t in texts.items()}
    owned = {}
    for p in sorted(RESULTS.iterdir()):
        if p.suffix in (".png", ".csv", ".json"):
            owner = _owner(p.name, stems)
            if owner is None and p.suffix == ".png":
                # a figure named in a results file's text ("`lssvm_figure4_top-left.png`
                # (and `_center`, `_random`)"): by name, else by a named sibling's prefix
                prefix = p.name.rsplit("_", 1)[0] + "_"
                owner = (next((s for s in stems if p.name in mentioned[s]), None)
                         or next((s for s in stems
                                  if any(m.startswith(prefix) for m in mentioned[s])), None))
            if owner:
                owned.setdefault(owner, []).append(p.name)
    group_lines = []
    for slug, title, blurb, members in _group_files(RESULTS):
        gdir = BENCH_OUT / slug
        gdir.mkdir()
        texts = {stem: (RESULTS / f"{stem}.md").read_text(encoding="utf-8") for stem in members}
        firsts = [_title(t) for t in texts.values()]
        for stem in members:
            text = texts[stem]
            if _title(text) and firsts.count(_title(text)) > 1:
                # two runs of one script share a title: name the file in the page's title
                text = text.replace(_title(text), f"{_title(text)} ({stem})", 1)
            named = set(image_ref.findall(text))
            for png in named:
                if (RESULTS / png).exists():
                    shutil.copy2(RESULTS / png, gdir / png)
            files = owned.get(stem, [])
            extra = [f for f in files if f.endswith(".png") and f not in named]
            data = [f for f in files if not f.endswith(".png")]
            for name in extra:
                shutil.copy2(RESULTS / name, gdir / name)
            if not text.lstrip().startswith("# "):
                text = f"# {stem}\n\n" + text
            # wide tables: these pages give the right column's width to the text
            body = ["---\nhtml_theme.sidebar_secondary.remove: true\n---\n",
                    f"% generated from bench/results/{stem}.md by docs/conf.py: edit that file\n\n",
                    text.rstrip(), "\n\n---\n\n", f"Source: `bench/results/{stem}.md`"]
            if data:
                body.append("; data: " + ", ".join(f"`bench/results/{c}`" for c in data))
            body.append(".\n")
            if extra:
                body.append("\n## Figures of this run\n\n")
                for name in extra:
                    body.append(f"`{name}`\n\n![{name}]({name})\n\n")
            (gdir / f"{stem}.md").write_text("".join(body), encoding="utf-8")
        if slug == "scale":
            (gdir / "grid.md").write_text(_scale_grid(texts), encoding="utf-8")
        # the group's hand-written page (docs/benchmarks/SLUG.md) includes this toctree
        toc = ["```{toctree}\n:maxdepth: 1\n\n",
               *[f"generated/{slug}/{stem}\n" for stem in members], "```\n"]
        (gdir / "toctree.txt").write_text("".join(toc), encoding="utf-8")
        group_lines.append((slug, title, blurb))
    return group_lines


write_benchmark_pages()
