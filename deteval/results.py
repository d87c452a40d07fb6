"""One result model for every protocol.

An :class:`EvalResult` is what every evaluator returns and every exporter renders:

* ``protocol``: ``"voc"``, ``"coco"``, ``"trec"``, ``"mir"``.
* ``summary``: the protocol's top-level fields, JSON-ready (``{"metric": "voc07", "map": 0.71, ...}``). They
  become the top level of the JSON document, next to ``protocol``.
* ``per_class``: one row per class (or topic), ``{"cat": {"ap": 0.5, "npos": 12, ...}}``.
* ``curves``: raw PR curves per class, kept out of the JSON unless asked for.
* ``warnings``: whatever was tolerated (counted, never silently dropped), in words.
* ``lines``: an optional protocol-specific plain-text rendering (e.g. pycocotools' twelve summary lines) that
  the table exporter prints before the per-class table.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np

from deteval.errors import InputFormatError
from deteval.io.guards import refuse_special
from deteval.io.jsonkeys import DuplicateKeyError, unique_keys

# Top-level JSON keys that are not summary fields; a summary may not use them (they would be overwritten).
RESERVED_KEYS: frozenset[str] = frozenset({"protocol", "per_class", "warnings", "lines", "curves"})


@dataclass
class PRCurve:
    """A precision/recall curve in rank order (ignored items removed), with the score at each rank."""

    recall: np.ndarray
    precision: np.ndarray
    scores: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.recall = np.asarray(self.recall, dtype=np.float64)
        self.precision = np.asarray(self.precision, dtype=np.float64)
        lengths = {len(self.recall), len(self.precision)}
        if self.scores is not None:
            self.scores = np.asarray(self.scores, dtype=np.float64)
            lengths.add(len(self.scores))
        if self.recall.ndim != 1 or self.precision.ndim != 1 or len(lengths) != 1:
            raise ValueError("PRCurve: recall, precision (and scores) must be 1-D arrays of one length")

    def to_dict(self) -> dict[str, list[float | None]]:
        """``{"recall": [...], "precision": [...], ["scores": [...]]}``; a NaN or inf entry becomes null."""
        out = {"recall": jsonable(self.recall), "precision": jsonable(self.precision)}
        if self.scores is not None:
            out["scores"] = jsonable(self.scores)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PRCurve:
        """Inverse of :meth:`to_dict` (null entries come back as NaN)."""
        scores = d.get("scores")
        return cls(
            recall=_curve_column(d["recall"], "recall"),
            precision=_curve_column(d["precision"], "precision"),
            scores=None if scores is None else _curve_column(scores, "scores"),
        )


def _curve_column(values: Any, key: str) -> np.ndarray:
    """Numbers or null (NaN, the value it stood for) as float64; ``np.asarray(dtype=float64)`` alone would
    also read ``"0.5"`` as 0.5 and ``true`` as 1.0: a TypeError instead."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
        return values.astype(np.float64, copy=False)
    ok = isinstance(values, (list, tuple)) and all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
    )
    if not ok:
        raise TypeError(f"{key} must be a list of numbers (or null)")
    return np.asarray(values, dtype=np.float64)


def jsonable(value: Any) -> Any:
    """``value`` with numpy arrays and scalars as lists and Python numbers, dict keys as strings, and
    non-finite floats as None (JSON has no NaN), recursively."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        # JSON has no NaN; a metric that is undefined is reported as null, never as a bare NaN token.
        return None
    return value


@dataclass
class EvalResult:
    """The result of one evaluation (see the module docstring for the fields)."""

    protocol: str
    summary: dict[str, Any] = field(default_factory=dict)
    per_class: dict[str, dict[str, Any]] = field(default_factory=dict)
    curves: dict[str, PRCurve] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        clash = sorted(RESERVED_KEYS & set(self.summary))
        if clash:
            raise ValueError(f"EvalResult: summary may not use the reserved key(s) {', '.join(clash)}")

    def __repr__(self) -> str:
        """A one-line summary (the full content is in ``summary``, ``per_class``, ``to_json()``)."""
        headline: list[str] = []
        for key, value in self.summary.items():
            if isinstance(value, float) and len(headline) < 4:
                headline.append(f"{key}={value:.4f}")
        rows = f"{len(self.per_class)} {'topics' if self.protocol == 'trec' else 'classes'}"
        extra = f", {len(self.warnings)} warning(s)" if self.warnings else ""
        return f"{type(self).__name__}(protocol={self.protocol!r}, {', '.join([*headline, rows])}{extra})"

    def to_dict(self, *, include_curves: bool = False) -> dict[str, Any]:
        """The JSON document: ``{"protocol": ..., **summary, "per_class": ..., "warnings": [...]}``."""
        out: dict[str, Any] = {"protocol": self.protocol}
        out.update(jsonable(self.summary))
        out["per_class"] = jsonable(self.per_class)
        out["warnings"] = list(self.warnings)
        if self.lines:
            out["lines"] = list(self.lines)
        if include_curves:
            out["curves"] = {k: c.to_dict() for k, c in self.curves.items()}
        return out

    def to_json(self, *, include_curves: bool = False, indent: int | None = 2) -> str:
        """:meth:`to_dict` as strict JSON (no NaN tokens: undefined values are null)."""
        return json.dumps(self.to_dict(include_curves=include_curves), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, file: str | PathLike[str] | None = None) -> EvalResult:
        """Rebuild a result from :meth:`to_dict` output (for ``deteval report`` and ``deteval compare``).

        A document of the wrong shape raises :class:`~deteval.errors.InputFormatError` naming ``file`` and
        the offending key.
        """
        where = "<in-memory result>" if file is None else file
        if not isinstance(d, dict):
            raise InputFormatError(f"a result must be a JSON object, not {type(d).__name__}", file=where)
        if not isinstance(d.get("protocol"), str):
            raise InputFormatError('missing or non-string "protocol" field', file=where)
        per_class = d.get("per_class") or {}
        if not isinstance(per_class, dict):
            raise InputFormatError('"per_class" must be an object of class -> row', file=where)
        for name, row in per_class.items():
            if not isinstance(row, dict):
                raise InputFormatError(
                    "a per-class row must be an object", file=where, record=f"class {name!r}"
                )
        curves: dict[str, PRCurve] = {}
        raw_curves = d.get("curves") or {}
        if not isinstance(raw_curves, dict):
            raise InputFormatError('"curves" must be an object of class -> curve', file=where)
        for name, c in raw_curves.items():
            if not isinstance(c, dict):
                raise InputFormatError(
                    "a PR curve must be an object with recall and precision",
                    file=where,
                    record=f"curve {name!r}",
                )
            try:
                curves[str(name)] = PRCurve.from_dict(c)
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise InputFormatError(
                    f"bad PR curve ({type(exc).__name__}: {exc})", file=where, record=f"curve {name!r}"
                ) from None
        for key in ("warnings", "lines"):
            value = d.get(key) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputFormatError(f'"{key}" must be a list of strings', file=where)
        return cls(
            protocol=d["protocol"],
            summary={k: v for k, v in d.items() if k not in RESERVED_KEYS},
            per_class={str(k): dict(v) for k, v in per_class.items()},
            curves=curves,
            warnings=list(d.get("warnings") or []),
            lines=list(d.get("lines") or []),
        )

    @classmethod
    def from_json(cls, text: str | bytes, *, file: str | PathLike[str] | None = None) -> EvalResult:
        """Parse :meth:`to_json` output; a syntax error raises InputFormatError with the line number.

        Stricter than :func:`json.loads`, so that nothing is silently lost or invented: the non-standard
        tokens ``NaN``/``Infinity`` and numbers that overflow to inf are refused (deteval writes null for an
        undefined value), as are a key repeated in one object (``json`` would keep the last silently),
        integers too long to convert or beyond ±2**63 (they could not be compared, averaged or plotted as
        floats; deteval writes counts far below it), absurdly deep nesting and strings that are not valid Unicode.
        """
        where = "<in-memory result>" if file is None else file
        try:
            data = json.loads(
                text,
                object_pairs_hook=unique_keys,
                parse_constant=_refuse_constant,
                parse_float=_finite_float,
                parse_int=_bounded_int,
            )
        except (_BadJSONValue, DuplicateKeyError) as exc:
            raise InputFormatError(exc.args[0], file=where) from None
        except json.JSONDecodeError as exc:
            raise InputFormatError(
                f"invalid JSON: {exc.msg} (column {exc.colno})", file=where, record=f"line {exc.lineno}"
            ) from None
        except UnicodeDecodeError as exc:
            raise InputFormatError(f"not UTF-8 text: {exc.reason}", file=where) from None
        except RecursionError:
            raise InputFormatError("JSON nested too deeply", file=where) from None
        except ValueError as exc:  # e.g. an integer literal beyond Python's digit limit
            raise InputFormatError(f"invalid JSON value: {str(exc).split(';')[0]}", file=where) from None
        try:
            if _may_hold_surrogates(text):  # a cheap scan first: the check re-serialises the document
                json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputFormatError(
                "a string holds an unpaired surrogate escape (\\ud800-\\udfff): not valid Unicode", file=where
            ) from None
        result = cls.from_dict(data, file=where)
        # Refused here, naming the file, rather than when a renderer meets the clash.
        flat_fields(jsonable(result.summary), file=str(where), record="summary")
        for name, row in result.per_class.items():
            flat_fields(jsonable(row), file=str(where), record=f"class {name!r}")
        return result


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield ``(dotted.key, scalar)`` pairs of a JSON-ready value; lists are indexed ``key.0``, ``key.1``.

    An empty dict or list yields one pair with the value ``"{}"`` or ``"[]"`` so the key is still shown.
    """
    if isinstance(value, dict):
        if not value and prefix:
            yield prefix, "{}"
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        if not value:
            yield prefix, "[]"
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}.{i}" if prefix else str(i))
    else:
        yield prefix, value


def flat_fields(value: Any, *, file: str | None = None, record: str | None = None) -> list[tuple[str, Any]]:
    """:func:`flatten` as a list, refusing two keys that flatten to one name (``{"x.y": 1}`` next to
    ``{"x": {"y": 2}}``), of which a table, a CSV file or ``compare`` could show only one."""
    pairs = list(flatten(value))
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise InputFormatError(
                f"two fields flatten to the same column {key!r} (a key with a dot next to a nested object); "
                "rename one",
                file=file,
                record=record,
            )
        seen.add(key)
    return pairs


_SURROGATE_ESCAPE_B = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_S = re.compile("\\\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def _may_hold_surrogates(text: str | bytes) -> bool:
    """Whether ``text`` could decode to an unpaired surrogate: a ``\\udXXX`` escape, a surrogate character
    (str), or bytes that json decodes with 'surrogatepass' into one (UTF-8 lead byte 0xED, UTF-16/32)."""
    if isinstance(text, (bytes, bytearray)):
        return (
            _SURROGATE_ESCAPE_B.search(text) is not None
            or b"\xed" in text
            or b"\x00" in text[:4]
            or text.startswith((b"\xff\xfe", b"\xfe\xff"))
        )
    return _SURROGATE_S.search(text) is not None


class _BadJSONValue(Exception):
    """Raised from the JSON hooks; turned into an InputFormatError naming the file."""


def _refuse_constant(token: str) -> Any:
    raise _BadJSONValue(f"non-standard JSON token {token} (deteval writes null for an undefined value)")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _BadJSONValue(f"number {token[:40]} overflows to infinity")
    return value


#: The largest integer magnitude a saved result may hold (counts are far below it; a float64 holds ±2**63).
MAX_INT: int = 2**63


def _bounded_int(token: str) -> int:
    value = int(token)  # beyond Python's digit limit this raises ValueError, reported as such
    if abs(value) >= MAX_INT:
        shown = token if len(token) <= 30 else f"{token[:20]}...({len(token)} digits)"
        raise _BadJSONValue(f"integer {shown} is beyond ±2**63 (no count or score is that large)")
    return value


def load_result(path: str | PathLike[str]) -> EvalResult:
    """Read a result saved with ``--format json`` (or :meth:`EvalResult.to_json`)."""
    p = Path(path)
    refuse_special(p, "result file")  # (a pipe would block the open, /dev/zero never end)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputFormatError(f"cannot read result file: {exc.strerror or exc}", file=p) from None
    return EvalResult.from_json(data, file=p)
