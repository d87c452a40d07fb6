"""deteval.core.sorting.lex_order is np.lexsort, permutation for permutation, on keys of every kind."""

from __future__ import annotations

import numpy as np
import pytest

from deteval.core.sorting import dense_ranks, lex_order, member_of, stable_order


def _key(rng: np.random.Generator, kind: int, n: int) -> np.ndarray:
    if kind == 0:
        return rng.integers(-3, 3, n)  # small range, many ties
    if kind == 1:
        return rng.choice([0.0, -0.0, 0.5, 1.0, -2.5, 1e300], n)  # -0.0 ties 0.0
    if kind == 2:
        return rng.integers(-(2**62), 2**62, n)  # wide: ranked
    if kind == 3:
        return np.where(rng.random(n) < 0.1, np.nan, rng.random(n).round(1))  # NaN: np.lexsort's order
    if kind == 4:
        return rng.random(n) < 0.5
    return rng.integers(0, 2**40, n).astype(np.uint64)


@pytest.mark.fast_cases(seed=1)
@pytest.mark.parametrize("seed", range(4))
def test_lex_order_is_lexsort(seed):
    rng = np.random.default_rng(seed)
    for _ in range(500):
        n = int(rng.integers(0, 80))
        keys = [_key(rng, int(rng.integers(0, 6)), n) for _ in range(int(rng.integers(1, 4)))]
        expected = np.lexsort(keys)
        assert np.array_equal(lex_order(keys), expected)
        # `unique` is only a hint: equal keys after all still give np.lexsort's order
        assert np.array_equal(lex_order(keys, unique=True), expected)


def test_lex_order_large_keys_fall_back_and_positions_pack():
    rng = np.random.default_rng(9)
    n = 5000
    keys = [rng.integers(0, n, n), rng.random(n).round(3), rng.integers(0, 2**40, n)]  # > 63 bits packed
    assert np.array_equal(lex_order(keys), np.lexsort(keys))
    pos = rng.permutation(n)  # distinct: no position needed
    keys = [pos, rng.random(n).round(2), rng.integers(0, 50, n)]
    assert np.array_equal(lex_order(keys, unique=True), np.lexsort(keys))


@pytest.mark.parametrize("seed", range(3))
def test_dense_ranks_sort_as_their_key(seed):
    """A key's dense ranks (ties, -0.0 and 0.0 included, share one) put in its place give np.lexsort's order;
    a key with NaN has none."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(300):
        n = int(rng.integers(0, 60))
        kind = int(rng.choice([0, 1, 2, 4, 5]))
        key = _key(rng, kind, n)
        ranks = dense_ranks(key)
        assert ranks is not None and ranks.dtype == np.int64 and ranks.shape == key.shape
        # every pair in the key's order, ties kept
        assert np.array_equal(ranks[:, None] < ranks[None, :], key[:, None] < key[None, :])
        assert np.array_equal(ranks[:, None] == ranks[None, :], key[:, None] == key[None, :])
        other = _key(rng, 0, n)
        assert np.array_equal(lex_order((np.arange(n), ranks, other)), np.lexsort((np.arange(n), key, other)))
    assert dense_ranks(np.array([1.0, np.nan])) is None
    assert dense_ranks(np.array([0.0, -0.0, 1.0])).tolist() == [0, 0, 1]


@pytest.mark.parametrize(
    "key",
    [
        np.array([3, -1, 3, 0, -1, 2**15, -(2**15)]),  # 16-bit range: radix
        np.array([5, 5, 1, 0, 1], dtype=np.uint8),
        np.array([2**16, 0, 7, 2**16, 0]),  # wider: numpy's stable sort of the key
        np.array([2**62, -(2**62), 0, 2**62]),
        np.array([4]),
        np.zeros(0, dtype=np.int64),
    ],
)
def test_stable_order_is_the_stable_argsort(key):
    assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))


def test_stable_order_random_small_ranges():
    rng = np.random.default_rng(3)
    for _ in range(200):
        lo = int(rng.integers(-(2**40), 2**40))
        key = lo + rng.integers(
            0, int(rng.choice([2, 50, 2**16 - 1, 2**16, 2**17])), int(rng.integers(0, 300))
        )
        assert np.array_equal(stable_order(key), np.argsort(key, kind="stable"))


@pytest.mark.parametrize("span", [1, 7, 300, 10**7])  # (the largest: np.isin's path)
def test_member_of_is_isin(span):
    rng = np.random.default_rng(span)
    for n, m in ((0, 0), (0, 3), (5, 0), (200, 40), (1000, 1000)):
        values = rng.integers(0, span, n)
        members = np.unique(rng.integers(0, span, m))
        assert np.array_equal(member_of(values, members, span), np.isin(values, members))
