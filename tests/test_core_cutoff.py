"""deteval.core.cutoff: reciprocal rank and AP@k with its three denominators, on hand-computed cases."""

import numpy as np
import pytest

from deteval.core import average_precision, rank
from deteval.core.cutoff import AP_AT_K_DENOMINATORS, average_precision_at_k, reciprocal_rank
from deteval.errors import ValidationError


def presorted(relevant, n_pos=None):
    return rank(None, relevant, n_pos=n_pos, ties="presorted")


def test_reciprocal_rank():
    r = presorted([0, 0, 1, 0, 1])
    assert reciprocal_rank(r) == 1 / 3
    assert [reciprocal_rank(r, k) for k in (1, 2, 3, 10)] == [0.0, 0.0, 1 / 3, 1 / 3]
    assert reciprocal_rank(presorted([0, 0])) == 0.0
    assert reciprocal_rank(presorted([])) == 0.0


def test_reciprocal_rank_skips_ignored_items():
    # An ignored item takes no rank: the relevant item behind it is at rank 1.
    assert reciprocal_rank(rank([0.9, 0.8], [-1, 1])) == 1.0


def test_ap_at_k_denominators():
    # R N R N, n_pos = 4: P at the relevant ranks within k = 3 is 1 and 2/3.
    r = presorted([1, 0, 1, 0], n_pos=4)
    total = 1 + 2 / 3
    assert average_precision_at_k(r, 3) == pytest.approx(total / 4, abs=1e-15)
    assert average_precision_at_k(r, 3, denominator="min_k_n_pos") == pytest.approx(total / 3, abs=1e-15)
    assert average_precision_at_k(r, 3, denominator="retrieved") == pytest.approx(total / 2, abs=1e-15)
    assert average_precision_at_k(r, 1, denominator="min_k_n_pos") == 1.0


def test_ap_at_k_beyond_the_list_equals_uninterpolated_ap_bit_for_bit():
    rng = np.random.default_rng(7)
    for _ in range(50):
        rel = rng.random(rng.integers(1, 40)) < 0.3
        r = presorted(rel, n_pos=int(rel.sum()) + int(rng.integers(0, 3)))
        assert average_precision_at_k(r, len(r) + 5) == average_precision(r, "uninterpolated")


def test_ap_at_k_zero_denominators():
    assert average_precision_at_k(presorted([0, 0], n_pos=0), 2) == 0.0
    assert average_precision_at_k(presorted([0, 0, 1], n_pos=1), 2, denominator="retrieved") == 0.0
    assert average_precision_at_k(presorted([], n_pos=3), 5, denominator="min_k_n_pos") == 0.0


def test_ap_at_k_rejects_bad_options():
    r = presorted([1, 0])
    with pytest.raises(ValidationError, match="denominator"):
        average_precision_at_k(r, 2, denominator="bogus")
    with pytest.raises(ValidationError, match="cutoff"):
        average_precision_at_k(r, 0)
    with pytest.raises(ValidationError, match="cutoff"):
        reciprocal_rank(r, 1.5)
    assert AP_AT_K_DENOMINATORS == ("n_pos", "min_k_n_pos", "retrieved")
