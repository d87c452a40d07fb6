"""Confidence intervals and significance tests (issue 16): weights equal repetition, scipy's paired tests,
ranx's randomization test, Holm/BH, and the coverage of the bootstrap interval by simulation."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from deteval.detection.voc import VOCDetections, VOCGroundTruth, VOCParams
from deteval.errors import ConfigError
from deteval.io.voc import load_voc_annotations, load_voc_detections
from deteval.run.voc import evaluate_voc
from deteval.stats import adjust_pvalues, bootstrap, bootstrap_weights, paired_bootstrap, paired_t, wilcoxon
from deteval.stats.means import aggregate_metric, aggregate_mix
from deteval.stats.tests import randomization_test
from deteval.stats.voc import VOCUnits

CLASSES = ["a", "b", "c"]


def _gt(rng: np.random.Generator, n_img: int, n_gt: int) -> VOCGroundTruth:
    xy = rng.uniform(0, 50, (n_gt, 2))
    boxes = np.c_[xy, xy + rng.uniform(5, 30, (n_gt, 2))]
    return VOCGroundTruth.from_arrays(
        rng.integers(0, n_img, n_gt), rng.integers(0, 3, n_gt), boxes, rng.random(n_gt) < 0.1,
        images=n_img, classes=CLASSES,
    )  # fmt: skip


def _dets(rng: np.random.Generator, gt: VOCGroundTruth, n_img: int, noise: float) -> VOCDetections:
    pick = rng.random(len(gt)) < 0.8
    b = gt.boxes[pick] + rng.normal(0, noise, (int(pick.sum()), 4))
    b = np.c_[np.minimum(b[:, :2], b[:, 2:]), np.maximum(b[:, :2], b[:, 2:])]
    m = 3 * n_img
    fxy = rng.uniform(0, 50, (m, 2))
    return VOCDetections.from_arrays(
        np.r_[gt.image[pick], rng.integers(0, n_img, m)],
        np.r_[gt.label[pick], rng.integers(0, 3, m)],
        np.r_[b, np.c_[fxy, fxy + 10]],
        rng.random(int(pick.sum()) + m),  # continuous scores: no tie between different detections
        images=n_img,
        classes=CLASSES,
    )


def _duplicate(
    gt: VOCGroundTruth, dets: VOCDetections, w: np.ndarray
) -> tuple[VOCGroundTruth, VOCDetections]:
    """The files of a resample: image i listed w[i] times (copies named i#1, i#2, ...). Each copy's
    detections follow the original's rows, so equal scores (an image's copies) keep copies adjacent."""
    g_rows = [j for i in range(len(gt.images)) for _ in range(w[i]) for j in np.flatnonzero(gt.image == i)]
    g_img = [c for i in range(len(gt.images)) for c in range(w[i]) for _ in np.flatnonzero(gt.image == i)]
    names = [f"{i}#{c}" for i in range(len(gt.images)) for c in range(w[i])]
    pos = {n: k for k, n in enumerate(names)}
    gi = np.array([pos[f"{gt.image[j]}#{c}"] for j, c in zip(g_rows, g_img)], dtype=np.int64)
    gr = np.array(g_rows, dtype=np.int64)
    g2 = VOCGroundTruth.from_arrays(
        gi, gt.label[gr], gt.boxes[gr], gt.difficult[gr], images=names, classes=CLASSES
    )
    d_rows = [(j, c) for j in range(len(dets)) for c in range(w[dets.image[j]])]
    dr = np.array([j for j, _ in d_rows], dtype=np.int64)
    di = np.array([pos[f"{dets.image[j]}#{c}"] for j, c in d_rows], dtype=np.int64)
    d2 = VOCDetections.from_arrays(
        di, dets.label[dr], dets.boxes[dr], dets.scores[dr], images=names, classes=CLASSES
    )
    return g2, d2


@pytest.mark.parametrize("metric", ["voc2010", "voc07"])
@pytest.mark.parametrize("seed", range(4))
def test_voc_weights_equal_duplicated_images(metric: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_img = 12
    gt = _gt(rng, n_img, 30)
    dets = _dets(rng, gt, n_img, 2.0)
    units = VOCUnits(gt, [dets], VOCParams(metric=metric))
    ones = units.metric(0)(np.ones((1, n_img), dtype=np.int64))[0]
    res = evaluate_voc(gt, dets, metric=metric)
    assert ones[0] == res.summary["map"]
    assert [None if np.isnan(v) else v for v in ones[1:]] == [r["ap"] for r in res.per_class.values()]
    for w in bootstrap_weights(n_img, 5, seed):
        got = units.metric(0)(w[None, :])[0]
        dup = evaluate_voc(*_duplicate(gt, dets, w), metric=metric, classes=CLASSES)
        want = [dup.summary["map"], *(r["ap"] for r in dup.per_class.values())]
        assert [None if np.isnan(v) else float(v) for v in got] == want  # bit for bit


def test_paired_tests_equal_scipy() -> None:
    rng = np.random.default_rng(3)
    for n in (5, 20, 60):
        a = rng.random(n)
        b = a + rng.normal(0.03, 0.1, n)
        b[:2] = a[:2]  # zero differences: scipy's default zero_method
        assert paired_t(a, b) == sps.ttest_rel(a, b).pvalue
        assert wilcoxon(a, b) == sps.wilcoxon(a, b).pvalue
    assert np.isnan(wilcoxon([0.1, 0.2], [0.1, 0.2]))


def test_randomization_agrees_with_ranx() -> None:
    ranx_tests = pytest.importorskip("ranx.statistical_tests")
    rng = np.random.default_rng(7)
    for shift in (0.0, 0.02, 0.05):
        a = rng.random(50)
        b = np.clip(a - shift + rng.normal(0, 0.12, 50), 0, 1)
        va, vb = a[:, None], b[:, None]
        rounds = 4000
        ours = randomization_test(aggregate_mix(va, vb, ["mean"]), 50, n_rounds=rounds, seed=1).p_value[0]
        ref = float(ranx_tests.fisher_randomization_test(a, b, n_permutations=rounds, random_seed=1)[0])
        # two independent Monte-Carlo estimates of one p-value: 4 standard errors of their difference
        se = np.sqrt(2 * max(ref, 1 / rounds) * (1 - ref) / rounds)
        assert abs(ours - ref) <= 4 * se + 1 / rounds, (shift, ours, ref)


def test_randomization_exact_on_tiny_case() -> None:
    # 3 units: all 8 swap patterns are equally likely, so the p-value tends to the exact permutation one
    a = np.array([[0.9], [0.8], [0.7]])
    b = np.array([[0.1], [0.5], [0.6]])
    d = (a - b)[:, 0]
    signs = np.array([[s0, s1, s2] for s0 in (1, -1) for s1 in (1, -1) for s2 in (1, -1)])
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-15)
    p = randomization_test(aggregate_mix(a, b, ["mean"]), 3, n_rounds=20000, seed=0).p_value[0]
    assert abs(p - exact) < 0.01


def test_corrections() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.005, np.nan])
    holm = adjust_pvalues(p, "holm")
    # Holm by hand: sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1, running max
    assert holm[[3, 0, 2, 1]].tolist() == pytest.approx([0.02, 0.03, 0.06, 0.06])
    assert np.isnan(holm[4])
    bh = adjust_pvalues(p, "bh")
    assert bh[:4] == pytest.approx(sps.false_discovery_control(p[:4], method="bh"))
    assert np.array_equal(adjust_pvalues(p, "none"), p, equal_nan=True)
    with pytest.raises(ConfigError, match="unknown correction"):
        adjust_pvalues(p, "bonf")


def test_bootstrap_reproducible_and_checked() -> None:
    v = np.random.default_rng(0).random((20, 2))
    m = aggregate_metric(v, ["mean", "sum"])
    r1 = bootstrap(m, 20, n_resamples=50, seed=5)
    r2 = bootstrap(m, 20, n_resamples=50, seed=5)
    assert np.array_equal(r1.samples, r2.samples)
    assert r1.point.tolist() == pytest.approx([v[:, 0].mean(), v[:, 1].sum()])
    w = bootstrap_weights(20, 50, 5)
    assert (w.sum(axis=1) == 20).all()
    assert np.allclose(r1.samples[:, 0], w @ v[:, 0] / 20)
    assert not np.array_equal(bootstrap(m, 20, n_resamples=50, seed=6).samples, r1.samples)
    for bad in ({"n_resamples": 0}, {"level": 1.5}, {"method": "basic"}):
        with pytest.raises(ConfigError):
            bootstrap(m, 20, **bad)  # type: ignore[arg-type]


def test_paired_bootstrap_of_identical_systems() -> None:
    v = np.random.default_rng(1).random((15, 1))
    r = paired_bootstrap(aggregate_mix(v, v, ["mean"]), 15, n_resamples=100)
    assert r.delta[0] == 0.0 and r.ci[0].tolist() == [0.0, 0.0] and r.p_value[0] == 1.0


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_interval_coverage_by_simulation(method: str) -> None:
    # known generator: 60 units of N(0.5, 0.2); the true metric (the mean) is 0.5. 1000 draws of the test
    # set, 400 resamples each: the nominal 95% interval must cover 0.5 in 93-97% of the draws.
    rng = np.random.default_rng(2026)
    n, reps = 60, 1000
    hits = 0
    for i in range(reps):
        v = rng.normal(0.5, 0.2, (n, 1))
        r = bootstrap(aggregate_metric(v, ["mean"]), n, n_resamples=400, seed=i, method=method)
        hits += int(r.ci[0, 0] <= 0.5 <= r.ci[0, 1])
    assert 0.93 <= hits / reps <= 0.97, hits / reps


VOC_ARGS = [
    "voc",
    "--annotations",
    "data_samples/voc/Annotations",
    "--image-set",
    "data_samples/voc/ImageSets/Main/test.txt",
    "--detections",
    "data_samples/voc/results/comp4_det_test_{cls}.txt",
]


def _cli_json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    import json

    from deteval.cli import main

    assert main([*args, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_voc_ci_and_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = Path(__file__).resolve().parents[1]
    for f in (root / "data_samples/voc/results").glob("*.txt"):  # system B: every third detection dropped
        lines = f.read_text().splitlines()
        (tmp_path / f.name).write_text("".join(x + "\n" for i, x in enumerate(lines, 1) if i % 3))
    monkeypatch.chdir(root)
    base = _cli_json(VOC_ARGS, capsys)
    out = _cli_json([*VOC_ARGS, "--ci", "0.9", "--bootstrap", "200", "--seed", "3"], capsys)
    assert out["map"] == base["map"]
    # the same numbers as the API on the same resamples
    gt = load_voc_annotations("data_samples/voc/Annotations", "data_samples/voc/ImageSets/Main/test.txt")
    dets = load_voc_detections(
        "data_samples/voc/results/comp4_det_test_{cls}.txt", gt.images, classes=sorted(out["per_class"])
    )
    units = VOCUnits(gt, [dets], VOCParams())
    boot = bootstrap(units.metric(0), len(gt.images), n_resamples=200, seed=3, level=0.9)
    assert out["ci"] == {"map": boot.ci[0].tolist()}
    for j, c in enumerate(units.classes, 1):
        assert out["per_class"][c]["ci"] == boot.ci[j].tolist()
    other = str(tmp_path / "comp4_det_test_{cls}.txt")
    cmp = _cli_json(
        [*VOC_ARGS, "--compare-to", other, "--test", "randomization", "--bootstrap", "200"], capsys
    )
    c = cmp["comparison"]["map"]
    assert c["a"] == base["map"] and c["delta"] == c["a"] - c["b"] and c["p_adjusted"] >= c["p_value"]
    assert cmp["compare_to"] == [other] and "ci" not in cmp
    two = _cli_json(
        [*VOC_ARGS, "--compare-to", other, "--compare-to", VOC_ARGS[-1], "--bootstrap", "50"], capsys
    )
    assert set(two["comparison"]) == {other, VOC_ARGS[-1]}
    assert two["comparison"][VOC_ARGS[-1]]["map"]["delta"] == 0.0
    from deteval.cli import main

    assert main([*VOC_ARGS, "--compare-to", other, "--test", "t"]) == 2
    assert "not means over images" in capsys.readouterr().err


def _trec_case(seed: int, n_topics: int = 12) -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(seed)
    qrels: dict = {}
    run_a: dict = {}
    run_b: dict = {}
    for t in range(n_topics):
        q = f"q{t:03d}"
        docs = [f"d{i}" for i in range(30)]
        qrels[q] = {d: int(rng.integers(0, 3)) for d in docs[:20]}
        run_a[q] = {d: float(rng.random()) for d in docs}
        run_b[q] = {d: float(v + rng.normal(0, 0.3)) for d, v in run_a[q].items()}
    return qrels, run_a, run_b


def test_trec_weights_equal_duplicated_topics() -> None:
    from deteval.run.trec import evaluate_trec
    from deteval.stats.trec import trec_measures

    qrels, run, _ = _trec_case(0)
    measures = ["map", "P.5", "ndcg_cut.10", "gm_map", "num_rel_ret", "recip_rank"]
    res = evaluate_trec(qrels, run, measures, per_query=True)
    names, aggs = trec_measures(res)
    assert set(names) == {"map", "P_5", "ndcg_cut_10", "gm_map", "num_rel_ret", "recip_rank"}
    topics = list(res.per_class)
    values = np.array([[res.per_class[t][n] for n in names] for t in topics])
    metric = aggregate_metric(values, aggs)
    assert metric(np.ones((1, len(topics)), dtype=np.int64))[0].tolist() == [res.summary[n] for n in names]
    for w in bootstrap_weights(len(topics), 4, 1):
        q2 = {f"{t}_{c}": qrels[t] for t in topics for c in range(w[topics.index(t)])}
        r2 = {f"{t}_{c}": run[t] for t in topics for c in range(w[topics.index(t)])}
        dup = evaluate_trec(q2, r2, measures)
        assert metric(w[None, :])[0].tolist() == [dup.summary[n] for n in names]  # bit for bit


def test_cli_trec_tests_equal_scipy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from deteval.run.trec import evaluate_trec

    qrels, run_a, run_b = _trec_case(5, 25)
    files = {}
    for name, data in (("qrels", qrels), ("a", run_a), ("b", run_b)):
        path = tmp_path / f"{name}.txt"
        with path.open("w") as f:
            for q, docs in data.items():
                for rank, (d, v) in enumerate(docs.items()):
                    f.write(f"{q} 0 {d} {v}\n" if name == "qrels" else f"{q} Q0 {d} {rank} {v!r} {name}\n")
        files[name] = str(path)
    args = ["trec", files["qrels"], files["a"], "-m", "map", "-m", "P.10", "--compare-to", files["b"]]
    ev_a = evaluate_trec(qrels, run_a, ["map", "P.10"], per_query=True)
    ev_b = evaluate_trec(qrels, run_b, ["map", "P.10"], per_query=True)
    for test, fn in (("t", sps.ttest_rel), ("wilcoxon", sps.wilcoxon)):
        out = _cli_json([*args, "--test", test, "--correction", "bh"], capsys)
        ps = []
        for m in ("map", "P_10"):
            a = [ev_a.per_class[t][m] for t in ev_a.per_class]
            b = [ev_b.per_class[t][m] for t in ev_a.per_class]
            c = out["comparison"][m]
            assert c["p_value"] == fn(a, b).pvalue
            assert c["a"] == out[m] == ev_a.summary[m] and c["b"] == ev_b.summary[m]
            ps.append(c["p_value"])
        adj = sps.false_discovery_control(ps, method="bh")
        assert [out["comparison"][m]["p_adjusted"] for m in ("map", "P_10")] == pytest.approx(adj.tolist())
    ci = _cli_json([*args[:7], "--ci", "0.95", "--bootstrap", "300"], capsys)
    values = np.array([[r["map"], r["P_10"]] for r in ev_a.per_class.values()])
    boot = bootstrap(aggregate_metric(values, ["mean", "mean"]), 25, n_resamples=300)
    assert ci["ci"] == {"map": boot.ci[0].tolist(), "P_10": boot.ci[1].tolist()}


def _coco_case(seed: int, n_img: int = 10) -> tuple[dict, list]:
    rng = np.random.default_rng(seed)
    images = [{"id": 1000 * (i + 1), "width": 640, "height": 480} for i in range(n_img)]
    cats = [{"id": c, "name": f"c{c}"} for c in (1, 2, 3)]
    anns, dets = [], []
    for im in images:
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.uniform(0, 400, 2)
            w, h = rng.uniform(4, 200, 2)
            c = int(rng.integers(1, 4))
            crowd = int(rng.random() < 0.1)
            anns.append({"id": len(anns) + 1, "image_id": im["id"], "category_id": c, "bbox": [x, y, w, h],
                         "area": w * h, "iscrowd": crowd})  # fmt: skip
            if rng.random() < 0.8:
                j = rng.normal(0, 0.1 * min(w, h), 4)
                dets.append({"image_id": im["id"], "category_id": c, "score": float(rng.random()),
                             "bbox": [x + j[0], y + j[1], abs(w + j[2]) + 1, abs(h + j[3]) + 1]})  # fmt: skip
        for _ in range(int(rng.integers(0, 4))):
            x, y = rng.uniform(0, 400, 2)
            dets.append({"image_id": im["id"], "category_id": int(rng.integers(1, 4)), "score": float(rng.random()),
                         "bbox": [x, y, 30.0, 40.0]})  # fmt: skip
    return {"images": images, "annotations": anns, "categories": cats}, dets


def _coco_duplicate(gt: dict, dets: list, w: np.ndarray) -> tuple[dict, list]:
    """Image i listed w[i] times: copy c gets id + c (next to the original in id order)."""
    ids = [im["id"] for im in gt["images"]]
    k = {i: int(w[n]) for n, i in enumerate(ids)}
    images = [{**im, "id": im["id"] + c} for im in gt["images"] for c in range(k[im["id"]])]
    anns = [{**a, "image_id": a["image_id"] + c} for a in gt["annotations"] for c in range(k[a["image_id"]])]
    for n, a in enumerate(anns):
        a["id"] = n + 1
    d2 = [{**d, "image_id": d["image_id"] + c} for d in dets for c in range(k[d["image_id"]])]
    return {**gt, "images": images, "annotations": anns}, d2


@pytest.mark.parametrize("seed", range(3))
def test_coco_weights_equal_duplicated_images(seed: int) -> None:
    from deteval.detection.coco import evaluate_coco
    from deteval.stats.coco import CocoUnits

    gt, dets = _coco_case(seed)
    units = CocoUnits(gt, [dets])
    full = evaluate_coco(gt, dets)
    got = units.metric(0)(np.ones((1, 10), dtype=np.int64))[0]
    want = [*full.stats.tolist(), *(r["ap"] for r in full.per_class().values())]
    assert [-1.0 if np.isnan(v) else v for v in got] == want
    for w in bootstrap_weights(10, 4, seed):
        ev = evaluate_coco(*_coco_duplicate(gt, dets, w))
        want = [*ev.stats.tolist(), *(r["ap"] for r in ev.per_class().values())]
        got = units.metric(0)(w[None, :])[0]
        assert [-1.0 if np.isnan(v) else v for v in got] == want  # bit for bit
    # the mixed system with B's weights 0 is A; a swap on every image is B
    gt_b, dets_b = gt, [{**d, "score": d["score"] ** 2} for d in dets[::2]]
    two = CocoUnits(gt, [dets, dets_b])
    ones, zeros = np.ones((1, 10), dtype=np.int64), np.zeros((1, 10), dtype=np.int64)
    assert np.array_equal(two.mix(0, 1)(ones, zeros), units.metric(0)(ones), equal_nan=True)
    ev_b = evaluate_coco(gt_b, dets_b)
    got_b = two.mix(0, 1)(zeros, ones)[0]
    assert [-1.0 if np.isnan(v) else v for v in got_b] == [
        *ev_b.stats.tolist(),
        *(r["ap"] for r in ev_b.per_class().values()),
    ]


@pytest.mark.parametrize("params", [None, {"max_dets": (1, 5, 20)}, {"use_cats": False}])
def test_coco_units_names_and_shapes_without_evaluating(params: dict | None) -> None:
    """CocoUnits takes names, categories, the image count and the slices read from an evaluation of the first
    system's shape (every number -1): those of its real evaluation, which is made only when asked for."""
    from deteval.detection.coco import CocoEvaluation
    from deteval.detection.coco_params import CocoParams
    from deteval.stats.coco import CocoUnits

    gt, dets = _coco_case(5)
    gt["categories"].append({**gt["categories"][0], "id": 99})  # a repeated name: two rows
    units = CocoUnits(gt, [dets], params=None if params is None else CocoParams(**params))
    assert not isinstance(units._evaluations[0], CocoEvaluation)  # not evaluated yet
    ev = units.evaluations[0]
    assert units.n_units == ev.counts["n_images"] == 10
    assert units.rows == list(ev.per_class())
    assert units.names == (*ev.stat_names, *(f"ap:{c}" for c in ev.per_class()))
    assert units._read == units._slices_read(ev.precision.shape, ev.recall.shape)
    assert len(units._read) >= 1


def test_cli_coco_ci_and_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from deteval.stats.coco import CocoUnits

    gt, dets = _coco_case(11, 12)
    dets_b = [{**d, "score": d["score"] ** 3} for d in dets[1::2] + dets[::4]]
    paths = []
    for name, data in (("gt", gt), ("a", dets), ("b", dets_b)):
        paths.append(str(tmp_path / f"{name}.json"))
        Path(paths[-1]).write_text(json.dumps(data))
    out = _cli_json(["coco", *paths[:2], "--ci", "0.95", "--bootstrap", "40", "--seed", "2"], capsys)
    units = CocoUnits(gt, [dets])
    boot = bootstrap(units.metric(0), 12, n_resamples=40, seed=2)
    for j, name in enumerate(units.names[:12]):
        assert out[name] == units.evaluations[0].stats[j]
        assert out["ci"][name] == (None if np.isnan(boot.ci[j]).any() else boot.ci[j].tolist())
    for c in units.rows:
        j = units.names.index(f"ap:{c}")
        assert out["per_class"][c]["ci"] == (None if np.isnan(boot.ci[j]).any() else boot.ci[j].tolist())
    cmp = _cli_json(
        ["coco", *paths[:2], "--compare-to", paths[2], "--test", "randomization", "--bootstrap", "40"], capsys
    )
    c = cmp["comparison"]["AP"]
    assert c["a"] == out["AP"] and c["delta"] == c["a"] - c["b"] and 0 < c["p_value"] <= c["p_adjusted"] <= 1


def test_mir_collection_intervals_and_tests() -> None:
    from deteval.mir.evaluate import evaluate_mir
    from deteval.stats.mir import mir_collection

    rng = np.random.default_rng(4)

    def track(cuts: np.ndarray) -> list:
        edges = np.r_[0.0, np.sort(np.clip(cuts, 0.1, 99.9)), 100.0]
        return [[float(a), float(b), f"L{i % 3}"] for i, (a, b) in enumerate(itertools.pairwise(edges))]

    cuts = [rng.uniform(0, 100, 8) for _ in range(12)]
    refs = [track(c) for c in cuts]
    est_a = [track(c + rng.normal(0, 0.5, 8)) for c in cuts]
    est_b = [track(rng.uniform(0, 100, 6)) for _ in range(12)]
    ta = [evaluate_mir(r, e) for r, e in zip(refs, est_a)]
    tb = [evaluate_mir(r, e) for r, e in zip(refs, est_b)]
    res = mir_collection(ta, [("b", tb)], level=0.95, n_resamples=300, test="t")
    fa = [t.summary["pairwise"]["f"] for t in ta]
    fb = [t.summary["pairwise"]["f"] for t in tb]
    assert res.summary["pairwise.f"] == pytest.approx(np.mean(fa), abs=1e-15)
    assert res.summary["comparison"]["pairwise.f"]["p_value"] == sps.ttest_rel(fa, fb).pvalue
    lo, hi = res.summary["ci"]["pairwise.f"]
    assert lo < res.summary["pairwise.f"] < hi
    w = bootstrap_weights(12, 3, 0)
    names = list(res.per_class[next(iter(res.per_class))])
    dup = mir_collection([ta[i] for i in range(12) for _ in range(w[0][i])], statistics=False)
    vals = aggregate_metric(
        np.array([[row[n] for n in names] for row in res.per_class.values()]), ["mean"] * len(names)
    )
    assert vals(w[:1])[0].tolist() == [dup.summary[n] for n in names]  # a track of weight k == listed k times


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ci", "1.5"], "--ci must be a level between 0 and 1"),
        (["--ci", "0.9", "--bootstrap", "0"], "--bootstrap must be a positive number"),
    ],
)
def test_cli_stats_options_refused(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from deteval.cli import main

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    assert main([*VOC_ARGS, *extra]) == 2
    assert message in capsys.readouterr().err


def test_paired_bootstrap_p_value_and_mdd() -> None:
    rng = np.random.default_rng(9)
    a = rng.random((40, 1))
    r = paired_bootstrap(aggregate_mix(a, a - 0.2, ["mean"]), 40, n_resamples=99)
    # every resampled delta is 0.2 up to rounding: the smallest p-value B resamples can give
    assert r.p_value[0] == 2 / 100 and r.ci[0] == pytest.approx([0.2, 0.2])
    b = a + rng.normal(0, 0.1, (40, 1))
    r = paired_bootstrap(aggregate_mix(a, b, ["mean"]), 40, n_resamples=400, seed=2)
    d = r.samples[:, 0]
    assert r.p_value[0] == min(1.0, 2 * (min((d <= 0).sum(), (d >= 0).sum()) + 1) / 401)
    assert r.se[0] == np.std(d, ddof=1) and r.mdd[0] == pytest.approx(2.8016 * r.se[0], rel=1e-4)


def test_plot_class_deltas(tmp_path: Path) -> None:
    from deteval.report.delta_plot import class_deltas, plot_class_deltas

    rng = np.random.default_rng(1)
    gt = _gt(rng, 15, 40)
    units = VOCUnits(gt, [_dets(rng, gt, 15, 1.0), _dets(rng, gt, 15, 6.0)], VOCParams())
    res = units.add_statistics(["b"], level=None, n_resamples=100)
    rows = class_deltas(res)
    assert [r[0] for r in rows] == sorted(
        CLASSES, key=lambda c: res.summary["comparison"][f"ap:{c}"]["delta"]
    )
    for name, delta, ci, p in rows:
        c = res.summary["comparison"][f"ap:{name}"]
        assert (delta, ci, p) == (c["delta"], c["ci"], c["p_adjusted"])
    path = plot_class_deltas(res, tmp_path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ConfigError, match="no comparison"):
        plot_class_deltas(units.results[1], tmp_path)


def test_significance_marks_on_real_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value carries the other system's letter exactly when its adjusted p-value is below 0.05, in the
    table, Markdown and LaTeX of one result and of ``deteval compare``."""
    import json

    from deteval.cli import main

    root = Path(__file__).resolve().parents[1]
    for f in (root / "data_samples/voc/results").glob("*.txt"):  # system B: every other detection dropped
        lines = f.read_text().splitlines()
        (tmp_path / f.name).write_text("".join(x + "\n" for i, x in enumerate(lines, 1) if i % 2))
    monkeypatch.chdir(root)
    other = str(tmp_path / "comp4_det_test_{cls}.txt")
    base, cmp = tmp_path / "base.json", tmp_path / "cmp.json"
    assert main([*VOC_ARGS, "--format", "json", "--output", str(base)]) == 0
    args = [*VOC_ARGS, "--compare-to", other, "--bootstrap", "200", "--correction", "none"]
    assert main([*args, "--format", "json", "--output", str(cmp)]) == 0
    comp = json.loads(cmp.read_text())["comparison"]
    significant = {k for k, c in comp.items() if c["p_adjusted"] < 0.05}
    assert significant and significant != set(comp)  # the case shows both kinds of cell
    assert main([*args, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    for key, c in comp.items():
        value = f"{c['a']:.4f}"
        if key == "map":
            line = next(x for x in md.splitlines() if x.startswith("| map |"))
            assert line == f"| map | {value}{'<sup>a</sup>' if key in significant else ''} |"
        else:
            line = next(x for x in md.splitlines() if x.startswith(f"| {key[3:]} |"))
            assert line.split(" | ")[1] == value + ("<sup>a</sup>" if key in significant else "")
    assert f"<sup>a</sup>: significantly different from {other} (adjusted p < 0.05; bootstrap test" in md
    assert main(args) == 0  # the table: each comparison line ends with the mark when significant
    table = capsys.readouterr().out
    for key in comp:
        line = next(x for x in table.splitlines() if x.startswith(f"  {key} "))
        assert line.endswith("  ^a") == (key in significant)
    # deteval compare marks B's values only where B's own comparison is against A, the table's other side:
    # A = the other system saved alone (B's comparison holds exactly its values)
    other_json = tmp_path / "other.json"
    assert main([*VOC_ARGS[:-1], other, "--format", "json", "--output", str(other_json)]) == 0
    for fmt in ("table", "latex"):
        assert main(["compare", str(other_json), str(cmp), "--format", fmt]) == 0
        out = capsys.readouterr().out
        mark = "^a" if fmt == "table" else "$^{a}$"
        for key, c in comp.items():
            if key == "map" and fmt == "table":
                assert f"fields.map.b: {c['a']:.4f}{mark if key in significant else ''}\n" in out
            elif key != "map":
                row = next(x for x in out.splitlines() if x.split()[:1] == [key[3:]])
                cells = row.replace("&", " ").split()
                assert cells[2] == f"{c['a']:.4f}" + (mark if key in significant else "")
                assert cells[1] == f"{c['b']:.4f}"  # A: the other system, saved without a comparison
        assert "significantly different from" in out and "not marked" not in out
    # against a baseline that is not the compared system (here B's own system saved alone, delta 0), a mark
    # would read as "B differs significantly from A": none, and the legend says why
    for fmt in ("table", "latex", "markdown"):
        assert main(["compare", str(base), str(cmp), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert "^a" not in out and "^{a}" not in out and "<sup>" not in out
        assert "significantly different" not in out
        assert "not marked: " in out and "is not the other side of this table" in out
        if fmt == "table":
            assert (
                f"B: comparison with {other} not marked: {other} is not the other side of this table" in out
            )
    # without a comparison on either side: no mark, no legend
    assert main(["compare", str(base), str(base), "--format", "markdown"]) == 0
    plain = capsys.readouterr().out
    assert "<sup>" not in plain and "significantly" not in plain


def test_plots_draw_class_deltas_of_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--plots`` with ``--compare-to`` writes class_deltas.png; each class's point and error bar are the
    delta and interval of its ``ap:<class>`` in the JSON, filled exactly when p_adjusted < 0.05."""
    from matplotlib.colors import to_rgba

    from deteval.cli import main
    from deteval.report.plots import figures
    from deteval.results import load_result

    root = Path(__file__).resolve().parents[1]
    for f in (root / "data_samples/voc/results").glob("*.txt"):
        lines = f.read_text().splitlines()
        (tmp_path / f.name).write_text("".join(x + "\n" for i, x in enumerate(lines, 1) if i % 2))
    monkeypatch.chdir(root)
    other = str(tmp_path / "comp4_det_test_{cls}.txt")
    saved, plots = tmp_path / "cmp.json", tmp_path / "plots"
    args = [*VOC_ARGS, "--compare-to", other, "--bootstrap", "200", "--correction", "none"]
    assert main([*args, "--format", "json", "--output", str(saved), "--plots", str(plots)]) == 0
    assert (plots / "class_deltas.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    result = load_result(str(saved))
    comp = result.summary["comparison"]
    ax = figures(result)["class_deltas.png"].axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    expected = sorted((k[3:] for k in comp if k.startswith("ap:")), key=lambda c: comp[f"ap:{c}"]["delta"])
    assert labels == expected
    for i, (name, bars) in enumerate(zip(labels, ax.containers)):
        c = comp[f"ap:{name}"]
        point, _, (segments,) = bars.lines
        assert list(point.get_xdata()) == [c["delta"]] and list(point.get_ydata()) == [i]
        (lo, y0), (hi, y1) = segments.get_segments()[0]
        assert (lo, hi) == pytest.approx(c["ci"], abs=1e-15) and y0 == y1 == i
        filled = to_rgba(point.get_markerfacecolor()) != to_rgba("white")
        assert filled == (c["p_adjusted"] < 0.05)
    # two other systems: one figure each, named by their letters
    two = [*args, "--compare-to", VOC_ARGS[-1], "--format", "json", "--plots", str(tmp_path / "two")]
    assert main(two) == 0
    capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "two").glob("class_deltas*")) == [
        "class_deltas_a.png",
        "class_deltas_b.png",
    ]


@pytest.mark.parametrize("seed", range(4))
def test_weighted_levels_equal_laid_out_copies(seed: int) -> None:
    """The bootstrap's fast path (copies never laid out) gives what presorted_lists with weights gives (the
    repeated list), bit for bit: interpolated precision, sampled rows, hits; voc07 and coco101 levels."""
    from deteval.core.lists import COCO_EPS, COCO_RECALL_LEVELS, VOC_DEVKIT_LEVELS, presorted_lists
    from deteval.core.weighted import weighted_levels

    rng = np.random.default_rng(seed)
    for trial in range(300):
        n_lists = int(rng.integers(1, 6))
        cnt = rng.integers(0, 9, n_lists)
        n = int(cnt.sum())
        rel = rng.random(n) < 0.5
        ig = (~rel) & (rng.random(n) < 0.3) if trial % 3 else None
        w = rng.integers(0, 4, n) * (rng.random(n) < 0.8)  # zeros: images left out of the resample
        hits = np.bincount(np.repeat(np.arange(n_lists), cnt), weights=w * rel, minlength=n_lists)
        n_pos = hits.astype(np.int64) + rng.integers(0, 3, n_lists)
        levels, eps = (COCO_RECALL_LEVELS, COCO_EPS) if trial % 2 else (VOC_DEVKIT_LEVELS, 0.0)
        if trial % 5 == 0:
            levels = rng.permutation(levels)  # levels in any order, as the core accepts
        ref = presorted_lists(cnt, rel, n_pos, ig, weights=w)
        rows = ref.sampled_items(levels)
        if ref.order is not None and ref.order.size:
            rows = np.where(rows >= 0, ref.order[np.maximum(rows, 0)], rows)
        q, got_rows, n_hits = weighted_levels(cnt, rel, ig, n_pos, w, levels, eps)
        assert np.array_equal(q, ref.interpolated_precision(levels, eps))
        assert np.array_equal(got_rows, rows) and np.array_equal(n_hits, ref.n_hits)
