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
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class PRCurve:
    """A precision/recall curve in rank order (ignored items removed), with the score at each rank."""

    recall: np.ndarray
    precision: np.ndarray
    scores: np.ndarray | None = None

    def to_dict(self) -> dict[str, list[float]]:
        out = {"recall": self.recall.tolist(), "precision": self.precision.tolist()}
        if self.scores is not None:
            out["scores"] = self.scores.tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PRCurve":
        scores = d.get("scores")
        return cls(
            recall=np.asarray(d["recall"], dtype=np.float64),
            precision=np.asarray(d["precision"], dtype=np.float64),
            scores=None if scores is None else np.asarray(scores, dtype=np.float64),
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
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

    def to_dict(self, *, include_curves: bool = False) -> dict[str, Any]:
        """The JSON document: ``{"protocol": ..., **summary, "per_class": ..., "warnings": [...]}``."""
        out: dict[str, Any] = {"protocol": self.protocol}
        out.update(_jsonable(self.summary))
        out["per_class"] = _jsonable(self.per_class)
        out["warnings"] = list(self.warnings)
        if self.lines:
            out["lines"] = list(self.lines)
        if include_curves:
            out["curves"] = {k: c.to_dict() for k, c in self.curves.items()}
        return out

    def to_json(self, *, include_curves: bool = False, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(include_curves=include_curves), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        """Rebuild a result from :meth:`to_dict` output (for ``deteval report`` and ``deteval compare``)."""
        reserved = {"protocol", "per_class", "warnings", "lines", "curves"}
        return cls(
            protocol=str(d["protocol"]),
            summary={k: v for k, v in d.items() if k not in reserved},
            per_class=dict(d.get("per_class") or {}),
            curves={k: PRCurve.from_dict(v) for k, v in (d.get("curves") or {}).items()},
            warnings=list(d.get("warnings") or []),
            lines=list(d.get("lines") or []),
        )
