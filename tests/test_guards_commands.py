"""Options, presets, outputs, pictures, Open Images files and saved metric states that used to crash, hang, blow
up memory or pass silently: each gives one ``deteval: error:`` line (exit 2) or is refused by the API."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_errors import cli_error

from deteval.errors import DetevalError

ROOT = Path(__file__).resolve().parent.parent
COCO = [str(ROOT / "data_samples" / "coco" / "instances_val.json"), str(ROOT / "data_samples" / "coco" / "results_bbox.json")]  # fmt: skip
OID = ROOT / "data_samples" / "openimages"


# -------------------------------------------------------------------------------------------- options
@pytest.mark.parametrize(
    ("extra", "piece"),
    [
        (["--ci", "0.9", "--seed", "-1"], "--seed must be a whole number from 0"),
        (["--ci", "0.9", "--seed", str(2**40)], "--seed"),
        (["--ci", "0.9", "--bootstrap", "1000000000"], "--bootstrap must be a whole number up to 100000"),
        (["--calibration", "--calibration-bins", "1000000000"], "--calibration-bins"),
        (["--confusion", "--score-threshold", "nan"], "--score-threshold must be a finite number"),
        (["--confusion", "--score-threshold", "inf"], "--score-threshold must be a finite number"),
        (["--worst-images", "-5"], "--worst-images"),
        (["--confusion", "--iou", "1.5"], "--iou"),
        (["--workers", "1000000"], "--workers"),
        (["--shards", "100000000"], "--shards"),
        (["--scheduler", "not a url"], "--scheduler must be a scheduler address"),
        (["--scheduler", "tcp://host:99999"], "--scheduler"),
    ],
)
def test_unbounded_options_are_refused(capsys, extra: list[str], piece: str) -> None:
    cli_error(capsys, ["coco", *COCO, *extra], piece)


def test_lvis_max_dets_negative(capsys) -> None:
    gt = str(ROOT / "data_samples" / "lvis" / "lvis_val.json")
    cli_error(capsys, ["lvis", gt, COCO[1], "--max-dets", "-5"], "--max-dets", "-1 (no limit)")
    cli_error(capsys, ["lvis", gt, COCO[1], "--max-dets", "0"], "--max-dets")
    cli_error(capsys, ["lvis", gt, COCO[1], "--dets-per-cat", "-1"], "--dets-per-cat")


def test_trec_cutoff_beyond_a_c_int(capsys) -> None:
    trec = [
        str(ROOT / "data_samples" / "trec" / "qrels.txt"),
        str(ROOT / "data_samples" / "trec" / "run.txt"),
    ]
    cli_error(capsys, ["trec", *trec, "-m", "P.99999999999999999999"], "beyond 2147483647")


@pytest.mark.parametrize(
    ("text", "piece"),
    [
        ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
        ("seed = " + "9" * 5000 + "\n", "invalid TOML"),
        ("iou-thrs = " + "9" * 400 + "\n", "key 'iou-thrs': an integer of 400 digits"),
    ],
)
def test_hostile_presets(tmp_path: Path, capsys, text: str, piece: str) -> None:
    preset = tmp_path / "p.toml"
    preset.write_text(text)
    cli_error(capsys, ["coco", *COCO, "--config", str(preset)], "p.toml", piece)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_preset_that_is_a_fifo(tmp_path: Path, capsys) -> None:
    os.mkfifo(tmp_path / "p.toml")
    cli_error(capsys, ["coco", *COCO, "--config", str(tmp_path / "p.toml")], "not a regular file")


# -------------------------------------------------------------------------------------------- outputs
@pytest.mark.parametrize("flag", ["--output", "--html"])
def test_output_onto_an_input(tmp_path: Path, capsys, flag: str) -> None:
    gt = tmp_path / "gt.json"
    shutil.copy(COCO[0], gt)
    before = gt.read_bytes()
    cli_error(capsys, ["coco", str(gt), COCO[1], flag, str(gt)], flag, "is an input")
    link = tmp_path / "link.json"
    link.symlink_to(gt)
    cli_error(capsys, ["coco", str(gt), COCO[1], flag, str(link)], "is an input")
    assert gt.read_bytes() == before


@pytest.mark.parametrize("flag", ["--html", "--images", "--output"])
def test_output_into_a_read_only_folder(read_only_dir: Path, capsys, flag: str) -> None:
    target = str(read_only_dir / ("out" if flag == "--images" else "out.html"))
    cli_error(capsys, ["coco", *COCO, flag, target], "cannot")
    assert not any(read_only_dir.iterdir())


# ------------------------------------------------------------------------------------------- pictures
def _coco_with_file_names(tmp_path: Path, name: str) -> str:
    gt = json.loads(Path(COCO[0]).read_text())
    for im in gt["images"]:
        im["file_name"] = name
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    return str(path)


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.jpg", "a/../../outside.jpg"])
def test_image_root_contains_reads(tmp_path: Path, capsys, name: str) -> None:
    gt = _coco_with_file_names(tmp_path, name)
    (tmp_path / "root").mkdir()
    cli_error(
        capsys,
        ["coco", gt, COCO[1], "--images", str(tmp_path / "out"), "--image-root", str(tmp_path / "root")],
        "leaves the image folder",
    )


def test_pictures_that_are_not_images_or_too_large(tmp_path: Path, capsys) -> None:
    from _yolo_cases import png_header

    gt = _coco_with_file_names(tmp_path, "x.png")
    root = tmp_path / "root"
    root.mkdir()
    (root / "x.png").write_text("not an image")
    args = ["coco", gt, COCO[1], "--images", str(tmp_path / "out"), "--image-root", str(root)]
    cli_error(capsys, args, "x.png", "not a readable image")
    png_header(root / "x.png", 30000, 30000)
    cli_error(capsys, args, "x.png", "pixels")


def test_canvas_is_bounded_by_pixels() -> None:
    from deteval.io.guards import MAX_CANVAS_PIXELS, canvas_size

    w, h = canvas_size(60000.0, 60000.0)
    assert w * h <= MAX_CANVAS_PIXELS and w == h
    assert canvas_size(9e11, 10.0)[0] * canvas_size(9e11, 10.0)[1] <= MAX_CANVAS_PIXELS
    assert canvas_size(float("nan"), -1.0) == (16, 16)
    assert canvas_size(800.0, 600.0) == (800, 600)


@pytest.mark.slow  # (above a second of CPU: full suite only)
def test_declared_image_size_does_not_size_the_canvas(tmp_path: Path, capsys) -> None:
    """A 60000² declared image drew a 60000² canvas (MemoryError); the canvas is now scaled down."""
    from deteval.cli import main

    gt = json.loads(Path(COCO[0]).read_text())
    for im in gt["images"]:
        im["width"] = im["height"] = 60000
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    assert main(["coco", str(path), COCO[1], "--images", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    from PIL import Image

    pngs = sorted((tmp_path / "out").glob("*.png"))
    assert pngs
    with Image.open(pngs[0]) as im:
        assert im.size[0] * im.size[1] <= 1 << 26


# ---------------------------------------------------------------------------------------- Open Images
def _oid(tmp_path: Path) -> Path:
    out = tmp_path / "oid"
    shutil.copytree(OID, out)
    return out


def _oid_args(d: Path) -> list[str]:
    return [
        "openimages", str(d / "boxes.csv"), str(d / "predictions.csv"), "--labels", str(d / "labels.csv"),
        "--hierarchy", str(d / "hierarchy.json"), "--class-names", str(d / "classes.csv"),
    ]  # fmt: skip


def test_hierarchy_nested_500_levels(tmp_path: Path, capsys) -> None:
    d = _oid(tmp_path)
    text = "".join(f'{{"LabelName": "/m/n{k}", "Subcategory": [' for k in range(500))
    (d / "hierarchy.json").write_text(text + '{"LabelName": "/m/leaf"}' + "]}" * 500)
    err = cli_error(capsys, _oid_args(d), "hierarchy.json")
    assert "RecursionError" not in err


def test_hierarchy_deeper_than_1000_levels(tmp_path: Path) -> None:
    from deteval.io.openimages import load_hierarchy

    node: dict = {"LabelName": "/m/leaf"}
    for k in range(1100):
        node = {"LabelName": f"/m/n{k}", "Subcategory": [node]}
    with pytest.raises(DetevalError, match="deeper than 1000 levels"):
        load_hierarchy(node)
    h = load_hierarchy(node if False else {"LabelName": "r", "Subcategory": [{"LabelName": "a", "Subcategory": [{"LabelName": "b"}]}]})  # fmt: skip
    assert h.ancestors == {"a": [], "b": ["a"]} and h.descendants == {"a": ["b"], "b": []}
    assert h.order == ["b", "a"]


@pytest.mark.parametrize(
    "tree",
    [
        {"LabelName": "/m/entity", "Subcategory": [{"LabelName": "/m/a", "Subcategory": [{"LabelName": "/m/a"}]}]},
        {"LabelName": "/m/entity", "Subcategory": [{"LabelName": "/m/a", "Subcategory": [
            {"LabelName": "/m/b", "Subcategory": [{"LabelName": "/m/a"}]}]}]},
    ],
)  # fmt: skip
def test_hierarchy_cycles_are_refused(tree: dict) -> None:
    from deteval.io.openimages import load_hierarchy

    with pytest.raises(DetevalError, match="its own ancestor"):
        load_hierarchy(tree)


def test_csv_field_beyond_the_limit_and_quoted_newlines(tmp_path: Path, capsys) -> None:
    d = _oid(tmp_path)
    rows = (d / "boxes.csv").read_text().splitlines()
    rows.insert(2, '"' + "x" * 200_000 + '",/m/date,0.1,0.2,0.1,0.2,0')
    (d / "boxes.csv").write_text("\n".join(rows) + "\n")
    from deteval.io.openimages import read_oid_csv

    t = read_oid_csv(d / "boxes.csv", ("ImageID", "LabelName"), (), "boxes")
    assert len(t.image[1]) == 200_000
    rows[2] = '"' + "x" * (2 << 20) + '",/m/date,0.1,0.2,0.1,0.2,0'
    (d / "boxes.csv").write_text("\n".join(rows) + "\n")
    cli_error(capsys, _oid_args(d), "boxes.csv", "line 3", "field larger than field limit")
    rows[2] = '"a\nb",/m/date,0.1,0.2,0.1,nan,0'
    (d / "boxes.csv").write_text("\n".join(rows) + "\n")
    cli_error(capsys, _oid_args(d), "boxes.csv", "line 3:", "YMax")


@pytest.mark.parametrize(("column", "value"), [("XMax", "5.0"), ("XMin", "-3"), ("YMax", "1.0001")])
def test_normalised_ground_truth_outside_the_unit_square(
    tmp_path: Path, capsys, column: str, value: str
) -> None:
    d = _oid(tmp_path)
    lines = (d / "boxes.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = lines[1].split(",")
    row[header.index(column)] = value
    lines[1] = ",".join(row)
    (d / "boxes.csv").write_text("\n".join(lines) + "\n")
    cli_error(capsys, _oid_args(d), "boxes.csv", "line 2", f"{column}", "outside [0, 1]")


def test_display_names_are_escaped_in_markdown(tmp_path: Path, capsys) -> None:
    from deteval.cli import main

    d = _oid(tmp_path)
    text = (d / "classes.csv").read_text().replace("Date", "<img src=x onerror=alert(1)>")
    (d / "classes.csv").write_text(text)
    assert main([*_oid_args(d), "--per-class", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "<img" not in out and "&lt;img" in out


# ------------------------------------------------------------------------------------ metric states
def _state(protocol: str) -> tuple[object, dict]:
    from deteval.api import MeanAveragePrecision

    m = MeanAveragePrecision(protocol=protocol)
    boxes = np.array([[0, 0, 10, 10.0], [20, 20, 30, 30]])
    m.update(
        [{"boxes": boxes, "scores": np.array([0.9, 0.3]), "labels": np.array([1, 2])}],
        [{"boxes": boxes, "labels": np.array([1, 1])}],
    )
    return m, m.state_dict()


def _tamper(state: dict, path: tuple, value: object) -> dict:
    out = copy.deepcopy(state)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("protocol", "path", "value", "piece"),
    [
        ("coco", ("coco_tables", 0, "tp"), 7, "tp: must be a 3-D numpy array"),
        ("coco", ("coco_tables", 0, "cat"), np.array([0, 1, 2]), "different lengths"),
        ("coco", ("coco_tables", 0, "cat_ids"), np.array(["a"]), "cat_ids"),
        ("coco", ("coco_tables", 0, "img"), np.array([5, 5]), "img: values must lie in"),
        ("coco", ("n_images",), 10**12, "n_images"),
        ("coco", ("n_images",), "1", "n_images: must be an integer"),
        ("coco", ("image_ids",), KeyError, "lacks image_ids"),
        ("voc", ("voc_gt", "labels"), np.array([1, 1, 1]), "different lengths"),
        ("voc", ("voc_gt", "difficult"), np.array([2, 0]), "difficult"),
        ("voc", ("voc_pred", "scores"), np.array([np.nan, 0.3]), "finite"),
        ("voc", ("images",), "x", "images: must be a list"),
    ],
)
@pytest.mark.filterwarnings("ignore:deteval. 1 class.es. without non-difficult ground truth")  # (class 2)
def test_tampered_states_are_refused(protocol: str, path: tuple, value: object, piece: str) -> None:
    from deteval.api import MeanAveragePrecision

    m, state = _state(protocol)
    fresh = MeanAveragePrecision(protocol=protocol)
    with pytest.raises(DetevalError, match=None) as err:
        fresh.load_state_dict(_tamper(state, path, value))
    assert piece in str(err.value)
    fresh.load_state_dict(state)  # the untouched state still loads, and gives the same numbers
    assert fresh.compute().to_json() == m.compute().to_json()


def test_voc_target_difficult_must_be_a_flag() -> None:
    from deteval.api import MeanAveragePrecision

    m = MeanAveragePrecision(protocol="voc")
    box = np.array([[0, 0, 10, 10.0]])
    for bad in (2, -1):
        with pytest.raises(DetevalError, match="difficult"):
            m.update(
                [{"boxes": box, "scores": np.array([0.5]), "labels": np.array([1])}],
                [{"boxes": box, "labels": np.array([1]), "difficult": np.array([bad])}],
            )


@pytest.mark.parametrize("flag", ["--html", "--images", "--output"])
def test_output_under_a_file(tmp_path: Path, capsys, flag: str) -> None:
    """A path whose folder is a file (NotADirectoryError, as a read-only folder gives PermissionError)."""
    (tmp_path / "file").write_text("x")
    cli_error(capsys, ["coco", *COCO, flag, str(tmp_path / "file" / "out")], "cannot")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("kind", ["fifo", "zero"])
@pytest.mark.parametrize(
    "which", ["coco-gt", "coco-results", "trec-qrels", "trec-run", "trec-Z", "voc-xml", "report"]
)
def test_pipes_and_devices_in_every_reader(tmp_path: Path, capsys, kind: str, which: str) -> None:
    """A FIFO blocked the open forever and /dev/zero was read until memory ran out."""
    bad = tmp_path / "bad"
    if kind == "fifo":
        os.mkfifo(bad)
    else:
        bad.symlink_to("/dev/zero")
    trec = [
        str(ROOT / "data_samples" / "trec" / "qrels.txt"),
        str(ROOT / "data_samples" / "trec" / "run.txt"),
    ]
    voc = tmp_path / "voc"
    shutil.copytree(ROOT / "data_samples" / "voc", voc)
    xml = voc / "Annotations" / "000004.xml"
    xml.unlink()
    if kind == "fifo":
        os.mkfifo(xml)
    else:
        xml.symlink_to("/dev/zero")
    argv = {
        "coco-gt": ["coco", str(bad), COCO[1]],
        "coco-results": ["coco", COCO[0], str(bad)],
        "trec-qrels": ["trec", str(bad), trec[1]],
        "trec-run": ["trec", trec[0], str(bad)],
        "trec-Z": ["trec", *trec, "-Z", str(bad)],
        "voc-xml": ["voc", "--annotations", str(voc / "Annotations"), "--detections", str(voc / "results")],
        "report": ["report", str(bad)],
    }[which]
    piece = "named pipe" if kind == "fifo" else "character device"
    cli_error(capsys, argv, piece)


def test_bootstrap_weights_are_bounded_and_unchanged() -> None:
    """Resample weights beyond 2**28 counts are refused before allocation (10**6 topics × 1000 resamples
    asked for 7.5 GiB); below, the int32 draws give the very weights the int64 draws gave."""
    from deteval.errors import ConfigError
    from deteval.stats.bootstrap import MAX_WEIGHTS, bootstrap_weights

    with pytest.raises(ConfigError, match=r"use --bootstrap 268 or fewer"):
        bootstrap_weights(10**6, 1000, 0)
    assert MAX_WEIGHTS == 1 << 28
    for n, b in ((1, 3), (7, 50), (1001, 20)):
        rng = np.random.default_rng(5)
        draws = rng.integers(0, n, size=(b, n))  # the int64 draws of the previous release
        want = np.stack([np.bincount(row, minlength=n) for row in draws])
        got = bootstrap_weights(n, b, 5)
        assert got.dtype == np.int64 and np.array_equal(got, want)


def test_trec_bootstrap_beyond_the_weights_is_refused_before_evaluating(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--ci on more topics than the resample weights allow is refused once the files are read, before the
    evaluation (10**6 topics were evaluated for a minute before the refusal); the topics counted are those of
    both files, or every qrels topic with -c."""
    import importlib

    import deteval.commands.trec as trec_command

    bootstrap = importlib.import_module("deteval.stats.bootstrap")  # (deteval.stats.bootstrap: the function)

    def not_evaluated(*args: object, **kwargs: object) -> None:
        raise AssertionError("evaluated before the refusal")

    monkeypatch.setattr(bootstrap, "MAX_WEIGHTS", 10 * 3)  # 10 resamples of 3 topics fit
    monkeypatch.setattr(trec_command, "evaluate_trec", not_evaluated)
    q, r = tmp_path / "q", tmp_path / "r"
    q.write_text("".join(f"{t} 0 d{t} 1\n" for t in range(5)))
    r.write_text("".join(f"{t} Q0 d{t} 1 1.0 x\n" for t in range(3, 8)))  # topics 3 and 4 judged
    trec = ["trec", str(q), str(r), "-m", "map", "--ci", "0.95"]
    cli_error(capsys, [*trec, "--bootstrap", "16"], "16 resamples of 2 units", "use --bootstrap 15 or fewer")
    cli_error(
        capsys, [*trec, "--bootstrap", "11", "-c"], "11 resamples of 5 units", "use --bootstrap 6 or fewer"
    )


def test_preset_with_a_bom_reads(tmp_path: Path) -> None:
    from deteval.config import load_preset

    preset = tmp_path / "p.toml"
    preset.write_bytes(b'\xef\xbb\xbfiou-thrs = "0.5"\n')
    assert load_preset(str(preset)) == {"iou-thrs": "0.5"}


@pytest.mark.parametrize("std", ["-0.5", "1e-320"])
def test_zscore_stddev_negative_or_denormal(tmp_path: Path, capsys, std: str) -> None:
    """A negative stddev flipped the z-score's sign; a denormal one printed inf and wrote null."""
    trec = [
        str(ROOT / "data_samples" / "trec" / "qrels.txt"),
        str(ROOT / "data_samples" / "trec" / "run.txt"),
    ]
    z = tmp_path / "z.txt"
    z.write_text(f"q1 map 0.3 {std}\n")
    cli_error(capsys, ["trec", *trec, "-Z", str(z)], "z.txt", "line 1", "stddev")


def test_voc_box_of_9e11_pixels_draws_a_bounded_canvas(tmp_path: Path, capsys) -> None:
    from PIL import Image

    from deteval.cli import main

    voc = tmp_path / "voc"
    shutil.copytree(ROOT / "data_samples" / "voc", voc)
    for xml in (voc / "Annotations").glob("*.xml"):
        text = xml.read_text()
        text = text.replace("<width>", "<width>9").replace("</xmax>", "00000000</xmax>", 1)
        xml.write_text(text)
    out = tmp_path / "pics"
    argv = ["voc", "--annotations", str(voc / "Annotations"), "--detections",
            str(voc / "results" / "comp4_det_test_{cls}.txt"), "--images", str(out), "--worst-images", "2"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    for png in out.glob("*.png"):
        with Image.open(png) as im:
            assert im.size[0] * im.size[1] <= 1 << 26


def test_pycocotools_object_with_a_stale_index_is_refused() -> None:
    """pycocotools evaluates its index; a dataset appended to without createIndex() would read differently."""
    from contextlib import redirect_stdout
    from io import StringIO

    from pycocotools import coco as pycoco

    from deteval.detection.coco import evaluate_coco

    with redirect_stdout(StringIO()):
        gt = pycoco.COCO(COCO[0])
    dets = json.loads(Path(ROOT / "data_samples" / "coco" / "results_bbox.json").read_text())
    evaluate_coco(gt, dets)  # fresh: accepted
    extra = dict(gt.dataset["annotations"][0], id=10**6)
    gt.dataset["annotations"].append(extra)
    with pytest.raises(DetevalError, match="call createIndex"):
        evaluate_coco(gt, dets)
    with redirect_stdout(StringIO()):
        gt.createIndex()
    evaluate_coco(gt, dets)
