"""The trec_eval releases deteval reproduces, and the rules that differ between them.

* ``"9.0.8"`` (default; pytrec_eval wraps it): run scores are C ``float``; recall levels become ranks as
  ``(long)(p * R + 0.9)``.
* ``"10.0"``: scores are ``double``; recall levels become ranks as ``lround(p * R)`` (m_iprec_at_recall.c,
  m_11pt_avg.c: "In v9 and prior, this was done by adding 0.9 and casting to an integral type").

docs/trec.md lists every difference side by side.
"""

from __future__ import annotations

import numpy as np

from deteval.errors import ConfigError

VERSIONS = ("9.0.8", "10.0")
DEFAULT_VERSION = "9.0.8"


def check_version(version: str) -> None:
    """Refuse a trec_eval version deteval does not reproduce."""
    if version not in VERSIONS:
        raise ConfigError(f"trec_eval version must be one of {', '.join(VERSIONS)}; got {version!r}")


RECALL_LEVELS = ("double", "float32")
DEFAULT_RECALL_LEVELS = "double"


def recall_cutoff(
    level: float, num_rel: np.ndarray, version: str = DEFAULT_VERSION, levels: str = DEFAULT_RECALL_LEVELS
) -> np.ndarray:
    """The number of relevant documents that recall ``level`` stands for, per topic (iprec_at_recall,
    11pt_avg).

    ``levels="double"`` (default, the sources in the store): ``(long)(level*R + 0.9)`` in 9.0.8,
    ``lround(level*R)`` (halves away from zero) in 10.0, in doubles. ``levels="float32"``: the binaries
    that printed trec_eval's ``test/out.test.a`` (commit 042671c), an older ``out.test`` (33dfa6d) and
    ``out.test.aqc`` (2a246ab) held the level in a C ``float``: ``(long)(levelf * R + 0.9)``, the product
    in float (C converts the long R to float), then + 0.9 in double; p = 0.3, R = 77 gives 24 (23.1000004),
    not 23. That rule does not depend on ``version``."""
    if levels == "float32":
        x = (np.float32(level) * num_rel.astype(np.float32)).astype(np.float64)
        return (x + 0.9).astype(np.int64)
    x = level * num_rel.astype(np.float64)
    if version == "10.0":
        f = np.floor(x)
        return (f + (x - f >= 0.5)).astype(np.int64)  # x - f is exact: no double rounding near .5
    return (x + 0.9).astype(np.int64)


# The measure-set nicknames of measures.c (te_trec_measure_nicknames), per version. 10.0 added unj, rbp and
# rbp_resid to all_trec; 9.0.8's list is the same without them (pytrec_eval, built on 9.0.x, knows none of
# the three). Names deteval does not compute are left out of a requested set and listed in docs/trec.md.
OFFICIAL: tuple[str, ...] = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
)
OFFICIAL += ("recip_rank", "iprec_at_recall", "P")
_ALL_TREC_10 = OFFICIAL + (
    "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility", "11pt_avg", "ndcg",
    "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P",
    "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
)  # fmt: skip
ALL_TREC: dict[str, tuple[str, ...]] = {
    "9.0.8": tuple(n for n in _ALL_TREC_10 if n not in ("unj", "rbp", "rbp_resid")),
    "10.0": _ALL_TREC_10,
}
SET: tuple[str, ...] = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "utility",
    "set_P",
    "set_recall",
)
SET += ("set_relative_P", "set_map", "set_F")
QRELS_JG: tuple[str, ...] = ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg")
