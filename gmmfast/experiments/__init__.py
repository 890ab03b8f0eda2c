"""The paper's experiments, one module per table; used by the ``gmmfast`` command and bench/.

- :mod:`gmmfast.experiments.table1`: k-means against G-MM from identical
  initialisations (Table 1).
- :mod:`gmmfast.experiments.table2`: latent SVMs on cluttered digits by CCP and
  G-MM (Table 2, Figure 4).
- :mod:`gmmfast.experiments.table3`: the region-part scene model (Table 3,
  Table 4's scene rows).

The library (``gmmfast.cluster``, ``gmmfast.lssvm``, ``gmmfast.potts``) never
imports this package.
"""
