"""Potts energy and alpha-expansion on 4-connected grids (paper section 5.3).

``potts_energy`` counts the neighbouring pairs with different labels (the
paper's E(z_i)); ``alpha_expansion`` minimises ``sum_p U[p, z_p] + lam * E(z)``
by Boykov-Veksler-Zabih expansion moves over our own Boykov-Kolmogorov
max-flow; ``potts_lagrangian`` solves the per-image Lagrangian subproblem of
the Potts bias, ``min_z multiplier * cost(z) + E(z)``.
"""
from ._potts import alpha_expansion, grid_energy, potts_energy, potts_lagrangian

__all__ = ["alpha_expansion", "grid_energy", "potts_energy", "potts_lagrangian"]
