"""Typed, bounded option values, from the command line and from preset files alike.

Each subcommand declares its options as ``{dest: checker}``. A checker takes the raw value (a string or bool
from the command line; a TOML value from a preset, which must already have the right type: ``iou = true`` or
``use-cats = "false"`` are refused, not coerced) and returns the value to use or raises :class:`ConfigError`.
:func:`deteval.commands.common.apply_preset` runs them and names where a bad value came from: the flag
(``--iou``) or the preset file and key (``my.toml: key 'iou'``). The bounds are listed in docs/errors.md.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from deteval.detection.coco_params import parse_option
from deteval.errors import ConfigError
from deteval.io.guards import refuse_overwriting_inputs
from deteval.syntax import parse_decimal, parse_integer

#: ``checker(value, from_cli)`` → the value to use; raises ConfigError with the reason.
Checker = Callable[[Any, bool], Any]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def choice(values: Sequence[str]) -> Checker:
    """One of ``values`` (a string)."""

    def check(value: Any, cli: bool) -> str:
        if not isinstance(value, str) or value not in values:
            raise ConfigError(f"must be one of {', '.join(values)}, got {_shown(value)}")
        return value

    return check


def boolean(value: Any, cli: bool) -> bool:
    """true or false (a TOML boolean; a string such as ``"false"`` is refused, not read as true)."""
    if not isinstance(value, bool):
        raise ConfigError(f"must be true or false, got {_shown(value)}")
    return value


def _read(value: Any, cli: bool, parse: Callable[[str], Any], types: Any, expected: str) -> Any:
    """``value`` read by ``parse`` where the command line gave text, else as it is if it is one of ``types``
    (a TOML value, never a boolean); anything else is a ConfigError saying what was ``expected``."""
    if isinstance(value, str) and cli:
        try:
            return parse(value)
        except ValueError:
            pass
    elif isinstance(value, types) and not isinstance(value, bool):
        return value
    raise ConfigError(f"must be {expected}, got {_shown(value)}")


def number(lo: float, hi: float, what: str, *, open_lo: bool = False) -> Checker:
    """A finite number within [lo, hi] (or (lo, hi] with ``open_lo``): a TOML number, or on the command
    line a decimal in ASCII notation (``1_0``, ``nan`` and other scripts' digits are refused)."""
    if open_lo and lo == 0:
        bounds = f"a positive number up to {hi:g}"
    else:
        bounds = f"a number {'>' if open_lo else '>='} {lo:g} and <= {hi:g}"

    def check(value: Any, cli: bool) -> float:
        v = float(_read(value, cli, parse_decimal, (int, float), f"a number ({what})"))
        if not math.isfinite(v) or v > hi or v < lo or (open_lo and v == lo):
            raise ConfigError(f"must be {bounds} ({what}), got {_shown(value)}")
        return v

    return check


def whole(lo: int, hi: int, what: str) -> Checker:
    """A whole number within [lo, hi]: a TOML integer, or ASCII digits on the command line."""

    def check(value: Any, cli: bool) -> int:
        v: int = _read(value, cli, parse_integer, int, f"a whole number ({what})")
        if not lo <= v <= hi:
            raise ConfigError(f"must be a whole number from {lo} to {hi} ({what}), got {_shown(value)}")
        return v

    return check


def names(value: Any, cli: bool) -> list[str]:
    """Names: ``"a,b,c"`` or a list of strings; none empty, none twice, at least one."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise ConfigError(f"must be 'a,b,c' or a list of strings, got {_shown(value)}")
    items = [v.strip() for v in items]
    if not items or any(not v for v in items):
        raise ConfigError(f"must list non-empty names, got {_shown(value)}")
    twice = next((v for i, v in enumerate(items) if v in items[:i]), None)
    if twice is not None:  # a class listed twice would have its detections read twice
        raise ConfigError(f"lists {twice!r} twice")
    return items


def coco(key: str) -> Checker:
    """A COCO parameter, read and bounded by :func:`deteval.detection.coco_params.parse_option`."""

    def check(value: Any, cli: bool) -> Any:
        if isinstance(value, bool) and key != "use_cats":
            raise ConfigError(f"expected numbers, got {_shown(value)}")
        try:
            parse_option(key, value)
        except ConfigError as exc:  # its reason starts with the parameter's name; the caller names it
            reason = exc.reason
            for prefix in (f"{key}: ", f"{key} "):
                reason = reason.removeprefix(prefix)
            raise ConfigError(reason) from None
        return value  # parsed once more, with the other parameters, by CocoParams.from_options

    return check


def list_of(item: Checker, max_count: int) -> Checker:
    """A list (a repeatable flag, or a TOML array) of 1 to ``max_count`` values each checked by ``item``."""

    def check(value: Any, cli: bool) -> list[Any]:
        values = value if isinstance(value, list) else [value]
        if not 1 <= len(values) <= max_count:
            raise ConfigError(f"must list 1 to {max_count} values, got {len(values)}")
        return [item(v, cli) for v in values]

    return check


def run_checker(checker: Checker, value: Any, *, cli: bool, flag: str, file: str | None = None) -> Any:
    """``checker(value)``, its ConfigError naming the flag (command line) or the preset file and key."""
    try:
        return checker(value, cli)
    except ConfigError as exc:
        if cli:
            raise ConfigError(f"{flag} {exc.reason}") from None
        raise ConfigError(exc.reason, file=file, record=f"key {flag!r}") from None


def _reworded(check: Checker, reason: str) -> Checker:
    """``check``, its refusal said as ``reason`` with the value given."""

    def reworded(value: Any, cli: bool) -> Any:
        try:
            return check(value, cli)
        except ConfigError:
            raise ConfigError(f"{reason}, got {_shown(value)}") from None

    return reworded


def at_most(hi: int, what: str) -> Checker:
    """A whole number up to ``hi`` (its lower bound is checked where it is used)."""
    return _reworded(whole(-(2**62), hi, what), f"must be a whole number up to {hi} ({what})")


def finite(what: str) -> Checker:
    """Any finite number (``nan`` and ``inf`` refused)."""
    return _reworded(number(-_FLOAT_MAX, _FLOAT_MAX, what), f"must be a finite number ({what})")


def address(value: Any, cli: bool) -> str:
    """A dask scheduler address: ``[scheme://]host:port`` (port 1-65535), e.g. ``tcp://10.0.0.5:8786``."""
    m = _ADDRESS.fullmatch(value) if isinstance(value, str) else None
    if m is None or not 1 <= int(m.group("port")) <= 65535:
        raise ConfigError(f"must be a scheduler address such as tcp://host:8786, got {_shown(value)}")
    return str(value)


def max_dets_or_unlimited(value: Any, cli: bool) -> int:
    """A positive number of detections per image, or -1 for no limit (lvis-api's convention)."""
    v = whole(-(10**9), 10**9, "detections per image; -1: no limit")(value, cli)
    if v == 0 or v < -1:
        raise ConfigError(f"must be a positive number of detections or -1 (no limit), got {_shown(value)}")
    return v


_ADDRESS = re.compile(r"(?:[a-z][a-z0-9+.-]*://)?(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(?P<port>\d{1,5})/?")
_FLOAT_MAX = sys.float_info.max

#: Options several subcommands share and their bounds, checked for every command in
#: :func:`check_shared_options` (so that a command declaring one cannot forget its bound). docs/errors.md
#: lists them.
SHARED: dict[str, Checker] = {
    "seed": whole(0, 2**32 - 1, "a random seed"),
    # (the lower bound of this one is checked, with its own message, where it is used)
    "bootstrap": at_most(100_000, "resamples"),
    "calibration_bins": whole(1, 10_000, "confidence bins"),
    "worst_images": whole(1, 100_000, "images to list"),
    "score_threshold": finite("a score"),
    "iou": number(0.0, 1.0, "an IoU threshold"),
    "errors_fg_iou": number(0.0, 1.0, "an IoU threshold"),
    "errors_bg_iou": number(0.0, 1.0, "an IoU threshold"),
    "workers": whole(1, max(2, os.cpu_count() or 1), "local worker processes, at most the CPU cores"),
    "shards": whole(1, 1_000_000, "image shards"),
    "scheduler": address,
}


def check_shared_options(args: Any, parser: Any) -> None:
    """Run the :data:`SHARED` checkers on the values ``args`` holds (from the command line or the defaults);
    a bad one is a :class:`ConfigError` naming the flag."""
    flags = {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}
    for dest, checker in SHARED.items():
        value = getattr(args, dest, None)
        if value is not None and dest in flags:
            try:
                setattr(args, dest, checker(value, isinstance(value, str)))
            except ConfigError as exc:
                raise ConfigError(f"{flags[dest]} {exc.reason}") from None


#: Options that name files or folders a command writes.
OUTPUT_DESTS = ("output", "html", "images", "plots", "predictions_out")
#: Options (besides the positional arguments) that name files or folders a command reads.
INPUT_DESTS = (
    "compare_to",
    "labels",
    "hierarchy",
    "class_names",
    "image_root",
    "predictions",
    "config",
    "zscores",
)


def check_outputs(args: Any, parser: Any) -> None:
    """Refuse an output option naming one of the run's inputs (the same file or folder, also through a
    link): the run would replace what it reads, and the next run would fail on it."""
    flags = {a.dest: max(a.option_strings, key=len) for a in parser._actions if a.option_strings}
    dests = [a.dest for a in parser._actions if not a.option_strings] + list(INPUT_DESTS)
    inputs: list[str] = []
    for dest in dests:
        value = getattr(args, dest, None)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                inputs.append(v)
    outputs = [(flags.get(d, d), getattr(args, d, None)) for d in OUTPUT_DESTS if d in flags]
    refuse_overwriting_inputs([(f, o) for f, o in outputs if isinstance(o, str)], inputs)
