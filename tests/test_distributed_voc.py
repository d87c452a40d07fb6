"""``match_voc_sharded`` (VOC matching over image shards): the outcomes of one-process ``match_voc`` on
random tables, and bad inputs refused with the one-process path's errors (it read them with
``np.asarray(dtype=...)``, which takes the string "1" and ``True`` for numbers and NaN scores silently)."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.detection.voc import match_voc
from deteval.errors import ValidationError
from deteval.run.voc import match_voc_sharded

BOX = [1, 1, 10, 10]


@pytest.mark.parametrize("seed", range(12))
def test_sharded_outcomes_equal_one_process(seed):
    rng = np.random.default_rng(seed)
    n_img, m, n = int(rng.integers(1, 8)), int(rng.integers(0, 60)), int(rng.integers(0, 30))
    xy = rng.integers(0, 40, size=(m + n, 2)).astype(float)
    wh = rng.integers(0, 20, size=(m + n, 2)).astype(float)
    boxes = np.concatenate([xy, xy + wh], axis=1)
    args = (
        rng.integers(0, n_img, m), boxes[:m], np.round(rng.random(m), 1),  # ties: rounded scores
        rng.integers(0, n_img, n), boxes[m:], rng.random(n) < 0.2,
    )  # fmt: skip
    labels = {"det_label": rng.integers(0, 3, m), "gt_label": rng.integers(0, 3, n)}
    for ties in ("stable", "quicksort"):
        expected = match_voc(*args, **labels, ties=ties)
        for shards in (1, 2, 3, 5):
            got = match_voc_sharded(*args, **labels, ties=ties, shards=shards)
            assert got.tolist() == expected.tolist()


BAD = {
    "string boxes": ([0], [["1", "1", "10", "10"]], [0.9], [0], [BOX]),
    "boolean scores": ([0], [BOX], [True], [0], [BOX]),
    "NaN score": ([0], [BOX], [float("nan")], [0], [BOX]),
    "inverted box": ([0], [[10, 1, 1, 10]], [0.9], [0], [BOX]),
    "box beyond 2**53": ([0], [[1, 1, 2**53 + 1, 10]], [0.9], [0], [BOX]),
    "fractional image": ([0.5], [BOX], [0.9], [0], [BOX]),
    "negative image": ([-1], [BOX], [0.9], [0], [BOX]),
    "lengths differ": ([0, 0], [BOX], [0.9], [0], [BOX]),
    "3 coordinates": ([0], [[1, 1, 10]], [0.9], [0], [BOX]),
    "scores count": ([0], [BOX], [0.9, 0.8], [0], [BOX]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_the_one_process_error(name):
    args = BAD[name]
    with pytest.raises(ValidationError) as one:
        match_voc(*args)
    with pytest.raises(ValidationError) as sharded:
        match_voc_sharded(*args, shards=2)
    assert str(sharded.value) == str(one.value)


@pytest.mark.parametrize(
    ("keyword", "value", "words"),
    [("det_label", [1.5], "detection label must hold integer indices"),
     ("gt_label", [-2], "ground-truth label indices must be non-negative"),
     ("gt_difficult", [0, 1], "2 difficult flags for 1 ground-truth boxes"),
     # astype(bool) read these as difficult (match_voc too, although docs/errors.md said 0/1 or booleans)
     ("gt_difficult", [2], "difficult must be 0/1 or true/false, got 2"),
     ("gt_difficult", [0.5], "difficult must be 0/1 or true/false, got 0.5"),
     ("gt_difficult", ["0"], r"difficult holds strings \('0'\), not numbers")],
)  # fmt: skip
def test_bad_labels_and_flags(keyword, value, words):
    good = ([0], [BOX], [0.9], [0], [BOX])
    assert (
        match_voc(*good, gt_difficult=[True]).tolist() == match_voc(*good, gt_difficult=[1]).tolist() == [-1]
    )
    with pytest.raises(ValidationError, match=words):
        match_voc_sharded(*good, **{keyword: value}, shards=2)
    with pytest.raises(ValidationError, match=words):
        match_voc(*good, **{keyword: value})
