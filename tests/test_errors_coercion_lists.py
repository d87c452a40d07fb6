"""In-memory TREC dicts and MIR annotation lists: numpy booleans are not scores, integers beyond float or
int64 range are a DetevalError naming the record (they were OverflowError), and a label is not True/None
(True == 1 would merge two labels)."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.errors import DetevalError
from deteval.io.lab import segments_from_list
from deteval.io.trec import qrels_from_dict, run_from_dict


@pytest.mark.parametrize(("score", "words"), [(np.True_, "must be a number"), (10**400, "is not finite")])
def test_run_scores(score, words):
    with pytest.raises(DetevalError, match=words) as err:
        run_from_dict({"q": {"a": 0.5, "d": score}})
    assert err.value.record == "topic 'q', document 'd'"


@pytest.mark.parametrize("rel", [2**63, -(2**70), 1e30])
def test_qrels_relevance_beyond_int64(rel):
    with pytest.raises(DetevalError, match="out of range") as err:
        qrels_from_dict({"q": {"a": 1, "d": rel}})
    assert err.value.record == "topic 'q', document 'd'"
    assert qrels_from_dict({"q": {"d": 2**63 - 1}}).rel.tolist() == [2**63 - 1]


@pytest.mark.parametrize(
    ("segment", "words"),
    [([0, 10**400, "a"], "finite"), ([0, 1, True], "not a label"), ([0, 1, None], "not a label")],
)
def test_annotation_lists(segment, words):
    with pytest.raises(DetevalError, match=words) as err:
        segments_from_list([[0, 0.5, "x"], segment])
    assert err.value.record == 1
    assert segments_from_list([[0, 1, 5], [1, 2, "b"]]).labels.tolist() == [5, "b"]
