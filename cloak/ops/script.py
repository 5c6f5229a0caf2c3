"""Other scripts of the same characters: traditional (说 -> 說) and variant forms (说 -> 説).

OpenCC does the conversion: ``traditional`` is OpenCC's standard s2t (phrase-aware, so 后来 -> 後來
but 皇后 stays); ``variant`` picks a form that the Hong Kong, Taiwan or Japanese standard writes and
the standard traditional form does not (说 -> 説, 为 -> 為), the look-alikes posters paste in.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ..edits import Edit
from ..hanzi import is_han
from ..rng import Rng
from .base import SHARE, Op, register_op


@functools.cache
def _converter(config: str):
    import opencc

    return opencc.OpenCC(f"{config}.json")


def to_traditional(text: str) -> str:
    return _converter("s2t").convert(text)


@functools.lru_cache(maxsize=50_000)
def variant_forms(ch: str) -> tuple[str, ...]:
    """Non-standard forms of a character: HK / TW / JP forms other than itself and its s2t form."""
    if not is_han(ch):
        return ()
    traditional = to_traditional(ch)
    forms = (_converter("s2hk").convert(ch), _converter("s2tw").convert(ch),
             _converter("t2jp").convert(traditional))
    return tuple(f for f in dict.fromkeys(forms) if len(f) == 1 and f not in (ch, traditional))


@register_op
@dataclass
class Traditional(Op):
    """Write a word in traditional characters."""

    name = "traditional"

    def prepare(self) -> None:
        _converter("s2t")

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.edit_span(text, start, end, None)  # one conversion: each changed character a candidate

    def edit_span(self, text: str, start: int, end: int, rng: Rng | None) -> list[Edit]:
        word = text[start:end]
        new = to_traditional(word)
        if new == word:
            return []
        if len(new) != len(word):
            return [Edit(self.name, start, end, word, new)]
        return [Edit(self.name, start + i, start + i + 1, a, b)
                for i, (a, b) in enumerate(zip(word, new)) if a != b]


@register_op
@dataclass
class Variant(Op):
    """Swap characters for variant forms. share: share of a word's characters swapped (at least one)."""

    name = "variant"
    share: float = 0.5
    whole_term = {"share": 1.0}
    _parameter_constraints = {"share": SHARE}

    def prepare(self) -> None:
        for config in ("s2t", "s2hk", "s2tw", "t2jp"):
            _converter(config)

    @staticmethod
    def _options(text: str):
        return lambda i: (variant_forms(text[i]), None) if variant_forms(text[i]) else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.char_candidates(text, self.found_chars(text, start, end, self._options(text)))

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        return self.replace_chars(text, start, end, rng, self._options(text), self.share)
