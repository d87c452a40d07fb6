"""Write data_samples/yolo/model_b/labels: a second, weaker model's predictions for the tiny YOLO sample.

Model B sees the same objects as the sample's predictions (``predictions/labels``) but places every box a
quarter of its width to the right and a tenth of its height lower (IoU with the original ≈ 0.51) and is less
confident (each score × 0.8). So its AP50 stays close while its AP75 and AP50-95 fall on every image: the
README's ``--compare-to`` example shows a difference the paired test calls significant. Deterministic (no
randomness); rerun to regenerate: ``python scripts/make_yolo_model_b.py``.
"""

from __future__ import annotations

from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "data_samples" / "yolo"


def shifted(row: str) -> str:
    """One ``cls xc yc w h conf`` row of model A as model B writes it (``%g`` numbers, as Ultralytics)."""
    cls, xc, yc, w, h, conf = row.split()
    x, y, bw, bh, c = (float(v) for v in (xc, yc, w, h, conf))
    return " ".join([cls, *(f"{v:g}" for v in (x + 0.25 * bw, y + 0.1 * bh, bw, bh, 0.8 * c))])


def main() -> None:
    out = SAMPLE / "model_b" / "labels"
    out.mkdir(parents=True, exist_ok=True)
    for src in sorted((SAMPLE / "predictions" / "labels").glob("*.txt")):
        rows = [shifted(r) for r in src.read_text().splitlines() if r.strip()]
        (out / src.name).write_text("".join(r + "\n" for r in rows))


if __name__ == "__main__":
    main()
