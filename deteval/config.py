"""Protocol presets as data: TOML files in the top-level ``configs/`` folder.

``--config voc07`` names a shipped preset, ``--config path/to/file.toml`` a file of your own. A preset is a
flat table of option names as the CLI spells them (``metric = "voc07"``, ``iou = 0.5``); command-line flags
given explicitly override it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from deteval.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python 3.10
    import tomli as tomllib

# Installed (wheel or editable), the presets are the package ``deteval.configs`` (pyproject maps the top-level
# configs/ folder onto it). Imported from a source tree that is not installed (``python -m pytest`` in a clone
# imports ./deteval, which has no ``configs`` subpackage), they are the configs/ folder next to the package.
# The package is asked first: next to an installed package, ``../configs`` is ``site-packages/configs``, which
# belongs to whichever other distribution installs a top-level ``configs``.
_PRESET_PACKAGE = "deteval.configs"
_CHECKOUT_DIR = Path(__file__).resolve().parent.parent / "configs"


def preset_dir() -> Path | None:
    """The folder of the shipped presets: the installed package's, else the checkout's ``configs``; None if
    neither exists."""
    # (the package's folder from its import spec, as importlib.resources.files gives it: that module, with
    # tempfile, would cost every command's start a few milliseconds of import)
    try:
        spec = importlib.util.find_spec(_PRESET_PACKAGE)
    except (ModuleNotFoundError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    path = Path(folders[0]) if folders else None
    if path is not None and path.is_dir():
        return path
    return _CHECKOUT_DIR if _CHECKOUT_DIR.is_dir() else None


def list_presets() -> dict[str, str]:
    """Shipped presets: name → the first comment line of the file (its one-line description)."""
    folder = preset_dir()
    out: dict[str, str] = {}
    if folder is None:
        return out
    for path in sorted(folder.glob("*.toml")):
        # A stray non-UTF-8 byte must not hide every other preset from the listing.
        first = path.read_text(encoding="utf-8", errors="replace").splitlines()[:1]
        out[path.stem] = first[0].lstrip("# ").strip() if first and first[0].startswith("#") else ""
    return out


def resolve_preset(name_or_path: str) -> Path:
    """The file for a preset name (``voc07``) or a path to a TOML file."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists() or path.is_symlink():
        if not path.is_file():  # (also a pipe, a device, a folder or a dangling link: refused unopened)
            raise ConfigError("preset file not found, or not a regular file", file=path)
        return path
    folder = preset_dir()
    if folder is not None and (folder / f"{name_or_path}.toml").is_file():
        return folder / f"{name_or_path}.toml"
    known = ", ".join(list_presets()) or "none"
    raise ConfigError(f"unknown preset {name_or_path!r} (shipped presets: {known})")


def load_preset(name_or_path: str) -> dict[str, Any]:
    """Read a preset into a dict; a TOML syntax error raises :class:`ConfigError` naming the file."""
    path = resolve_preset(name_or_path)
    try:
        data = path.read_bytes()  # (a regular file: resolve_preset refused anything else)
    except OSError as exc:
        raise ConfigError(f"cannot read preset: {exc.strerror or exc}", file=path) from None
    try:
        preset = tomllib.loads(data.decode("utf-8-sig"))  # (a BOM accepted, as by every other reader)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}", file=path) from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise ConfigError("invalid TOML: nested too deeply", file=path) from None
    except UnicodeDecodeError as exc:  # tomllib decodes the whole file as UTF-8 first
        raise ConfigError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=path) from None
    except ValueError as exc:  # an integer beyond Python's 4,300-digit limit
        raise ConfigError(f"invalid TOML: {str(exc).split(';')[0][:120]}", file=path) from None
    for key, value in preset.items():
        _check_bounded(value, path, key)
    return preset


#: The largest integer magnitude a preset value may hold (every option is far below it).
_MAX_PRESET_INT = 2**53


def _check_bounded(value: Any, path: Path, key: str) -> None:
    """Refuse an integer beyond ±2**53 anywhere in a preset value (a float cannot hold it: the checks that
    convert it would overflow), naming the key; lists are walked without recursion."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > _MAX_PRESET_INT:
            digits = len(str(abs(v)))
            raise ConfigError(
                f"an integer of {digits} digits (at most 2**53)", file=path, record=f"key {key!r}"
            )
