"""Token arrays as compact BLOBs: packed little-endian int32 ids and float32 logprobs.

Invariants: a BLOB of ids is exactly 4 bytes per id, a BLOB of logprobs exactly 4 bytes per
value, both little-endian whatever the host's byte order, so a database copied between
machines reads back the same. The in-memory form is `array.array` ('i' ids, 'f' logprobs):
slicing, comparing and concatenating them runs in C, which keeps prefix sharing cheap.
float32 keeps logprobs to about 7 significant digits, well past what a ratio of
probabilities in a policy-gradient loss needs; values that come back are float32-rounded.
"""

import sys
from array import array
from collections.abc import Sequence

IDS = "i"
FLOATS = "f"
_SWAP = sys.byteorder != "little"

if array(IDS).itemsize != 4 or array(FLOATS).itemsize != 4:  # pragma: no cover - exotic platforms
    raise ImportError("memory.token_arrays needs 4-byte C int and float")


def ids(values: Sequence[int]) -> array:
    """The ids as an int32 array (raises OverflowError for an id outside int32)."""
    return values if isinstance(values, array) and values.typecode == IDS else array(IDS, values)


def floats(values: Sequence[float]) -> array:
    return values if isinstance(values, array) and values.typecode == FLOATS else array(FLOATS, values)


def pack(values: array) -> bytes:
    if not _SWAP:
        return values.tobytes()
    swapped = array(values.typecode, values)  # pragma: no cover - big-endian hosts
    swapped.byteswap()  # pragma: no cover
    return swapped.tobytes()  # pragma: no cover


def unpack(blob: bytes, typecode: str) -> array:
    values = array(typecode)
    values.frombytes(blob)
    if _SWAP:  # pragma: no cover - big-endian hosts
        values.byteswap()
    return values


def common_prefix(a: array | list[int], b: array | list[int]) -> int:
    """How many leading items `a` and `b` (two arrays or two lists) share (binary search over
    C-speed slice compares)."""
    shorter = min(len(a), len(b))
    if a[:shorter] == b[:shorter]:
        return shorter
    low, high = 0, shorter - 1
    while low < high:  # invariant: the answer lies in [low, high]
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_prefix_of(sequences: Sequence[array] | Sequence[list[int]]) -> int:
    """How many leading items all of `sequences` (all arrays, or all lists) share; 0 for none.
    Sorted, a set of sequences shares what its first and last share: two compares, not n."""
    if not sequences:
        return 0
    return common_prefix(min(sequences), max(sequences))
