"""Alias of semifl_core.report.paper (the paper's published numbers), which the notebooks import as
`from semifl_core import paper`: both names are the same module."""
import sys

from .report import paper

sys.modules[__name__] = paper
