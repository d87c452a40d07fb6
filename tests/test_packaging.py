"""pyproject.toml lists every package of the tree, and maps deteval.configs onto the top-level configs/."""

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as fh:
        return tomllib.load(fh)


def test_every_package_in_the_tree_is_listed():
    # A subpackage missing from the explicit list would be silently left out of the wheel.
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "deteval").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    on_disk.add("deteval.configs")
    assert set(_pyproject()["tool"]["setuptools"]["packages"]) == on_disk


def test_presets_folder_is_mapped_and_is_a_package():
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"deteval.configs": "configs"}
    assert setuptools["package-data"]["deteval.configs"] == ["*.toml"]
    # Without it the installed folder is a namespace package and list_presets() finds nothing.
    assert (ROOT / "configs" / "__init__.py").is_file()


def test_py_typed_marker_is_shipped():
    # PEP 561: without the marker in the wheel, users' type checkers ignore deteval's annotations.
    assert (ROOT / "deteval" / "py.typed").is_file()
    assert _pyproject()["tool"]["setuptools"]["package-data"]["deteval"] == ["py.typed"]
