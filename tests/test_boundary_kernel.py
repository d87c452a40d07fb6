"""The boundary kernel (deteval.match.boundary) against boundary-iou-api's recipe run in OpenCV, and against
the boundaries ultrafast-pycocotools and faster-coco-eval make, mask for mask, on hundreds of random masks:
masks at the image border, empty and full masks, tiny and thin images, ratios from 0 to 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from deteval.errors import ConfigError
from deteval.io.rle import decode_counts
from deteval.match.boundary import (
    BOUNDARY_PROFILES,
    boundary_counts,
    dilation_pixels,
    encode_counts,
    mask_boundaries,
)

mask_utils = pytest.importorskip("pycocotools.mask")
cv2 = pytest.importorskip("cv2")


def cv2_boundary(mask: np.ndarray, d: int) -> np.ndarray:
    """boundary-iou-api's ``mask_to_boundary`` with the erosion depth given: a one-pixel zero border, ``d``
    erosions by a 3×3 square of ones, the border cut off, the mask minus its erosion."""
    h, w = mask.shape
    padded = cv2.copyMakeBorder(mask, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), dtype=np.uint8), iterations=d)[1 : h + 1, 1 : w + 1]
    return mask - eroded


def api_depth(h: int, w: int, ratio: float) -> int:
    """boundary-iou-api's ``dilation = int(round(dilation_ratio * img_diag))``, at least 1."""
    return max(1, round(float(ratio * np.sqrt(h**2 + w**2))))


def random_mask(rng: np.random.Generator, h: int, w: int, kind: int) -> np.ndarray:
    m = np.zeros((h, w), dtype=np.uint8)
    if kind == 0:  # noise (many runs, holes)
        m = (rng.random((h, w)) < rng.uniform(0.2, 0.97)).astype(np.uint8)
    elif kind == 1:  # rectangles, often cut by the image border
        for _ in range(int(rng.integers(1, 4))):
            y0, x0 = int(rng.integers(-h // 2, h)), int(rng.integers(-w // 2, w))
            m[
                max(y0, 0) : y0 + int(rng.integers(1, h + 1)), max(x0, 0) : x0 + int(rng.integers(1, w + 1))
            ] = 1
    elif kind == 2:  # empty or full
        m[:] = int(rng.random() < 0.5)
    elif kind == 3:  # a disc, anywhere (also past the border)
        yy, xx = np.mgrid[:h, :w]
        cy, cx, r = rng.uniform(-5, h + 5), rng.uniform(-5, w + 5), rng.uniform(0.5, 60)
        m = ((yy - cy) ** 2 + (xx - cx) ** 2 < r * r).astype(np.uint8)
    else:  # one row or one column of foreground, or a single pixel
        if rng.random() < 0.5:
            m[int(rng.integers(0, h)), :] = 1
        else:
            m[int(rng.integers(0, h)), int(rng.integers(0, w))] = 1
    return m


SIZES = [(1, 1), (1, 7), (7, 1), (2, 2), (3, 50), (50, 3), (105, 140), (375, 500), (64, 48)]
RATIOS = [0.02, 0.0, 0.003, 0.05, 0.1, 0.3, 1.0]


def _cases(seed: int, n: int) -> list[tuple[np.ndarray, float]]:
    rng = np.random.default_rng(seed)
    out = []
    for t in range(n):
        if t % 3 == 0:
            h, w = SIZES[t // 3 % len(SIZES)]
        else:
            h, w = int(rng.integers(1, 90)), int(rng.integers(1, 90))
        out.append((random_mask(rng, h, w, t % 5), RATIOS[t % len(RATIOS)]))
    return out


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(4))
def test_boundaries_equal_boundary_iou_api_mask_for_mask(seed):
    cases = _cases(seed, 150)
    rles = [mask_utils.encode(np.asfortranarray(m)) for m, _ in cases]
    # one mask per call, and every mask of a ratio in one call (the canvases then hold many masks)
    for (m, ratio), rle in zip(cases, rles):
        want = cv2_boundary(m, api_depth(*m.shape, ratio))
        got = mask_utils.decode(mask_boundaries([rle], ratio)[0])
        assert np.array_equal(got, want), (m.shape, ratio)
    for ratio in RATIOS:
        idx = [i for i, (_, r) in enumerate(cases) if r == ratio]
        made = mask_boundaries([rles[i] for i in idx], ratio)
        for i, b in zip(idx, made):
            m = cases[i][0]
            assert b["size"] == list(m.shape)
            assert np.array_equal(mask_utils.decode(b), cv2_boundary(m, api_depth(*m.shape, ratio)))


def test_the_boundary_is_the_mask_for_a_thin_mask_and_empty_for_an_empty_one():
    m = np.zeros((30, 40), dtype=np.uint8)
    empty = mask_utils.encode(np.asfortranarray(m))
    assert mask_boundaries([empty])[0] == {"size": [30, 40], "counts": empty["counts"]}
    m[5:7, 2:30] = 1  # 2 rows: every pixel within d = 1 of the background
    b = mask_utils.decode(mask_boundaries([mask_utils.encode(np.asfortranarray(m))])[0])
    assert np.array_equal(b, m)
    m[:] = 1  # the whole image: the border is the boundary, d = max(1, round(0.02 * 50)) = 1 deep
    b = mask_utils.decode(mask_boundaries([mask_utils.encode(np.asfortranarray(m))])[0])
    assert b.sum() == 30 * 40 - 28 * 38 and b[1:-1, 1:-1].sum() == 0


def test_uncompressed_counts_and_strings_give_the_same_boundary():
    rng = np.random.default_rng(5)
    m = random_mask(rng, 33, 21, 0)
    flat = m.flatten(order="F")
    change = np.flatnonzero(np.diff(flat)) + 1
    counts = np.diff(np.concatenate([[0], change, [flat.size]])).tolist()
    if flat[0]:
        counts = [0, *counts]
    given = [{"size": [33, 21], "counts": counts}, mask_utils.encode(np.asfortranarray(m))]
    a, b = mask_boundaries(given, 0.1)
    assert a == b


def test_compressed_counts_equal_pycocotools_encoder():
    rng = np.random.default_rng(3)
    masks = [random_mask(rng, int(rng.integers(1, 300)), int(rng.integers(1, 60)), k % 5) for k in range(200)]
    want = [mask_utils.encode(np.asfortranarray(m))["counts"] for m in masks]
    runs = []
    for m in masks:
        flat = m.flatten(order="F")
        change = np.flatnonzero(np.diff(flat)) + 1
        c = np.diff(np.concatenate([[0], change, [flat.size]]))
        runs.append(np.concatenate([[0], c]) if flat[0] else c)
    got = encode_counts(np.concatenate(runs), np.array([len(r) for r in runs]))
    assert got == want


def test_large_counts_are_encoded_in_several_groups():
    counts = np.array([0, 2**24 - 1, 5, 2**20, 3, 7, 2**16], dtype=np.int64)
    (text,) = encode_counts(counts, np.array([7]))
    assert decode_counts([text])[0].tolist() == counts.tolist()
    rle = {"size": [1, int(counts.sum())], "counts": text}
    assert mask_utils.area(rle) == 2**24 - 1 + 2**20 + 7


@pytest.mark.parametrize(
    ("h", "w", "ratio", "depths"),
    [
        (375, 500, 0.02, (12, 13, 12)),  # 12.5
        (105, 140, 0.02, (4, 4, 3)),  # 3.5
        (480, 640, 0.02, (16, 16, 16)),  # 16
        (427, 640, 0.02, (15, 15, 15)),  # 15.39
        (1, 1, 0.02, (1, 1, 1)),  # at least 1
        (0, 0, 0.5, (1, 1, 1)),
        (30, 40, 0.05, (2, 3, 2)),  # 2.5
    ],
)
def test_the_three_roundings_of_the_erosion_depth(h, w, ratio, depths):
    got = tuple(dilation_pixels(h, w, ratio, rounding) for rounding in BOUNDARY_PROFILES.values())
    assert got == depths
    assert got[0] == api_depth(h, w, ratio)
    x = ratio * math.sqrt(h * h + w * w)
    assert got[2] == max(1, math.floor(x - 1e-10 + 0.5))


def test_an_unknown_rounding_is_refused():
    with pytest.raises(ConfigError, match="half_even"):
        dilation_pixels(10, 10, 0.02, "nearest")


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(3))
def test_the_ultrafast_profile_equals_ultrafast_to_boundary(seed):
    um = pytest.importorskip("ultrafast_pycocotools.mask")
    cases = _cases(100 + seed, 120)
    for m, ratio in cases:
        rle = mask_utils.encode(np.asfortranarray(m))
        got = mask_boundaries([rle], ratio, BOUNDARY_PROFILES["ultrafast"])[0]
        want = um.toBoundary(dict(rle), ratio)
        assert np.array_equal(mask_utils.decode(got), mask_utils.decode(want)), (m.shape, ratio)


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(3))
def test_the_faster_coco_eval_profile_equals_its_to_boundary_on_images_taller_than_2d(seed):
    """faster-coco-eval's C++ erosion reads a neighbour of a pixel near the top or bottom of a column from
    the next column where the image is no taller than 2d pixels (documented in docs/coco.md); above that
    its boundaries are boundary-iou-api's with its own rounding."""
    fm = pytest.importorskip("faster_coco_eval.core.mask")
    rounding = BOUNDARY_PROFILES["faster-coco-eval"]
    checked = 0
    for m, ratio in _cases(200 + seed, 150):
        h, w = m.shape
        if h <= 2 * dilation_pixels(h, w, ratio, rounding):
            continue
        rle = mask_utils.encode(np.asfortranarray(m))
        got = mask_boundaries([rle], ratio, rounding)[0]
        want = fm.rleToBoundary(dict(rle), ratio)
        assert np.array_equal(mask_utils.decode(got), mask_utils.decode(want)), (m.shape, ratio)
        checked += 1
    assert checked > 60


def test_boundary_counts_of_no_mask_and_of_empty_images():
    counts, n = boundary_counts(
        np.array([0, 0], dtype=np.int64), np.array([1, 1]), np.array([[0, 0], [0, 5]]), np.array([1, 1])
    )
    assert counts.tolist() == [0, 0] and n.tolist() == [1, 1]
    assert mask_boundaries([]) == []


def test_canvases_of_any_size_give_the_same_boundaries(monkeypatch):
    import deteval.match.boundary as kernel

    cases = _cases(9, 90)
    rles = [mask_utils.encode(np.asfortranarray(m)) for m, _ in cases]
    whole = mask_boundaries(rles, 0.05)
    monkeypatch.setattr(kernel, "CANVAS_PIXELS", 64)  # (a canvas per mask)
    assert mask_boundaries(rles, 0.05) == whole
    for (m, _), b in zip(cases, whole):
        assert np.array_equal(mask_utils.decode(b), cv2_boundary(m, api_depth(*m.shape, 0.05)))
