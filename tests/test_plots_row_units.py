"""Bar charts name their rows as the tables do: tracks for a multi-track MIR run, classes for detection."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from deteval.mir import evaluate_mir_tracks
from deteval.report.plots import _bars

MIREX = Path(__file__).resolve().parent.parent / "data_samples" / "mir" / "mirex"


def test_mir_track_bars_say_tracks() -> None:
    import matplotlib

    matplotlib.use("Agg")
    result = evaluate_mir_tracks(MIREX / "ref", MIREX / "est")
    fig = _bars(result, "boundary.0.5.f")
    ax = fig.axes[0]
    values = [row["boundary.0.5.f"] for row in result.per_class.values()]
    assert ax.get_title() == "mir: per-track boundary.0.5.f"
    assert ax.get_legend().get_texts()[0].get_text() == f"mean {sum(values) / len(values):.3f} over 10 tracks"
