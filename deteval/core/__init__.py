"""The ranked-retrieval core: ranking → cumulative P/R → AP; P/R/F from counts.

:class:`RankedLists` (``lists.py``) is the engine: any number of ranked lists as one set of columns, sorted
once, every measure vectorised over all lists. A single :class:`Ranking` is its one-list case.

Pure numpy. Knows nothing about boxes, documents or music: every field above it reduces its problem to
scores, an outcome per item (relevant, non-relevant, ignored) and the number of relevant items in the
reference (``n_pos``).

Edges (tested in tests/test_core_edges.py):

* ``n_pos == 0``: recall is 0 at every rank; ``average_precision`` returns ``if_no_positives`` (0.0, or -1 as
  pycocotools marks it); break-even point, F-max, P@k, R@k, RR and AP@k are 0.
* No items, or every item ignored: an empty ranking; every AP is 0 when ``n_pos > 0``.
* NaN or inf scores: ``ValidationError`` naming the first bad item (``record``) and the count.
* Ties: ``ties="stable"`` (default) keeps input order among equal scores, so the lower index ranks higher;
  ``tiebreak`` orders equal scores by a key; ties are never averaged over their permutations.
* ``voc07`` can return 1 + 2**-52 on a perfect ranking (eleven additions of 1/11, as the devkit does).

Recall levels and IoU thresholds of every protocol are defined once, in ``levels.py``; the outcome vocabulary
(``RELEVANT``, ``NONRELEVANT``, ``IGNORED``, tie policies, input checks) in ``outcomes.py``, below both
``lists.py`` and ``ranking.py``.

Interpolated precision at recall levels has one definition (``lists.py``: the envelope at the c-th hit, c
from :func:`~deteval.core.lists.min_counts_for_recall`) and three engines, each kept for a shape of input the
others would serve only at a cost of memory or time; tests check that they give the same doubles:

* :meth:`RankedLists.envelope_at_counts` (``lists.py``): lists laid out item by item (weights as repeated
  items); the general engine, and the reference for the other two.
* :func:`~deteval.core.weighted.weighted_levels` (``weighted.py``): one integer weighting without laying out
  the copies, O(items + hits) instead of O(Σ weights) (COCO accumulation of weighted tables);
  tests/test_stats.py compares it with the repeated lists. It reads the envelope with the first engine's
  kernel (:func:`~deteval.core.lists.envelope_at_units`), over runs of hits instead of single hits.
* :class:`~deteval.core.reweighted.ReweightedLists` (``reweighted.py``): fixed lists under many weightings at
  once (bootstrap and randomization resamples), laying out once what the weights cannot change, with an
  envelope of its own (a chunked running maximum in buffers every weighting reuses: its module docstring);
  tests/test_resample.py and tests/test_resample_packed.py compare it with the repeated lists.
"""

from deteval.core.ap import (
    ap_all_points,
    ap_coco101,
    ap_uninterpolated,
    ap_voc07,
    average_precision,
    interpolated_precision,
    precision_envelope,
)
from deteval.core.levels import (
    COCO_IOU_THRESHOLDS,
    COCO_RECALL_LEVELS,
    PY_FASTER_RCNN_LEVELS,
    VOC07_LEVELS,
    VOC_DEVKIT_LEVELS,
)
from deteval.core.lists import AP_METHODS, RankedLists, presorted_lists, ranked_lists
from deteval.core.prf import PRF, f_beta, precision_recall_f
from deteval.core.ranking import IGNORED, NONRELEVANT, RELEVANT, Ranking, rank
from deteval.core.summary import RankedSummary, precision_at_k, recall_at_k, summarize_ranking

__all__ = [
    "AP_METHODS",
    "COCO_IOU_THRESHOLDS",
    "COCO_RECALL_LEVELS",
    "IGNORED",
    "NONRELEVANT",
    "PRF",
    "PY_FASTER_RCNN_LEVELS",
    "RELEVANT",
    "VOC07_LEVELS",
    "VOC_DEVKIT_LEVELS",
    "RankedLists",
    "RankedSummary",
    "Ranking",
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
    "presorted_lists",
    "rank",
    "ranked_lists",
    "recall_at_k",
    "summarize_ranking",
]
