"""Pinyin cloaking: abbreviations (同性恋 -> txl) and spelled-out pinyin (黑人 -> heiren / hei人), in the
styles posters type them: spaced (hei ren), capitalised (HeiRen, HEIREN), with tones (hēi rén, hei1 ren2)
and with look-alike digits and symbols (la1i, nm$l).

Each style is a parameter; ``mix`` (the default) samples a style per spelling from ``MIX`` below. The
spellings an op can make at a span are few enough to list in full (``candidates``), so the look-alike
swap is one chosen letter or every swappable letter, never some other subset.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import accumulate

from ..edits import Edit
from ..hanzi import is_han
from ..common.params import Interval, Options
from ..pinyin import load_readings, word_reading
from ..rng import Rng
from .base import Op, register_op

MODES = ("word", "char", "mixed")

# How often posters type each style when a parameter is ``mix``: a judgement from reading posts, not a
# measurement. Posters mostly type plain joined lowercase pinyin (heiren, txl); spaced syllables and
# capitals are the usual variations, tone marks and numbers rare. The first style of each is the plain one.
MIX: dict[str, dict[str, dict[str, float]]] = {
    "pinyin": {
        "spacing": {"joined": 0.75, "spaced": 0.25},
        "case": {"lower": 0.75, "capital": 0.1, "upper": 0.15},
        "tones": {"none": 0.9, "numbers": 0.05, "marks": 0.05},
    },
    "abbrev": {
        "case": {"lower": 0.8, "upper": 0.2},
        "spacing": {"joined": 0.85, "spaced": 0.15},
    },
}
# Letters posters swap for a digit or symbol that looks like them (either case).
LOOKALIKES = {"l": "1", "o": "0", "s": "$", "i": "1", "e": "3", "a": "@"}
# Of the spellings that get look-alike swaps, the share that swaps every swappable letter (l@j1); the
# others swap exactly one, chosen uniformly (la1i).
LOOKALIKE_ALL = 0.3

_LOOK = {**LOOKALIKES, **{k.upper(): v for k, v in LOOKALIKES.items()}}
_LOOKALIKE = Interval(float, 0, 1)


def _spelling_styles(spelling: str) -> tuple[str, ...]:
    """``spaced``, ``upper`` or ``capital``: the styles a romanised spelling shows beside plain joined lowercase."""
    case = "upper" if len(spelling) > 1 and spelling.isupper() else "capital" if spelling[:1].isupper() else ""
    return tuple(s for s in ("spaced" if " " in spelling else "", case) if s)


def _plain(syllable: str) -> str:
    return syllable.rstrip("012345")


def _han_word(text: str, start: int, end: int) -> bool:
    return all(is_han(ch) for ch in text[start:end])


def _weights(op: str, param: str, value: str) -> tuple[tuple[str, float], ...]:
    """(style, probability) of a parameter's value: the ``MIX`` table for ``mix``, else just the value."""
    if value != "mix":
        return ((value, 1.0),)
    return tuple((style, w) for style, w in MIX[op][param].items() if w > 0)


@functools.cache
def _table(op: str, param: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    styles = MIX[op][param]
    return tuple(styles), tuple(accumulate(styles.values()))


def _draw(op: str, param: str, value: str, rng: Rng) -> str:
    """The style to use: the value itself unless it is ``mix`` (then one draw from ``MIX``)."""
    if value != "mix":
        return value
    styles, cum = _table(op, param)
    return rng.weighted_choice(styles, cum)


def _swappable(spelling: str) -> list[int]:
    return [i for i, ch in enumerate(spelling) if ch in _LOOK]


def _swap(spelling: str, positions: list[int]) -> str:
    chars = list(spelling)
    for i in positions:
        chars[i] = _LOOK[chars[i]]
    return "".join(chars)


def _lookalike_variants(spelling: str, lookalike: float) -> list[tuple[str, float]]:
    """(spelling, probability) of what the look-alike step makes of ``spelling``: itself, every
    swappable letter swapped, or exactly one swapped."""
    positions = _swappable(spelling)
    if not positions or lookalike <= 0:
        return [(spelling, 1.0)]
    out = [(spelling, 1.0 - lookalike)]
    if len(positions) == 1:
        return [*out, (_swap(spelling, positions), lookalike)]
    out.append((_swap(spelling, positions), lookalike * LOOKALIKE_ALL))
    one = lookalike * (1.0 - LOOKALIKE_ALL) / len(positions)
    return out + [(_swap(spelling, [i]), one) for i in positions]


def _draw_lookalike(spelling: str, lookalike: float, rng: Rng) -> str:
    """``spelling`` with look-alike swaps with probability ``lookalike`` (no draw when it is 0 or 1)."""
    if lookalike <= 0:
        return spelling
    positions = _swappable(spelling)
    if not positions or (lookalike < 1 and rng.random() >= lookalike):
        return spelling
    if len(positions) == 1 or rng.random() < LOOKALIKE_ALL:
        return _swap(spelling, positions)
    return _swap(spelling, [positions[rng.randrange(len(positions))]])


def _ranked(variants) -> tuple[tuple[str, float], ...]:
    """(spelling, probability) pairs merged by spelling, the most probable first (ties keep their order)."""
    probs: dict[str, float] = {}
    for spelling, p in variants:
        if p > 0:
            probs[spelling] = probs.get(spelling, 0.0) + p
    return tuple(sorted(probs.items(), key=lambda item: -item[1]))


# -- pinyin --------------------------------------------------------------------------------------------


@functools.cache
def _marked(tone3: str) -> str:
    from pypinyin.contrib.tone_convert import to_tone

    return to_tone(tone3)


def _toned(tone3: str, tones: str) -> str:
    if tones == "marks":
        return _marked(tone3)
    if tones == "numbers":
        return tone3[:-1] if tone3.endswith("5") else tone3  # the neutral tone has no number
    return _plain(tone3)


def _cased(syllable: str, case: str) -> str:
    if case == "upper":
        return syllable.upper()
    if case == "capital":
        return syllable[:1].upper() + syllable[1:]
    return syllable


def _spell(syllables: tuple[str, ...], spacing: str, case: str, tones: str) -> str:
    return (" " if spacing == "spaced" else "").join(_cased(_toned(s, tones), case) for s in syllables)


@functools.lru_cache(maxsize=50_000)
def _pinyin_spellings(syllables: tuple[str, ...], spacing: str, case: str, tones: str,
                      lookalike: float) -> tuple[tuple[str, float], ...]:
    """Every spelling of ``syllables`` (TONE3) under the styles, with its probability, most probable first."""
    variants = []
    for sp, p_spacing in _weights("pinyin", "spacing", spacing):
        for ca, p_case in _weights("pinyin", "case", case):
            for to, p_tones in _weights("pinyin", "tones", tones):
                p, look = p_spacing * p_case * p_tones, lookalike if to != "numbers" else 0.0
                variants.extend((v, p * q) for v, q in _lookalike_variants(_spell(syllables, sp, ca, to), look))
    return _ranked(variants)


@register_op
@dataclass
class Pinyin(Op):
    """Spell a word, or one of its characters, in pinyin: 黑人 -> heiren, hei人, hei ren, HeiRen, hēi rén.

    mode: ``word`` (whole word), ``char`` (one character), ``mixed`` (either, at random). spacing:
    ``joined`` or ``spaced``; case: ``lower``, ``capital`` (HeiRen) or ``upper``; tones: ``none``,
    ``marks`` (hēi) or ``numbers`` (hei1); each ``mix`` by default (mostly plain joined lowercase).
    lookalike: the probability of look-alike swaps (la1i, l@j1; not with tone numbers).
    """

    name = "pinyin"
    mode: str = "mixed"
    spacing: str = "mix"
    case: str = "mix"
    tones: str = "mix"
    lookalike: float = 0.1
    _parameter_constraints = {"mode": Options(*MODES), "spacing": Options("joined", "spaced", "mix"),
                              "case": Options("lower", "capital", "upper", "mix"),
                              "tones": Options("none", "marks", "numbers", "mix"), "lookalike": _LOOKALIKE}
    examples = (("", "白人"), ("mode=word:spacing=spaced", "白人"), ("mode=word:case=capital", "白人"),
                ("mode=word:case=upper", "白人"), ("mode=word:tones=marks", "白人"),
                ("mode=word:tones=numbers", "白人"), ("mode=word:tones=marks", "女权"),
                ("mode=word:lookalike=1", "垃圾"))
    whole_term = {"mode": "word"}

    @classmethod
    def edit_styles(cls, edit: Edit) -> tuple[str, ...]:
        """``whole word`` or ``one character`` (of a longer word), and the spacing, case and tone marks the
        spelling shows (tone numbers are not told from look-alike digits)."""
        return (("whole word" if len(edit.src) > 1 else "one character"), *_spelling_styles(edit.dst),
                *(("tone marks",) if any(ch.isalpha() and not ch.isascii() for ch in edit.dst) else ()))

    def prepare(self) -> None:
        load_readings()

    def _syllables(self, text: str, start: int, end: int) -> tuple[str, ...] | None:
        """The TONE3 reading of the span, if it is all Han characters spelled in plain letters."""
        if not _han_word(text, start, end):
            return None
        syllables = word_reading(text[start:end])
        return syllables if all(_plain(s).isascii() and _plain(s).isalpha() for s in syllables) else None

    def _spellings(self, syllables: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
        return _pinyin_spellings(syllables, self.spacing, self.case, self.tones, self.lookalike)

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """The word's and (modes char and mixed) each character's spellings, the most probable first."""
        syllables, word = self._syllables(text, start, end), text[start:end]
        if syllables is None:
            return []
        whole_share = 1.0 if len(word) == 1 or self.mode == "word" else 0.0 if self.mode == "char" else 0.5
        options = [(Edit(self.name, start, end, word, dst), whole_share * p)
                   for dst, p in self._spellings(syllables)] if whole_share else []
        if whole_share < 1:
            share = (1.0 - whole_share) / len(word)
            for i, s in enumerate(syllables):
                options.extend((Edit(self.name, start + i, start + i + 1, word[i], dst), share * p)
                               for dst, p in self._spellings((s,)))
        return [e for e, _ in sorted(options, key=lambda option: -option[1])]

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        syllables, word = self._syllables(text, start, end), text[start:end]
        if syllables is None:
            return []
        mode = self.mode if self.mode != "mixed" else ("word", "char")[rng.randrange(2)]
        if mode == "word" or len(word) == 1:
            return [Edit(self.name, start, end, word, self._draw(syllables, rng))]
        i = rng.randrange(len(word))
        return [Edit(self.name, start + i, start + i + 1, word[i], self._draw(syllables[i:i + 1], rng))]

    def _draw(self, syllables: tuple[str, ...], rng: Rng) -> str:
        """One spelling: a style per ``mix`` parameter (spacing only for two syllables or more)."""
        spacing = _draw("pinyin", "spacing", self.spacing, rng) if len(syllables) > 1 else "joined"
        case = _draw("pinyin", "case", self.case, rng)
        tones = _draw("pinyin", "tones", self.tones, rng)
        look = self.lookalike if tones != "numbers" else 0.0  # a digit next to tone numbers reads as a tone
        return _draw_lookalike(_spell(syllables, spacing, case, tones), look, rng)


# -- abbreviations ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=50_000)
def _abbrev_spellings(initials: str, case: str, spacing: str, lookalike: float) -> tuple[tuple[str, float], ...]:
    variants = []
    for ca, p_case in _weights("abbrev", "case", case):
        for sp, p_spacing in _weights("abbrev", "spacing", spacing):
            spelling = _abbrev_spell(initials, ca, sp)
            variants.extend((v, p_case * p_spacing * q) for v, q in _lookalike_variants(spelling, lookalike))
    return _ranked(variants)


def _abbrev_spell(initials: str, case: str, spacing: str) -> str:
    letters = initials.upper() if case == "upper" else initials
    return " ".join(letters) if spacing == "spaced" else letters


@register_op
@dataclass
class Abbrev(Op):
    """A word of two or more characters becomes its pinyin initials: 同性恋 -> txl, TXL, t x l, tx1.

    case: ``lower`` or ``upper`` (nmsl, NMSL); spacing: ``joined`` or ``spaced`` (n m s l); each ``mix``
    by default (mostly joined lowercase). lookalike: the probability of look-alike swaps (nm$l).
    """

    name = "abbrev"
    case: str = "mix"
    spacing: str = "mix"
    lookalike: float = 0.1
    _parameter_constraints = {"case": Options("lower", "upper", "mix"), "spacing": Options("joined", "spaced", "mix"),
                              "lookalike": _LOOKALIKE}
    examples = (("", "同性恋"), ("case=upper", "同性恋"), ("spacing=spaced", "同性恋"), ("lookalike=1", "同性恋"),
                ("lookalike=1", "尼玛死了"))

    @classmethod
    def edit_styles(cls, edit: Edit) -> tuple[str, ...]:
        """The spacing and case the initials show."""
        return _spelling_styles(edit.dst)

    def prepare(self) -> None:
        load_readings()

    def _initials(self, text: str, start: int, end: int) -> str | None:
        if end - start < 2 or not _han_word(text, start, end):
            return None
        word = text[start:end]
        initials = "".join(s[0] for s in word_reading(word) if s[0].isalpha())
        return initials if len(initials) == len(word) else None

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """The initials in every style the parameters allow, the most probable first."""
        initials, word = self._initials(text, start, end), text[start:end]
        if initials is None:
            return []
        return [Edit(self.name, start, end, word, dst)
                for dst, _ in _abbrev_spellings(initials, self.case, self.spacing, self.lookalike)]

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        initials, word = self._initials(text, start, end), text[start:end]
        if initials is None:
            return []
        case = _draw("abbrev", "case", self.case, rng)
        spacing = _draw("abbrev", "spacing", self.spacing, rng)
        dst = _draw_lookalike(_abbrev_spell(initials, case, spacing), self.lookalike, rng)
        return [Edit(self.name, start, end, word, dst)]
