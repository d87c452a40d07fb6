"""Open Images (TF OD API challenge rules): random cases against a plain per-image reference of the rules, and
hand-computed cases for each rule."""

import csv
import json

import numpy as np
import pytest
from _oid_cases import ALL, HIERARCHY, random_oid_case, reference_oid
from _oid_cases import oid_box as _box
from _oid_cases import oid_det as _det

from deteval.cli import main
from deteval.detection.openimages import evaluate_openimages
from deteval.errors import ValidationError
from deteval.io.openimages import load_hierarchy


def _same(ev, m, ap, what):
    assert np.array_equal(ev.ap, ap, equal_nan=True), what
    assert ev.map == m or (np.isnan(m) and np.isnan(ev.map)), what


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_random_cases_with_hierarchy_match_the_reference_rules():
    order = load_hierarchy(HIERARCHY).order
    scored = 0
    for seed in range(150):
        case = random_oid_case(seed)
        m, ap = reference_oid(case, order)
        ev = evaluate_openimages(
            case["boxes"],
            case["preds"],
            labels=case["labels"],
            hierarchy=HIERARCHY,
            expand_detections=case["expand_dets"],
        )
        _same(ev, m, ap, seed)
        scored += int(m > 0)
    assert scored > 100


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Mean of empty slice")
def test_random_cases_without_hierarchy_match_the_reference_rules():
    names = [(c, c[3:]) for c in ALL]
    for seed in range(150, 250):
        case = {**random_oid_case(seed), "expand_dets": False}
        m, ap = reference_oid(case, ALL, expand=False)
        ev = evaluate_openimages(case["boxes"], case["preds"], labels=case["labels"], class_names=names)
        _same(ev, m, ap, seed)


def _ap(ev, label):
    return ev.per_class()[label]["ap"]


def test_a_group_of_box_yields_one_true_positive_and_absorbs_the_rest_by_ioa():
    boxes = [_box("a", "/m/tree", 0.0, 0.5, 0.0, 0.5, group=1), _box("a", "/m/tree", 0.6, 0.9, 0.6, 0.9)]
    inside = [_det("a", "/m/tree", s, 0.1, 0.2, 0.1, 0.2) for s in (0.9, 0.8)]  # IoU 0.04, IoA 1
    hit = _det("a", "/m/tree", 0.7, 0.6, 0.9, 0.6, 0.9)
    ev = evaluate_openimages(boxes, [*inside, hit])
    # entries: the group (0.9, TP), the hit (0.7, TP); the 0.8 detection is neither: AP 1
    assert _ap(ev, "/m/tree") == 1.0 and ev.per_class()["/m/tree"]["n_gt"] == 2
    # a group whose detections all score <= 0 yields nothing, but still counts as ground truth
    ev = evaluate_openimages(boxes, [_det("a", "/m/tree", 0.0, 0.1, 0.2, 0.1, 0.2), hit])
    assert _ap(ev, "/m/tree") == 0.5


def test_a_detection_takes_its_best_box_even_when_taken():
    boxes = [_box("a", "/m/car", 0.0, 0.4, 0.0, 0.4), _box("a", "/m/car", 0.1, 0.5, 0.0, 0.4)]
    dets = [_det("a", "/m/car", 0.9, 0.0, 0.4, 0.0, 0.4), _det("a", "/m/car", 0.8, 0.04, 0.44, 0.0, 0.4)]
    # the second detection's best box (IoU 0.818) is taken: a false positive, although the other box has 0.739
    ev = evaluate_openimages(boxes, dets)
    assert _ap(ev, "/m/car") == 0.5 and ev.per_class()["/m/car"]["n_tp"] == 1


def test_only_verified_classes_are_scored_in_an_image():
    boxes = [_box("a", "/m/cat", 0.0, 0.5, 0.0, 0.5)]
    labels = [{"ImageID": "b", "LabelName": "/m/cat", "Confidence": 0}]
    dets = [_det("a", "/m/cat", 0.5, 0.0, 0.5, 0.0, 0.5), _det("b", "/m/cat", 0.9, 0.1, 0.2, 0.1, 0.2)]
    names = [("/m/cat", "Cat"), ("/m/car", "Car")]
    # image b verified cat absent: its cat detection is a false positive ranked first
    assert _ap(evaluate_openimages(boxes, dets, labels=labels, class_names=names), "/m/cat") == 0.5
    # without that label the image is not evaluated for cat (it is not even an image of the ground truth)
    ev = evaluate_openimages(boxes, dets, class_names=names)
    assert _ap(ev, "/m/cat") == 1.0 and any("never read" in w for w in ev.warnings)
    # image b is in the ground truth, but cat is not verified there: discarded
    labels = [{"ImageID": "b", "LabelName": "/m/car", "Confidence": 1}]
    assert _ap(evaluate_openimages(boxes, dets, labels=labels, class_names=names), "/m/cat") == 1.0


def test_hierarchy_expands_boxes_up_and_negative_labels_down():
    boxes = [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5)]
    dets = [_det("a", "/m/animal", 0.9, 0.0, 0.5, 0.0, 0.5), _det("b", "/m/cat", 0.8, 0.1, 0.2, 0.1, 0.2)]
    labels = [{"ImageID": "b", "LabelName": "/m/animal", "Confidence": 0}]
    ev = evaluate_openimages(boxes, dets, labels=labels, hierarchy=HIERARCHY)
    rows = ev.per_class()
    assert rows["/m/animal"]["ap"] == 1.0 and rows["/m/pet"]["n_gt"] == 1 and rows["/m/dog"]["ap"] == 0.0
    assert "/m/cat" not in rows  # no ground truth: NaN, left out of the mean
    assert ev.map == pytest.approx((1.0 + 0.0 + 0.0) / 3, abs=1e-15)
    # the cat detection in b counts (animal verified absent there → cat too), but cat has no ground truth
    assert np.isnan(ev.ap[ev.classes.index("/m/cat")])
    ev = evaluate_openimages(boxes, dets[:1], hierarchy=HIERARCHY, expand_detections=True)
    assert ev.per_class()["/m/animal"]["ap"] == 1.0


def test_cli_reads_the_challenge_csvs(tmp_path, capsys):
    def write(name, rows):
        with open(tmp_path / name, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return str(tmp_path / name)

    b = write(
        "boxes.csv", [_box("a", "/m/dog", 0.0, 0.5, 0.0, 0.5), _box("a", "/m/cat", 0.5, 1.0, 0.5, 1.0, 1)]
    )
    p = write(
        "preds.csv",
        [_det("a", "/m/dog", 0.9, 0.0, 0.5, 0.0, 0.5), _det("a", "/m/cat", 0.3, 0.6, 0.7, 0.6, 0.7)],
    )
    h = tmp_path / "h.json"
    h.write_text(json.dumps(HIERARCHY))
    assert main(["openimages", b, p, "--hierarchy", str(h), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # dog 1, cat 1 (its group-of box), animal and pet 0 (expanded ground truth, no such predictions)
    assert out["mAP"] == 0.5 and out["per_class"]["/m/cat"]["ap"] == 1.0
    bad = write("bad.csv", [_box("a", "/m/dog", 0.6, 0.5, 0.0, 0.5)])
    assert main(["openimages", bad, p]) == 2
    assert "line 2" in capsys.readouterr().err
    with pytest.raises(ValidationError, match="not in the hierarchy"):
        evaluate_openimages([_box("a", "/m/fish", 0, 1, 0, 1)], [], hierarchy=HIERARCHY)
