"""Hypothesis strategies that damage valid files the way scripts, crashes and other tools do."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st


def fuzz_settings(max_examples: int) -> settings:
    """Moderate and reproducible by default (the suite and CI see the same examples every run);
    ``DETEVAL_FUZZ_SCALE=20`` runs twenty times as many, freshly random examples (a deep local hunt)."""
    scale = os.environ.get("DETEVAL_FUZZ_SCALE")
    return settings(
        max_examples=max(1, int(max_examples * float(scale or 1))),
        derandomize=scale is None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# Tokens that have broken parsers before: special numbers, encodings, markup, separators.
NASTY: tuple[bytes, ...] = (
    b"nan", b"NaN", b"inf", b"-inf", b"Infinity", b"-1", b"0", b"-0", b"1e308", b"1e999", b"-1e999",
    b"1e-400", b"9" * 30, b"1_0", b"0x10", b"1,5", b".", b"-", b"e", b"+", b"\xef\xbb\xbf", b"\r", b"\r\n",
    b"\t", b" ", b"\n", b"\x00", b"\xff", b"\xe9", b"\xc3", b"<", b">", b"&", b"&amp;", b"&lol;",
    b"<!DOCTYPE x>", b'<!ENTITY a "b">', b"</", b"/>", b"<object>", b"</object>", b'"', b"{", b"}", b"[",
    b"]", b",", b":", b"null", b"true", b"[]", b"{}", b"\\ud800", b"\\u0000", b"#",
)  # fmt: skip


@st.composite
def mutated(draw: Any, data: bytes, max_ops: int = 4) -> bytes:
    """``data`` after 1..max_ops random edits: byte flips, truncation, deletions, insertions of nasty
    tokens, duplicated or dropped lines."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, max_ops))):
        op = draw(st.sampled_from(("flip", "truncate", "delete", "insert", "dup_line", "drop_line", "swap")))
        n = len(out)
        if op == "flip" and n:
            i = draw(st.integers(0, n - 1))
            out[i] = draw(st.integers(0, 255))
        elif op == "truncate":
            out = out[: draw(st.integers(0, n))]
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            out[i : i + draw(st.integers(1, 12))] = b""
        elif op == "insert":
            i = draw(st.integers(0, n))
            out[i:i] = draw(st.sampled_from(NASTY))
        elif op in ("dup_line", "drop_line", "swap"):
            lines = bytes(out).split(b"\n")
            k = draw(st.integers(0, len(lines) - 1))
            if op == "dup_line":
                lines.insert(k, lines[k])
            elif op == "drop_line":
                del lines[k]
            else:
                j = draw(st.integers(0, len(lines) - 1))
                lines[k], lines[j] = lines[j], lines[k]
            out = bytearray(b"\n".join(lines))
    return bytes(out)


def assert_no_nan(value: Any, where: str = "result") -> None:
    """No NaN or inf anywhere in a reported value (None is how an undefined metric is reported)."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert_no_nan(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            assert_no_nan(v, f"{where}[{i}]")
    elif isinstance(value, np.ndarray):
        assert value.dtype.kind not in "fc" or np.isfinite(value).all(), where
    elif isinstance(value, (float, np.floating)):
        assert math.isfinite(value), f"{where} = {value!r}"


def assert_valid_result(result: Any) -> None:
    """A result as reported: no NaN in the summary or the per-class rows; serialisable as strict JSON."""
    assert_no_nan(result.summary, "summary")
    assert_no_nan(result.per_class, "per_class")
    assert all(isinstance(w, str) for w in result.warnings)
    result.to_json()
