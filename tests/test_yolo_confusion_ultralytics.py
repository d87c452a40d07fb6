"""Ultralytics' confusion matrix, era by era, against what each version's own ``ConfusionMatrix`` computed
(scripts/ultralytics_confusion_expected.py wrote tests/data/ultralytics/confusion-expected.json), and the
``deteval yolo`` options that show it (``--confusion``, ``--plots``) under the Ultralytics profiles."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from _yolo_cases import case_tables

from deteval.cli import main
from deteval.detection.ultralytics_confusion import (
    CONFUSION_RULES,
    PROFILE_CONFUSION,
    confusion_rule,
    plot_array,
    ultralytics_confusion_matrix,
)
from deteval.io.yolo import load_yolo_dataset, load_yolo_predictions

DATA = Path(__file__).parent / "data" / "ultralytics"
DOC = json.loads((DATA / "confusion-expected.json").read_text())
CASES = [
    *json.loads((DATA / "cases.json").read_text())["cases"],
    *json.loads((DATA / "confusion-cases.json").read_text())["cases"],
]
#: Each version run, and the rule deteval says it follows
VERSION_RULE = {
    "8.0.239": "8.0.239",
    "8.3.29": "8.0.239",
    "8.3.30": "8.3.30",
    "8.3.54": "8.3.30",
    "8.3.55": "8.3.55",
    "8.3.253": "8.3.55",
    "8.4.36": "8.3.55",
    "8.4.37": "8.3.55",
    "8.4.102": "8.3.55",
    "8.4.103": "8.4.103",
    "8.4.175": "8.4.103",
    "8.4.176": "8.4.103",
    "8.4.183": "8.4.103",
    "8.4.184": "8.4.184",
    "8.4.190": "8.4.184",
}
#: The version each profile is named for (``ultralytics``: the newest run)
PROFILE_VERSION = {
    "ultralytics-8.0": "8.0.239",
    "ultralytics-8.4.37": "8.4.37",
    "ultralytics-8.4.176": "8.4.176",
    "ultralytics": "8.4.190",
}
SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"


def _val_conf(key: str) -> float | None:
    return None if key == "default" else float(key)


def test_every_version_run_is_attributed() -> None:
    assert set(DOC["versions"]) == set(VERSION_RULE)
    assert set(VERSION_RULE.values()) == set(CONFUSION_RULES)
    assert len(CASES) == len(DOC["versions"]["8.4.190"]["cases"]) == 44


@pytest.mark.parametrize("version", list(VERSION_RULE))
def test_matrix_is_that_versions(version: str) -> None:
    """Every case, every ``--conf``: the same counts (float64 integers, so exact)."""
    want = DOC["versions"][version]["cases"]
    rule = confusion_rule(VERSION_RULE[version])
    assert DOC["versions"][version]["labelled_only"] == rule.labelled_only  # (read from the validator)
    for case in CASES:
        gt, dt, _ = case_tables(case)
        for key in DOC["confs"]:
            got = ultralytics_confusion_matrix(gt, dt, DOC["n_classes"], rule, val_conf=_val_conf(key))
            np.testing.assert_array_equal(
                got, want[case["name"]][key], err_msg=f"{case['name']} --conf {key}"
            )


@pytest.mark.parametrize("version", list(VERSION_RULE))
def test_plot_arrays_are_that_versions(version: str) -> None:
    """What ``ConfusionMatrix.plot`` draws (counts, and normalized per true class with + 1e-9; blank below
    0.005), to 1e-12."""
    v = DOC["versions"][version]
    for case in CASES:
        matrix = np.array(v["cases"][case["name"]]["default"])
        for key, normalize in (("raw", False), ("normalized", True)):  # (5 classes: every one drawn)
            want = np.array(v["plot"][case["name"]][key], dtype=float)  # (null: NaN)
            np.testing.assert_allclose(plot_array(matrix, normalize), want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("version", ["8.3.253", "8.4.190"])
def test_plot_of_100_classes_keeps_every_other(version: str) -> None:
    want = np.array(DOC["versions"][version]["plot"]["large"]["normalized"], dtype=float)
    got = plot_array(np.array(DOC["large_matrix"], dtype=float), True)
    assert got.shape == (51, 51)  # classes 0, 2, …, 98 and the background
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_8_0_239_drew_all_100_classes() -> None:
    assert DOC["versions"]["8.0.239"]["plot"]["large"]["shape"] == [101, 101]


def test_each_profile_has_its_versions_rule() -> None:
    for profile, version in PROFILE_VERSION.items():
        assert PROFILE_CONFUSION[profile] == VERSION_RULE[version]


def test_the_cases_tell_every_era_from_the_next() -> None:
    """Each rule differs from the one before it on some case (else the test could not see the change)."""
    first = {r: next(v for v, rr in VERSION_RULE.items() if rr == r) for r in CONFUSION_RULES}
    for a, b in pairwise(CONFUSION_RULES):
        ca, cb = DOC["versions"][first[a]]["cases"], DOC["versions"][first[b]]["cases"]
        assert any(ca[c] != cb[c] for c in ca), (a, b)


def test_worked_examples() -> None:
    """Read off the recorded matrices (rows predicted, columns true, background last)."""
    v = DOC["versions"]
    # a lower-ranked detection of higher IoU: np.unique matching takes it, 8.4.184's walk by rank does not
    assert v["8.4.176"]["cases"]["rank_against_iou"]["default"][0][0] == 1
    assert v["8.4.190"]["cases"]["rank_against_iou"]["default"][1][0] == 1
    # conf exactly 0.25: out at the 0.25 that --conf unset means up to 8.4.102, in from 8.4.103 (0.001)
    assert v["8.4.102"]["cases"]["conf_exactly_0.25"]["default"][0][0] == 0
    assert v["8.4.103"]["cases"]["conf_exactly_0.25"]["default"][0][0] == 1
    # a label whose only detections overlap nothing: 8.3.54 does not count them, 8.3.55 does
    assert np.array(v["8.3.54"]["cases"]["no_pair_above_0.45"]["default"])[:, 5].sum() == 0
    assert np.array(v["8.3.55"]["cases"]["no_pair_above_0.45"]["default"])[:, 5].sum() == 2


def _confusion(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    assert main(["yolo", str(SAMPLE / "data.yaml"), str(SAMPLE / "predictions" / "labels"), "--confusion",
                 "--format", "json", *extra]) == 0  # fmt: skip
    return json.loads(capsys.readouterr().out)["confusion"]


@pytest.mark.parametrize("profile", list(PROFILE_CONFUSION))
def test_cli_confusion_is_the_profiles(profile: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``--confusion`` under an Ultralytics profile: the era's matrix, rows true (deteval's layout)."""
    ds = load_yolo_dataset(SAMPLE / "data.yaml", "val", duplicates="drop")
    preds = load_yolo_predictions(SAMPLE / "predictions" / "labels", ds)
    rule = confusion_rule(profile)
    want = ultralytics_confusion_matrix(ds.labels, preds, len(ds.names), rule).T
    got = _confusion(capsys, "--profile", profile)
    assert got["matrix"] == want.astype(int).tolist()
    assert got["labels"] == [*ds.names, "background"]
    assert got["iou"] == 0.45
    assert got["score_threshold"] == (0.25 if rule.default_conf else 0.001)
    assert got["rule"] == f"Ultralytics {rule.versions} ConfusionMatrix"


def test_cli_conf_and_score_threshold(capsys: pytest.CaptureFixture[str]) -> None:
    """``--conf`` is yolo val's (the 8.4.37 era keeps 0.25 for 0.001, takes any other); ``--score-threshold``
    and ``--iou`` set the matrix's own cut and threshold."""
    assert _confusion(capsys, "--profile", "ultralytics-8.4.37", "--conf", "0.001")["score_threshold"] == 0.25
    assert _confusion(capsys, "--profile", "ultralytics-8.4.37", "--conf", "0.4")["score_threshold"] == 0.4
    low = _confusion(capsys, "--profile", "ultralytics", "--score-threshold", "0.6", "--iou", "0.7")
    assert (low["score_threshold"], low["iou"]) == (0.6, 0.7)
    every = _confusion(capsys, "--profile", "ultralytics")
    assert np.array(low["matrix"])[:, :-1].sum() < np.array(every["matrix"])[:, :-1].sum()


def test_coco_profile_keeps_detevals_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    got = _confusion(capsys, "--profile", "coco")
    assert "rule" not in got and (got["iou"], got["score_threshold"]) == (0.5, 0.25)
