"""``deteval explain --task obb`` between the oriented-box profiles of a YOLO-OBB split (coco, dota_devkit,
the Ultralytics eras): the ends are ``deteval yolo --task obb --profile X``'s numbers, the steps add up to
their difference on the sample and on random splits, the IoU-kernel step is where ProbIoU and the polygon
IoU part; and the ``dota_devkit`` profile against the DOTA devkit itself (pip ``dotadevkit``), run live."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from _obb_cases import NAMES, random_obb_split

from deteval.cli import main
from deteval.explain.obb import explain_obb
from deteval.io.yolo_obb import load_yolo_obb
from deteval.run.yolo import evaluate_yolo, evaluate_yolo_files

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "obb" / "yolo"
PROFILES = ("ultralytics-8.0", "ultralytics-8.4.37", "ultralytics-8.4.176", "coco", "dota_devkit")


def _check(ds, preds, a: str, b: str) -> dict:
    e = explain_obb(ds, preds, a, b)
    assert not any(s["rule"].startswith("residual") for s in e.steps), e.to_text()
    for end, p in ((e.start, a), (e.end, b)):
        s = evaluate_yolo(ds, preds, p, iou_type="obb").summary
        assert (end["mAP50-95"], end["mAP50"]) == (s["mAP50-95"], s["mAP50"])
    for key in ("mAP50-95", "mAP50"):
        total = e.end[key] - e.start[key]
        assert sum(s["delta"][key] for s in e.steps) == pytest.approx(total, abs=1e-12, rel=0)
    return e.to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_steps_add_up_for_every_pair_on_random_splits(tmp_path: Path, seed: int) -> None:
    data, pred = random_obb_split(tmp_path, 300 + seed)
    ds, preds, _, _ = load_yolo_obb(data, pred, duplicates="drop")
    kernel_moved = 0
    for a, b in itertools.permutations(PROFILES, 2):
        d = _check(ds, preds, a, b)
        kernel_moved += any(
            s["rule"].startswith("IoU kernel: ProbIoU") and s["delta"]["mAP50-95"] for s in d["steps"]
        )
    assert kernel_moved  # (ProbIoU and the polygon IoU part somewhere on every split)


def test_ends_are_the_cli_numbers_on_the_sample(tmp_path: Path) -> None:
    args = [str(SAMPLE / "data.yaml"), str(SAMPLE / "predictions")]
    for a, b in (("ultralytics", "dota_devkit"), ("dota_devkit", "coco"), ("coco", "ultralytics-8.0")):
        out = tmp_path / f"{a}-{b}.json"
        assert (
            main(
                [
                    "explain",
                    *args,
                    "--task",
                    "obb",
                    "--from",
                    a,
                    "--to",
                    b,
                    "--format",
                    "json",
                    "-o",
                    str(out),
                ]
            )
            == 0
        )
        e = json.loads(out.read_text())
        for end, p in ((e["from"], a), (e["to"], b)):
            got = tmp_path / f"{p}.json"
            assert (
                main(["yolo", *args, "--task", "obb", "--profile", p, "--format", "json", "-o", str(got)])
                == 0
            )
            s = json.loads(got.read_text())
            assert (end["mAP50-95"], end["mAP50"]) == (s["mAP50-95"], s["mAP50"])
        total = e["to"]["mAP50-95"] - e["from"]["mAP50-95"]
        assert sum(s["delta"]["mAP50-95"] for s in e["steps"]) == pytest.approx(total, abs=1e-12, rel=0)
        assert not any(s["rule"].startswith("residual") for s in e["steps"])
    # the sample: ProbIoU and the polygon IoU disagree on 14 detections at some threshold; the devkit's
    # 11-point AP is the only other rule that moves mAP50
    steps = json.loads((tmp_path / "ultralytics-dota_devkit.json").read_text())["steps"]
    moved = {s["rule"].split(":")[0]: s for s in steps if s["delta"]["mAP50"] or s["delta"]["mAP50-95"]}
    assert set(moved) == {"AP integration and ranking", "IoU kernel", "AP integration"}
    assert moved["IoU kernel"]["count"] == 14 and moved["IoU kernel"]["delta"]["mAP50"] == 0.0


def test_the_devkit_profile_is_inferred_as_obb(capsys: pytest.CaptureFixture[str]) -> None:
    args = [str(SAMPLE / "data.yaml"), str(SAMPLE / "predictions"), "--from", "coco", "--to", "dota_devkit"]
    assert main(["explain", *args]) == 0
    out = capsys.readouterr().out
    assert "IoU kernel: obb polygon (area w·h) → quad as written" in out
    assert out.splitlines()[-1].split()[-2:] == ["0.46161", "0.90152"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--from", "coco", "--to", "supervision", "--task", "obb"], "not supervision"),
        (["--from", "coco", "--to", "voc07", "--task", "obb"], "VOC profiles score axis-aligned"),
        (["--from", "coco", "--to", "dota_devkit", "--task", "detect"], "give --task obb"),
        (["--from", "coco", "--to", "ultralytics", "--pose"], "not pose"),
    ],
)
def test_refusals_are_one_line(extra: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = SAMPLE / "data.yaml"
    if "--pose" in extra:  # (a pose data.yaml: kpt_shape)
        data, extra = SAMPLE.parent.parent / "pose" / "yolo" / "data.yaml", extra[:-1]
    assert main(["explain", str(data), str(SAMPLE / "predictions"), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_dota_devkit_profile_refuses_boxes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    yolo = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"
    assert (
        main(
            [
                "yolo",
                str(yolo / "data.yaml"),
                str(yolo / "predictions" / "labels"),
                "--profile",
                "dota_devkit",
            ]
        )
        == 2
    )
    assert "give --task obb" in capsys.readouterr().err


# ------------------------------------------------------------------- the dota_devkit profile against the devkit
def _devkit(root: Path, ds, preds, corners_g, corners_d, thr: float) -> dict[str, float]:
    task1 = pytest.importorskip("dotadevkit.evaluate.task1")
    lab, det = root / "labelTxt", root / "det"
    lab.mkdir(exist_ok=True)
    det.mkdir(exist_ok=True)
    stems = [p.stem for p in ds.images]
    for i, stem in enumerate(stems):
        rows = [
            " ".join(repr(float(v)) for v in corners_g[k]) + f" {NAMES[int(ds.labels.cls[k])]} 0"
            for k in np.flatnonzero(ds.labels.img == i)
        ]
        (lab / f"{stem}.txt").write_text("".join(r + "\n" for r in rows))
    (root / "set.txt").write_text("".join(s + "\n" for s in stems))
    out = {}
    for c, name in enumerate(NAMES):
        mine = np.flatnonzero(preds.cls == c)  # (image order, then file order: the profile's tie order)
        if not (ds.labels.cls == c).any() or not len(mine):
            continue
        (det / f"Task1_{name}.txt").write_text(
            "".join(
                f"{stems[int(preds.img[k])]} {float(preds.conf[k])!r} "
                + " ".join(repr(float(v)) for v in corners_d[k])
                + "\n"
                for k in mine
            )
        )
        with contextlib.redirect_stdout(io.StringIO()):  # (it prints its tp/fp arrays)
            _, _, ap = task1.voc_eval(
                str(det / "Task1_{:s}.txt"), str(lab / "{:s}.txt"), str(root / "set.txt"), name,
                ovthresh=thr, use_07_metric=True, version="1.5",
            )  # fmt: skip
        out[name] = float(ap)
    return out


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(6))
def test_dota_devkit_profile_equals_the_devkit(tmp_path: Path, seed: int) -> None:
    data, pred = random_obb_split(tmp_path / "split", 500 + seed)
    ds, preds, g, d = load_yolo_obb(data, pred)
    got = evaluate_yolo_files(data, pred, profile="dota_devkit", task="obb")
    compared = 0
    for thr, key in ((0.5, "AP50"), (0.75, "AP75")):
        want = _devkit(tmp_path, ds, preds, g, d, thr)
        for name, ap in want.items():
            # (the devkit's polyiou sums the areas in another order: equal to ~1e-15, the APs to the bit here)
            assert got.per_class[name][key] == pytest.approx(ap, abs=1e-12, rel=0), (name, thr)
            compared += 1
    assert compared >= 2


def test_readme_and_docs_show_what_explain_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's oriented-box ``console`` block (pieces split at ``...`` lines, in order) and docs/obb.md's
    full output are what the command prints on the sample."""
    import re
    import shlex

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    readme = (root / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Oriented boxes") :]
    section = section[: section.index("\n## ", 1)]
    docs = (root / "docs" / "obb.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n\$ (deteval [^\n]+)\n(.*?)```", section + docs, flags=re.S)
    assert len(blocks) == 2
    for k, (command, shown) in enumerate(blocks):
        assert main(shlex.split(command)[1:]) == 0
        printed = capsys.readouterr().out
        if k == 1:
            assert printed == shown
            continue
        at = 0
        for piece in [p.strip("\n") for p in re.split(r"^\.\.\.\n", shown, flags=re.M) if p.strip("\n")]:
            found = printed.find(piece, at)
            assert found >= 0, f"not printed (in this order): {piece!r}"
            at = found + len(piece)
