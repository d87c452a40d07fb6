"""Confidence intervals and significance tests by re-weighting per-unit match outcomes.

A *unit* is what a test set is a sample of: an image (detection), a topic (retrieval), a track (MIR). Every
protocol's evaluation splits into per-unit matching and a cheap accumulation over ranked lists, so a bootstrap
resample is a vector of integer unit weights (a unit drawn k times counts k times), never a re-matching.
"""

from deteval.stats.bootstrap import (
    BootstrapResult,
    bootstrap,
    bootstrap_weights,
    min_detectable_difference,
    paired_bootstrap,
)
from deteval.stats.correction import CORRECTIONS, adjust_pvalues
from deteval.stats.tests import paired_t, randomization_test, wilcoxon

__all__ = [
    "CORRECTIONS",
    "BootstrapResult",
    "adjust_pvalues",
    "bootstrap",
    "bootstrap_weights",
    "min_detectable_difference",
    "paired_bootstrap",
    "paired_t",
    "randomization_test",
    "wilcoxon",
]
