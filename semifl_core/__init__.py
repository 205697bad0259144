"""semifl_core: SemiFL (Diao, Ding, Tarokh, NeurIPS 2022), its baselines and ablations."""
__version__ = "0.1.0"
