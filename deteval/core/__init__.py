"""The ranked-retrieval core: ranking → cumulative P/R → AP; P/R/F from counts.

Pure numpy. Knows nothing about boxes, documents or music: every field above it reduces its problem to
scores, an outcome per item (relevant, non-relevant, ignored) and the number of relevant items in the
reference (``n_pos``).
"""

from deteval.core.ap import (
    AP_METHODS,
    COCO_RECALL_LEVELS,
    PY_FASTER_RCNN_LEVELS,
    VOC07_LEVELS,
    ap_all_points,
    ap_coco101,
    ap_uninterpolated,
    ap_voc07,
    average_precision,
    interpolated_precision,
    precision_envelope,
)
from deteval.core.prf import PRF, f_beta, precision_recall_f
from deteval.core.ranking import IGNORED, NONRELEVANT, RELEVANT, Ranking, rank
from deteval.core.summary import RankedSummary, precision_at_k, recall_at_k, summarize_ranking

__all__ = [
    "AP_METHODS",
    "COCO_RECALL_LEVELS",
    "IGNORED",
    "NONRELEVANT",
    "PRF",
    "PY_FASTER_RCNN_LEVELS",
    "RELEVANT",
    "RankedSummary",
    "Ranking",
    "VOC07_LEVELS",
    "ap_all_points",
    "ap_coco101",
    "ap_uninterpolated",
    "ap_voc07",
    "average_precision",
    "f_beta",
    "interpolated_precision",
    "precision_at_k",
    "precision_envelope",
    "precision_recall_f",
    "rank",
    "recall_at_k",
    "summarize_ranking",
]
