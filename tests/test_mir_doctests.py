"""The runnable examples in the MIR docstrings are tested (they print seed 001's numbers)."""

import doctest

import pytest

import deteval.mir.boundary
import deteval.mir.pairwise
import deteval.mir.sets


@pytest.mark.parametrize("module", [deteval.mir.sets, deteval.mir.pairwise, deteval.mir.boundary])
def test_docstring_examples(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
