"""Pinyin cloaking: abbreviations (同性恋 -> txl) and spelled-out pinyin (黑人 -> heiren / hei人)."""
from __future__ import annotations

from dataclasses import dataclass

from ..edits import Edit
from ..hanzi import is_han
from ..params import Options
from ..pinyin import word_reading
from ..rng import Rng
from .base import Op, register_op

MODES = ("word", "char", "mixed")


def _plain(syllable: str) -> str:
    return syllable.rstrip("012345")


def _han_word(text: str, start: int, end: int) -> bool:
    return all(is_han(ch) for ch in text[start:end])


@register_op
@dataclass
class Abbrev(Op):
    """A word of two or more characters becomes its pinyin initials: 同性恋 -> txl, 智障 -> zz.

    case: ``lower`` or ``upper`` (posters write both: nmsl, NMSL).
    """

    name = "abbrev"
    case: str = "lower"
    _parameter_constraints = {"case": Options("lower", "upper")}

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        return self.edit_span(text, start, end, None)  # one spelling: the initials

    def edit_span(self, text: str, start: int, end: int, rng: Rng | None) -> list[Edit]:
        if end - start < 2 or not _han_word(text, start, end):
            return []
        word = text[start:end]
        initials = "".join(s[0] for s in word_reading(word) if s[0].isalpha())
        if len(initials) != len(word):
            return []
        return [Edit(self.name, start, end, word, initials.upper() if self.case == "upper" else initials)]


@register_op
@dataclass
class Pinyin(Op):
    """Spell a word, or one of its characters, in toneless pinyin: 黑人 -> heiren or hei人.

    mode: ``word`` (whole word), ``char`` (one character), ``mixed`` (either, at random).
    """

    name = "pinyin"
    mode: str = "mixed"
    _parameter_constraints = {"mode": Options(*MODES)}

    def _syllables(self, text: str, start: int, end: int) -> list[str] | None:
        if not _han_word(text, start, end):
            return None
        syllables = [_plain(s) for s in word_reading(text[start:end])]
        return syllables if all(s.isascii() and s.isalpha() for s in syllables) else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """The whole word (modes word and mixed), then each character (modes char and mixed)."""
        syllables, word = self._syllables(text, start, end), text[start:end]
        if syllables is None:
            return []
        whole = [Edit(self.name, start, end, word, "".join(syllables))]
        if len(word) == 1 or self.mode == "word":
            return whole
        chars = [Edit(self.name, start + i, start + i + 1, word[i], s) for i, s in enumerate(syllables)]
        return chars if self.mode == "char" else whole + chars

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        syllables, word = self._syllables(text, start, end), text[start:end]
        if syllables is None:
            return []
        mode = self.mode if self.mode != "mixed" else ("word", "char")[rng.randrange(2)]
        if mode == "word" or len(word) == 1:
            return [Edit(self.name, start, end, word, "".join(syllables))]
        i = rng.randrange(len(word))
        return [Edit(self.name, start + i, start + i + 1, word[i], syllables[i])]
