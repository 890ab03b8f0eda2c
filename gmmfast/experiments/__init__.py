"""The paper's experiments, one module per table; the ``gmmfast`` command runs them.

- :mod:`gmmfast.experiments.table1`: k-means against G-MM from identical
  initialisations (Table 1).
- :mod:`gmmfast.experiments.table2`: latent SVMs on cluttered digits by CCP and
  G-MM (Table 2, Figure 4).
- :mod:`gmmfast.experiments.table3`: the region-part scene model (Table 3,
  Table 4's scene rows).
- :func:`run_jobs`: an experiment's independent fits, serially or in worker
  processes, with results in the order of the jobs.

The library (``gmmfast.cluster``, ``gmmfast.lssvm``, ``gmmfast.potts``) never
imports this package.
"""
from ._jobs import run_jobs

__all__ = ["run_jobs"]
