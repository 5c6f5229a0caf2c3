"""Typographic cloaking: swapped characters, inserted symbols, zero-width characters, full-width forms.

Trivial to write, but posters use every one of them (黑*人, 黑\u200b人, ｎｍｓｌ), and a detector that
tokenises naively falls for them.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..edits import Edit
from ..common.params import Satisfies
from ..rng import Rng
from .base import SHARE, Op, register_op

ZERO_WIDTH = "\u200b\u200c\u200d\u2060"


@register_op
@dataclass
class Shuffle(Op):
    """Swap two neighbouring characters of a word: 歧视 -> 视歧."""

    name = "shuffle"

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return [Edit(self.name, i, i + 2, text[i:i + 2], text[i + 1] + text[i])
                for i in range(start, end - 1) if text[i] != text[i + 1]]

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        swaps = self.candidates(text, start, end)
        return [rng.choice(swaps)] if swaps else []


@register_op
@dataclass
class Noise(Op):
    """Insert symbols between the characters of a word: 黑人 -> 黑*人.

    symbols: the symbols to draw from; share: share of the gaps that get one (at least one gap).
    """

    name = "noise"
    symbols: str = "*.·-_|/~"
    share: float = 0.5
    whole_term = {"share": 1.0}
    _parameter_constraints = {"symbols": Satisfies(lambda s: isinstance(s, str) and s != "", "a non-empty string"),
                              "share": SHARE}

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """Each symbol in each gap: the first symbol in every gap, then the second, ..."""
        return [Edit(self.name, g, g, "", s) for s in dict.fromkeys(self.symbols) for g in range(start + 1, end)]

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        gaps = list(range(start + 1, end))
        if not gaps:
            return []
        chosen = [g for g in gaps if rng.random() < self.share] or [rng.choice(gaps)]
        return [Edit(self.name, g, g, "", rng.choice(self.symbols)) for g in chosen]


@register_op
@dataclass
class ZeroWidth(Noise):
    """Insert invisible zero-width characters between the characters of a word."""

    name = "zerowidth"
    symbols: str = ZERO_WIDTH
    share: float = 1.0


def to_fullwidth(ch: str) -> str | None:
    if ch == " ":
        return "\u3000"
    if "!" <= ch <= "~":
        return chr(ord(ch) + 0xFEE0)
    return None


@register_op
@dataclass
class FullWidth(Op):
    """Write ASCII letters, digits and symbols in their full-width forms: nmsl -> ｎｍｓｌ.

    Only spans with ASCII in them change; Chinese words are left to the next op.
    """

    name = "fullwidth"

    @staticmethod
    def _options(text: str):
        return lambda i: ((to_fullwidth(text[i]),), None) if to_fullwidth(text[i]) else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), 1.0)
