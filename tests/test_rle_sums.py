"""The decoder's per-string totals and areas (sums of all runs, of the odd runs) on random batches where strings
of one or a few values, and empty ones, start at even and odd positions of the batch."""

import numpy as np
from test_rle import encode

from deteval.io import rle


def test_totals_and_areas_of_random_batches():
    rng = np.random.default_rng(11)
    for _ in range(200):
        runs_per = []
        for _ in range(int(rng.integers(1, 12))):
            n = int(rng.choice([0, 1, 1, 2, 3, int(rng.integers(4, 30))]))
            runs_per.append(rng.integers(0, [4, 60, 3000][int(rng.integers(0, 3))], n).tolist())
        strings = [encode(r) for r in runs_per]
        lengths = np.array([len(s) for s in strings], dtype=np.int64)
        d = rle._decode(np.frombuffer(b"".join(strings), dtype=np.uint8), lengths)
        assert d.n_runs.tolist() == [len(r) for r in runs_per]
        assert d.runs.tolist() == [v for r in runs_per for v in r]
        assert d.total.tolist() == [sum(r) for r in runs_per]
        assert d.area.tolist() == [sum(r[1::2]) for r in runs_per]
        assert d.errors == [None if r else "RLE counts string is empty (no run at all)" for r in runs_per]
