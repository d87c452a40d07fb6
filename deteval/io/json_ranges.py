"""The top-level elements of a JSON array file, found without parsing it: byte ranges for reading in parallel.

A results file of millions of records is split into ranges of whole elements, each parsed on its own (a
distributed task reads only its range). The split points are the commas between the array's elements,
found by a streaming scan in numpy, one chunk at a time (memory: a few arrays of one chunk): a quote
preceded by an odd run of backslashes is escaped; a byte between an odd number of real quotes is inside a
string; ``[``/``{`` and ``]``/``}`` outside strings change the depth; a comma at depth 1 separates two
elements. The state (inside a string, the trailing backslash run, the depth) carries over chunk borders, so a
border inside a string or between a backslash and what it escapes changes nothing.

The scan does not validate JSON: a range is valid when it parses as a list of exactly the elements the scan
counted, and then the whole file is (its ranges joined with the commas, inside the brackets). Anything the
scan cannot read as one array (not starting with ``[``, unbalanced, text after the closing bracket) gives
None: the caller then reads the whole file with the ordinary loader, which names the fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike

import numpy as np

__all__ = ["SCAN_BYTES", "ArrayRanges", "scan_json_array"]

#: Bytes read per step of the scan.
SCAN_BYTES = 1 << 20

_WS = np.zeros(256, dtype=bool)
_WS[[0x20, 0x09, 0x0A, 0x0D]] = True
_QUOTE, _BACKSLASH, _COMMA = 0x22, 0x5C, 0x2C
_DELTA = np.zeros(256, dtype=np.int64)  # depth change of a structural byte outside strings
_DELTA[[ord("["), ord("{")]] = 1
_DELTA[[ord("]"), ord("}")]] = -1
_STRUCT = _DELTA != 0
_STRUCT[_COMMA] = True


@dataclass(frozen=True)
class ArrayRanges:
    """Ranges of whole elements of a JSON array: range k is bytes ``[starts[k], ends[k])`` of the file and
    holds elements ``first[k]`` to ``first[k] + counts[k] - 1``. ``counts[0]`` is -1 when the array holds no
    comma (then 0 or 1 elements, which only parsing tells). ``head``: the byte range of element 0."""

    starts: np.ndarray
    ends: np.ndarray
    first: np.ndarray
    counts: np.ndarray
    head: tuple[int, int]

    def __len__(self) -> int:
        return int(self.starts.shape[0])


class _State:
    def __init__(self) -> None:
        self.in_string = False
        self.backslashes = 0  # backslashes at the end of the bytes seen so far
        self.depth = 1
        self.closed = -1  # offset of the closing bracket


def _scan_chunk(c: np.ndarray, off: int, st: _State) -> np.ndarray:
    """Advance the state over chunk ``c`` (at file offset ``off``); returns the offsets of the element
    separators in it. Raises ValueError where the array is not one JSON array."""
    if st.closed >= 0:
        if not _WS[c].all():
            raise ValueError("text after the array")
        return np.zeros(0, dtype=np.int64)
    is_bs = c == _BACKSLASH
    quotes = np.flatnonzero(c == _QUOTE)
    if quotes.size and (st.backslashes or is_bs.any()):
        idx = np.arange(c.shape[0], dtype=np.int64)
        # position of the last byte that is not a backslash, at or before each byte (carried run: before 0)
        last = np.maximum.accumulate(np.where(is_bs, -1 - st.backslashes, idx))
        before = quotes - 1
        run = np.where(quotes > 0, before - last[np.maximum(before, 0)], st.backslashes)
        quotes = quotes[run % 2 == 0]
    if c.shape[0] and is_bs[-1]:
        other = np.flatnonzero(~is_bs)
        st.backslashes = c.shape[0] - 1 - int(other[-1]) if other.size else st.backslashes + c.shape[0]
    else:
        st.backslashes = 0
    pos = np.flatnonzero(_STRUCT[c])
    # (outside strings: after an even number of real quotes, odd if the chunk began inside one)
    outside = np.searchsorted(quotes, pos) % 2 == int(st.in_string)
    st.in_string ^= bool(quotes.size % 2)
    pos = pos[outside]
    delta = _DELTA[c[pos]]
    after = st.depth + np.cumsum(delta)
    zero = np.flatnonzero(after == 0)
    seps = pos[(delta == 0) & (after == 1)]
    if zero.size:
        j = int(zero[0])
        if c[pos[j]] != ord("]") or not _WS[c[pos[j] + 1 :]].all():
            raise ValueError("not one JSON array")
        st.closed = off + int(pos[j])
        seps = seps[seps < pos[j]]
    elif after.size:
        st.depth = int(after[-1])
    return off + seps


def scan_json_array(
    path: str | PathLike[str], range_bytes: int, chunk_bytes: int = SCAN_BYTES
) -> ArrayRanges | None:
    """Split the JSON array in ``path`` into ranges of whole elements of about ``range_bytes`` each (a range
    ends at the first separator ``range_bytes`` or more past its start), reading ``chunk_bytes`` at a time.
    None when the file is not readable as one JSON array (see the module docstring)."""
    st = _State()
    cuts: list[int] = []
    cut_first: list[int] = []
    n_sep = 0
    first_sep = -1
    try:
        with open(path, "rb") as fh:
            off = 3 if fh.read(3) == b"\xef\xbb\xbf" else 0
            fh.seek(off)
            opened = -1
            while opened < 0:  # whitespace, then the opening bracket
                buf = fh.read(chunk_bytes)
                if not buf:
                    return None
                c = np.frombuffer(buf, dtype=np.uint8)
                text = np.flatnonzero(~_WS[c])
                if text.size:
                    if c[text[0]] != ord("["):
                        return None
                    opened = off + int(text[0])
                    rest, at = c[int(text[0]) + 1 :], opened + 1
                else:
                    off += len(buf)
            next_cut = opened + 1 + range_bytes
            while True:
                seps = _scan_chunk(rest, at, st)
                if seps.size:
                    if first_sep < 0:
                        first_sep = int(seps[0])
                    while True:
                        k = int(np.searchsorted(seps, next_cut))
                        if k >= seps.shape[0]:
                            break
                        cuts.append(int(seps[k]))
                        cut_first.append(n_sep + k + 1)
                        next_cut = int(seps[k]) + 1 + range_bytes
                    n_sep += int(seps.shape[0])
                at += rest.shape[0]
                buf = fh.read(chunk_bytes)
                if not buf:
                    break
                rest = np.frombuffer(buf, dtype=np.uint8)
    except (OSError, ValueError):
        return None
    if st.closed < 0:
        return None
    starts = np.array([opened + 1] + [c + 1 for c in cuts], dtype=np.int64)
    ends = np.array(cuts + [st.closed], dtype=np.int64)
    first = np.array([0] + cut_first, dtype=np.int64)
    counts = np.diff(np.append(first, n_sep + 1))
    if n_sep == 0:
        counts[0] = -1
    return ArrayRanges(
        starts=starts,
        ends=ends,
        first=first,
        counts=counts,
        head=(opened + 1, first_sep if first_sep >= 0 else st.closed),
    )
