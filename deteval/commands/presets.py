"""``deteval presets``: list the shipped protocol presets, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.config import list_presets


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    presets = list_presets()
    width = max((len(n) for n in presets), default=0)
    for name, description in presets.items():
        print(f"{name.ljust(width)}  {description}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("presets", help="list the shipped protocol presets")
    p.set_defaults(func=run, _parser=p)
