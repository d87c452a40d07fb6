"""``deteval presets``: list the shipped protocol presets, one line each."""

from __future__ import annotations

import argparse
from typing import Any

from deteval.config import list_presets, preset_dir
from deteval.report.progress import note


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    presets = list_presets()
    if not presets:
        # An empty listing would look like a hang or a bug: say where we looked. Not an error (exit 0):
        # explicit ``--config path/to/file.toml`` files still work.
        folder = preset_dir()
        where = f"in {folder}" if folder is not None else "(no preset folder is installed)"
        note(f"deteval: no presets found {where}; pass --config path/to/file.toml to use your own")
        return 0
    width = max(len(n) for n in presets)
    for name, description in presets.items():
        print(f"{name.ljust(width)}  {description}".rstrip())
    return 0


def register(command: Any) -> None:
    command("presets", run)
