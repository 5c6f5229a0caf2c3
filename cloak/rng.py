"""A small, fast, seedable random number generator keyed by integers.

Every record gets its own generator, derived from (seed, record key, variant), so that output does not
depend on worker count, shard or order. ``random.Random`` costs about 7 us just to seed, more than the
whole homophone op on a typical post; SplitMix64 seeds for free and is plenty for choosing substitutes.
"""
from __future__ import annotations

import zlib
from bisect import bisect_right
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def text_key(text: str) -> int:
    """A stable integer key for a text (not Python's salted ``hash``)."""
    data = text.encode("utf-8", "surrogatepass")
    return zlib.crc32(data) | (zlib.adler32(data) << 32)


class Rng:
    """SplitMix64 with the parts of the ``random.Random`` interface that ops need."""

    __slots__ = ("_state",)

    def __init__(self, seed: int, key: int = 0, variant: int = 0) -> None:
        # One mix of an odd-multiplier combination: distinct (seed, key, variant) give distinct states
        # (up to 64-bit wrap-around), and _next mixes again before any number leaves.
        self._state = _mix((seed * 0xD1B54A32D192ED03 + key * _GOLDEN + variant * 0xF1357AEA2E62A9C5)
                           & _MASK)

    def _next(self) -> int:
        self._state = (self._state + _GOLDEN) & _MASK
        return _mix(self._state)

    def random(self) -> float:
        """A float in [0, 1)."""
        self._state = z = (self._state + _GOLDEN) & _MASK  # _next, inlined: the hottest call
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return ((z ^ (z >> 31)) >> 11) * (1.0 / 9007199254740992.0)

    def randrange(self, n: int) -> int:
        """An int in [0, n)."""
        if n <= 0:
            raise ValueError("randrange needs n > 0")
        return self._next() % n

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self._next() % len(seq)]

    def weighted_choice(self, seq: Sequence[T], cum_weights: Sequence[float]) -> T:
        """One item of ``seq``, with probability proportional to its weight (given cumulatively)."""
        return seq[bisect_right(cum_weights, self.random() * cum_weights[-1])]

    def shuffle(self, items: list) -> None:
        for i in range(len(items) - 1, 0, -1):
            j = self._next() % (i + 1)
            items[i], items[j] = items[j], items[i]
