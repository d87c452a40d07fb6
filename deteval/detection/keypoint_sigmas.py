"""OKS sigmas per category: where they come from and how each ground truth finds its own.

COCO's OKS (``COCOeval.computeOks``) divides each keypoint's squared distance by ``(2σ_k)²``; pycocotools
holds one list ``kpt_oks_sigmas`` for every category. A dataset with several skeletons (or several kinds of
object sharing one) needs one list per category. A category's sigmas come from, first to last:

1. the option ``kpt_oks_sigmas_per_category`` (a preset table, ``--kpt-oks-sigmas-per-category`` on the
   command line, a dict through the API): ``{category_id: [σ_1, …, σ_K]}``;
2. the category record of the ground truth, key ``"sigmas"`` (:data:`SIGMAS_KEY`; the name mmpose's dataset
   descriptions and vernier's ``Keypoints(sigmas=…)`` use): ``{"id": 1, "name": "person", "keypoints": [...],
   "skeleton": [...], "sigmas": [0.026, ...]}``;
3. ``kpt_oks_sigmas``, the one list for all (COCO's 17 by default).

Every pair is measured with the sigmas of its ground truth's category, so each category's numbers are those
of pycocotools run on that category alone with its own ``kpt_oks_sigmas``, and those of vernier's
``Keypoints(sigmas={category_id: ...})``.

Categories may have skeletons of different sizes in one file. A category's keypoint count K_c is the length of
its record's ``"keypoints"`` name list when it has one, else its annotations' common length
(:func:`deteval.io.coco.keypoints.category_keypoint_counts`); every annotation and detection of the category
must have 3·K_c numbers. Its sigmas must number K_c (COCO's default 17 fit a 17-point category only); a
category whose sigmas have another length is refused, naming it. A pair's OKS then runs over its category's
K_c points only: the mean of ``exp(−d² / (2 · area · (2σ)²))`` over the ground truth's visible points, or without any,
the distances to its box enlarged by 2× over all K_c points, divided by K_c (``computeOks`` on that category).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from deteval.errors import ConfigError, ValidationError
from deteval.syntax import parse_decimal, parse_integer

__all__ = [
    "SIGMAS_KEY",
    "category_variances",
    "check_sigma_list",
    "parse_sigmas_per_category",
    "record_sigmas",
]

#: The key of a category record that holds its OKS sigmas.
SIGMAS_KEY = "sigmas"

#: The most keypoints a sigma list may hold (shared with ``kpt_oks_sigmas``).
MAX_SIGMAS = 1000
#: The most categories ``kpt_oks_sigmas_per_category`` may name.
MAX_SIGMA_CATEGORIES = 100_000


def check_sigma_list(value: Any, what: str) -> np.ndarray:
    """``value`` (a list of numbers, or a comma-separated string) as float64 sigmas: 1 to
    :data:`MAX_SIGMAS` finite numbers > 0 (OKS divides by them). Raises ConfigError naming ``what``."""
    items: list[Any]
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, np.ndarray):
        items = list(value.reshape(-1))
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ConfigError(f"{what}: expected a list of numbers, got {value!r}"[:200])
    if not 1 <= len(items) <= MAX_SIGMAS:
        raise ConfigError(f"{what}: {len(items)} sigmas; allowed: 1 to {MAX_SIGMAS}")
    out = np.empty(len(items), dtype=np.float64)
    for k, v in enumerate(items):
        if isinstance(v, str):
            try:
                out[k] = parse_decimal(v)
            except ValueError:
                raise ConfigError(f"{what}: {v.strip()[:40]!r} is not a number") from None
        elif isinstance(v, (bool, np.bool_)) or not isinstance(v, (Real, np.integer, np.floating)):
            raise ConfigError(f"{what}: expected numbers, got {v!r}"[:200])
        else:
            out[k] = float(v)
        if not (math.isfinite(out[k]) and out[k] > 0):
            raise ConfigError(
                f"{what}: sigmas must be finite and positive, got {float(out[k])!r} for keypoint {k}"
            )
    return out


def _category_key(key: Any, what: str) -> Any:
    """A category id as given: an integer (also from a string of digits, as TOML and JSON object keys are
    strings), or another string (COCO files may use string ids)."""
    if isinstance(key, (bool, np.bool_)):
        raise ConfigError(f"{what}: {key!r} is not a category id")
    if isinstance(key, (int, np.integer)):
        return int(key)
    if isinstance(key, str):
        text = key.strip()
        if not text:
            raise ConfigError(f"{what}: empty category id")
        try:
            return parse_integer(text)
        except ValueError:
            return text
    raise ConfigError(f"{what}: {key!r} is not a category id"[:200])


def parse_sigmas_per_category(value: Any, what: str = "kpt_oks_sigmas_per_category") -> dict[Any, np.ndarray]:
    """``{category_id: sigmas}`` from a mapping (a preset's TOML table, a dict through the API; string keys of
    digits become integer ids) or the command-line form ``"1:0.1,0.2,0.3;2:0.5,0.5,0.5"`` (``;`` between
    categories, ``:`` after the id). Each list is checked by :func:`check_sigma_list`. Raises ConfigError."""
    if isinstance(value, str):
        pairs: list[tuple[Any, Any]] = []
        for part in value.split(";"):
            if not part.strip():
                raise ConfigError(f"{what}: empty entry in {value[:80]!r} (use 'id:s1,s2;id:s1,s2')")
            key, sep, rest = part.partition(":")
            if not sep:
                raise ConfigError(f"{what}: {part.strip()[:40]!r} has no ':' (use 'id:s1,s2,...')")
            pairs.append((key, rest))
    elif isinstance(value, Mapping):
        pairs = list(value.items())
    else:
        raise ConfigError(f"{what}: expected a table of category id to sigmas, got {value!r}"[:200])
    if not 1 <= len(pairs) <= MAX_SIGMA_CATEGORIES:
        raise ConfigError(f"{what}: {len(pairs)} categories; allowed: 1 to {MAX_SIGMA_CATEGORIES}")
    out: dict[Any, np.ndarray] = {}
    for key, sig in pairs:
        cat = _category_key(key, what)
        if cat in out:
            raise ConfigError(f"{what}: category {cat!r} is given twice")
        out[cat] = check_sigma_list(sig, f"{what} of category {cat!r}")
    return out


def record_sigmas(category_records: Sequence[Any] | None, file: str) -> dict[Any, np.ndarray]:
    """``{category id: sigmas}`` from the ground truth's category records that hold :data:`SIGMAS_KEY`
    (records without it are left out). A bad list is a ValidationError naming the file and the category."""
    out: dict[Any, np.ndarray] = {}
    for rec in category_records or ():
        if not isinstance(rec, dict) or SIGMAS_KEY not in rec:
            continue
        cid = rec.get("id")
        try:
            out[cid] = check_sigma_list(rec[SIGMAS_KEY], f"{SIGMAS_KEY!r}")
        except ConfigError as exc:
            raise ValidationError(exc.reason, file=file, record=f"category id {cid!r}") from None
    return out


def category_variances(
    cat_ids: np.ndarray,
    default: np.ndarray,
    given: Mapping[Any, np.ndarray] | None,
    category_records: Sequence[Any] | None,
    file: str,
    n_keypoints: int | np.ndarray,
    used: np.ndarray | None = None,
) -> np.ndarray | None:
    """Per category (rows in the order of ``cat_ids``), the OKS variances ``(2σ)²`` of its sigmas (see the
    module docstring for where they come from); None where every category takes ``default``.

    ``n_keypoints``: the keypoint count K of every category (one int), or each category's own K_c (an array in
    the order of ``cat_ids``; the table is then as wide as the largest, each row's variances in its first K_c
    cells and 1 after them, and never None). ``used``: the category indices that hold ground truth or
    detections; those must have K (K_c) sigmas (a ValidationError names the first that does not). The others
    get ``default``'s or their own variances unchecked, since no pair ever reads them.
    """
    own = record_sigmas(category_records, file)
    if given:
        own.update(given)
    per_category = not isinstance(n_keypoints, int)
    if not own and not per_category:
        return None
    keys = cat_ids.tolist()
    known = set(keys)
    unknown = [k for k in (given or {}) if k not in known]
    if unknown:
        raise ConfigError(
            f"kpt_oks_sigmas_per_category names category {unknown[0]!r}, not in the ground truth"
        )
    counts = np.broadcast_to(np.asarray(n_keypoints, dtype=np.int64), (len(keys),))
    rows = [own.get(k, default) for k in keys]
    check = range(len(keys)) if used is None else used.tolist()
    for c in check:
        if rows[c].shape[0] != counts[c]:
            source = "kpt_oks_sigmas" if keys[c] not in own else f"the sigmas of category {keys[c]!r}"
            raise ValidationError(
                f"category {keys[c]!r} has {counts[c]} keypoints but {source} has {rows[c].shape[0]}",
                file=file,
            )
    table = np.ones((len(keys), int(counts.max(initial=0))), dtype=np.float64)
    for c, sig in enumerate(rows):
        if sig.shape[0] == counts[c]:
            table[c, : counts[c]] = (sig * 2) ** 2
    return table
