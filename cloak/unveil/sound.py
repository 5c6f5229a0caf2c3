"""What a text sounds like, to ``cloak unveil``: Han characters, pinyin and initials on one scale.

A syllable's *class* merges what posters and input methods confuse: zh/z, ch/c, sh/s, n/l, h/f (southern
speech: 湖北 hu bei heard as fu bei, 黑人 as 非人), -ng/-n (an/ang, en/eng, in/ing, so ian/iang and
uan/uang too) and the near finals ei/ai (黑 hei -> 嗨 hai). A
class is one code point of the private use area, so a text becomes a string of classes, one a character
(its main reading, as the homophone op reads the characters it writes), which one Aho-Corasick automaton
over the terms' classes searches in one pass. A term's classes are taken on every reading of its
characters (polyphones joined on each: 黑乐色 is heard as hei le se and hei yue se ...).

Pinyin written out (heiren, hei ren, HeiRen, hēi rén, hei1 ren2, la1i) is read into syllables by
:func:`read_pinyin` and keyed on the same classes, so a word half in pinyin (hei人) is heard like one in
characters; initials (txl, t x l, TX1) by :func:`read_initials`.
"""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Mapping

from ..common.cache import disk_cached
from ..hanzi import cjk_chars
from ..pinyin import char_readings, word_reading

CLASS_BASE = 0xE000  # the private use area: no text character is mistaken for a class
NO_SOUND = "\x00"  # what a character without a reading becomes in a text's key
MAX_READINGS = 64  # reading combinations of one term, at most (a term of four polyphones has 16 or so)
MIN_PHRASES = 3  # a character's other reading counts where this many phrases read it so

_FUZZY_INITIALS = (("zh", "z"), ("ch", "c"), ("sh", "s"))
_NG = re.compile(r"(an|en|in)g$")
# Look-alike digits and symbols posters type for letters (the pinyin ops' LOOKALIKES, read back); 1 is l or i
LOOKALIKE_LETTERS = {"1": "li", "0": "o", "3": "e", "$": "s", "@": "a"}
TONE_DIGITS = "12345"
_U_DIAERESIS = str.maketrans({c: "v" for c in "üǖǘǚǜÜǕǗǙǛ"})
# A run of romanised text: letters (tone marks too), look-alike digits and symbols, single spaces between parts
LATIN_RUN = re.compile(r"[A-Za-z\u00c0-\u024f$@0-9]+(?: [A-Za-z\u00c0-\u024f$@0-9]+)*")
_HAS_LETTER = re.compile(r"[A-Za-z\u00c0-\u024f]")


def plain(tone3: str) -> str:
    """A TONE3 syllable without its tone: ``hei1`` -> ``hei``."""
    return tone3.rstrip("012345")


@functools.lru_cache(maxsize=4096)
def syllable_class(syllable: str) -> str:
    """The class name of a toneless syllable: ``shei`` -> ``sai``, ``nian`` -> ``lian``, ``ying`` -> ``yin``."""
    s = syllable
    for long, short in _FUZZY_INITIALS:
        if s.startswith(long):
            s = short + s[2:]
            break
    else:
        if s.startswith("n") and s not in ("n", "ng"):
            s = "l" + s[1:]
        elif s.startswith("h") and s not in ("hm", "hng"):
            s = "f" + s[1:]
    s = _NG.sub(r"\1", s)
    return s[:-2] + "ai" if s.endswith("ei") else s


@disk_cached
def syllables() -> tuple[str, ...]:
    """Every toneless syllable pypinyin reads a character as, spelled in plain letters (``v`` for ü)."""
    found = {plain(r) for ch in cjk_chars() for r in char_readings(ch)}
    return tuple(sorted(s for s in found if s.isascii() and s.isalpha()))


@functools.cache
def class_symbols() -> dict[str, str]:
    """Class name -> its code point, assigned in sorted order (the same in every process)."""
    names = sorted({syllable_class(s) for s in syllables()})
    return {name: chr(CLASS_BASE + k) for k, name in enumerate(names)}


def symbol(syllable: str) -> str:
    """The class code point of a toneless syllable (NO_SOUND for one outside the inventory)."""
    return class_symbols().get(syllable_class(syllable), NO_SOUND)


@disk_cached
def main_syllables() -> dict[str, str]:
    """Character -> its main toneless syllable, for every CJK ideograph pypinyin reads."""
    return {ch: plain(r[0]) for ch in cjk_chars() if (r := char_readings(ch)) and plain(r[0]).isalpha()}


@functools.cache
def key_table() -> dict[int, str]:
    """``str.translate`` table keying a text: each read character to its class, private-use code points to
    NO_SOUND (so no text character passes for a class); every other character stays itself, which no
    term's key holds."""
    table: dict[int, str] = {c: NO_SOUND for c in range(CLASS_BASE, CLASS_BASE + 0x1900)}
    table.update({ord(ch): symbol(s) for ch, s in main_syllables().items()})
    return table


@disk_cached
def phrase_readings() -> dict[str, dict[str, int]]:
    """Character -> {toneless reading: the phrases of pypinyin's phrase dictionary that read it so}."""
    from pypinyin.constants import PHRASES_DICT

    found: dict[str, dict[str, int]] = {}
    for phrase, syllables in PHRASES_DICT.items():
        if len(syllables) == len(phrase):
            for ch, options in zip(phrase, syllables):
                reading = plain(_tone3(options[0]))
                found.setdefault(ch, {})[reading] = found.get(ch, {}).get(reading, 0) + 1
    return found


@functools.cache
def _tone3(marked: str) -> str:
    from pypinyin.contrib.tone_convert import to_tone3

    return to_tone3(marked)


@functools.lru_cache(maxsize=50_000)
def readings(ch: str) -> tuple[str, ...]:
    """The toneless readings of a character in use, the main one first: the others pypinyin lists only
    where its phrase dictionary reads a few words so (受 is listed as dao too, and 到 is everywhere)."""
    listed = [plain(r) for r in char_readings(ch)]
    used = phrase_readings().get(ch, {})
    return tuple(dict.fromkeys(r for k, r in enumerate(listed) if k == 0 or used.get(r, 0) >= MIN_PHRASES))


def term_readings(term: str) -> list[tuple[str, ...]]:
    """The toneless readings of a term of Han characters: its reading in context first, then every
    combination of its characters' readings in use (at most MAX_READINGS); [] if a character has none."""
    options = [readings(ch) for ch in term]
    if not all(options):
        return []
    first = tuple(plain(s) for s in word_reading(term))
    combos = itertools.islice(itertools.product(*options), MAX_READINGS)
    return list(dict.fromkeys([first, *combos]))


def key(reading: Iterable[str]) -> str:
    """The class string of a reading (toneless syllables)."""
    return "".join(symbol(s) for s in reading)


# -- pinyin and initials written out -------------------------------------------------------------------

def latin_runs(text: str) -> list[tuple[int, int]]:
    """Spans of romanised text with at least one letter in them (digits alone are numbers, not pinyin)."""
    return [m.span() for m in LATIN_RUN.finditer(text) if _HAS_LETTER.search(m.group())]


def fold(run: str) -> str:
    """A romanised run folded for reading: ü as v, tone marks dropped, lower case (one character for one)."""
    run = run.translate(_U_DIAERESIS)
    out = []
    for ch in run:
        base = unicodedata.normalize("NFD", ch)[0] if ord(ch) > 127 else ch
        out.append(base.lower())
    return "".join(out)


@functools.cache
def _syllable_set() -> frozenset[str]:
    return frozenset(syllables())


def _spellings(piece: str) -> list[tuple[str, int]]:
    """(syllable, look-alikes used) that ``piece`` spells, a look-alike digit or symbol read as its letter."""
    options = [LOOKALIKE_LETTERS.get(ch, ch) for ch in piece]
    found = []
    for letters in itertools.product(*options):
        word = "".join(letters)
        if word in _syllable_set():
            found.append((word, sum(a != b for a, b in zip(piece, word))))
    return found


TIES = 4  # readings of a run kept where several are as short and plain (zhen e xin / zhe ne xin)
EDGE = 4  # characters at either end of a run left unread where the rest reads (ya4 yi4ok, meiy0uget)


@functools.lru_cache(maxsize=20_000)
def pinyin_paths(run: str, tones: bool = True) -> tuple[tuple[tuple[str, int, int], ...], ...]:
    """The best readings of a romanised run (at most :data:`TIES`, the first as :func:`read_pinyin` gives
    it), each a tuple of (syllable, start, end); none if it reads as no pinyin.

    Best: the fewest characters left unread, then the fewest syllables, then the fewest look-alikes. A run
    that does not read whole may leave up to :data:`EDGE` characters unread at each end (an English word or
    a number typed against the pinyin: ya4 yi4ok, 2000zhongzu) where at least two syllables read.
    """
    text = fold(run)
    n = len(text)
    # at each place, the best ways there: [(unread, syllables, look-alikes), [paths]]
    best: list[list | None] = [None] * (n + 1)
    for i in (i for i in range(min(EDGE, n) + 1) if _seam(run, i)):
        _better(best, i, (i, 0, 0), ())
    for i in range(n):
        if best[i] is None:
            continue
        (unread, count, looks), paths = best[i]
        if text[i] == " ":
            for path in paths:
                _better(best, i + 1, (unread, count, looks), path)
            continue
        for j in range(i + 1, min(n, i + 6) + 1):
            for syllable, used in _spellings(text[i:j]):
                for path in paths:
                    if tones and j < n and text[j] in TONE_DIGITS and not used:  # the syllable with its tone
                        _better(best, j + 1, (unread, count + 1, looks), (*path, (syllable, i, j + 1)))
                    # or without: the digit may be a look-alike letter of the next syllable instead
                    _better(best, j, (unread, count + 1, looks + used), (*path, (syllable, i, j)))
    ends = []  # the ways to the end: the characters after j left unread
    for j in range(max(0, n - EDGE), n + 1):
        if best[j] is not None and _seam(run, j):
            (unread, count, looks), paths = best[j]
            if count >= (2 if unread + n - j else 1):
                ends.append(((unread + n - j, count, looks), paths))
    if not ends:
        return ()
    cost = min(cost for cost, _ in ends)
    return tuple(itertools.islice(dict.fromkeys(p for c, paths in ends if c == cost for p in paths), TIES))


def _kind(ch: str) -> str:
    return "space" if ch == " " else "upper" if ch.isupper() else "lower" if ch.isalpha() else "digit"


def _seam(run: str, at: int) -> bool:
    """Whether a run may be cut at ``at`` into a part left unread and a part read: at an end, a space, or
    where letters meet digits or change case (yi4|ok, 2000|zhongzu, BLM|shibushi), never inside a plain
    word (disc|rimination)."""
    return at in (0, len(run)) or _kind(run[at - 1]) != _kind(run[at])


def read_pinyin(run: str, tones: bool = True) -> tuple[tuple[str, int, int], ...] | None:
    """The syllables a romanised run spells, each with its span in the run (its tone digit included), or
    None if it spells none.

    Read as posters type it: any case, tone marks or tone digits after a syllable, spaces between
    syllables, look-alike digits and symbols for letters (la1i). Of several readings the one with the
    fewest syllables, then the fewest look-alikes (xian is one syllable, not xi an); ``tones=False``
    reads no digit as a tone (GU1 is gui, not gu with tone 1). See :func:`pinyin_paths` for runs that do
    not read whole.
    """
    paths = pinyin_paths(run, tones)
    return paths[0] if paths else None


def pinyin_readings(run: str) -> list[tuple[tuple[str, int, int], ...]]:
    """The readings of a romanised run worth trying: ``read_pinyin``'s first, then those as good (nan de
    zhen e xin, zhe ne xin), then those that take no digit for a tone (gua1: gua with tone 1, or guai)."""
    toneless = pinyin_paths(run, tones=False) if any(ch in TONE_DIGITS for ch in run) else ()  # else the same
    return list(dict.fromkeys([*pinyin_paths(run), *toneless]))


def _better(best: list, at: int, cost: tuple, path: tuple) -> None:
    """Keep ``path`` to ``at`` if it costs less than the best there, or as little (up to :data:`TIES`)."""
    if best[at] is None or cost < best[at][0]:
        best[at] = [cost, [path]]
    elif cost == best[at][0] and len(best[at][1]) < TIES and path not in best[at][1]:
        best[at][1].append(path)


_INITIAL_LETTERS = {"1": "l", "0": "o", "3": "e", "$": "s", "@": "a"}


def read_initials(run: str) -> tuple[str, list[int]] | None:
    """The letters of a run of initials (txl, TXL, t x l, tx1, nm$l) and the place of each in the run, or
    None if it is not one."""
    places = [i for i, ch in enumerate(run) if ch != " "]
    folded = fold(run)
    letters = "".join(_INITIAL_LETTERS.get(folded[i], folded[i]) for i in places)
    return (letters, places) if 2 <= len(letters) <= 16 and letters.isalpha() and letters.isascii() else None


def split_initials(letters: str, known: Mapping[str, object], longest: int = 8) -> list[tuple[int, int]] | None:
    """``letters`` cut into pieces that are each a known string of initials (hnrtjg: hnr, tjg), the fewest
    pieces; None if it cannot be cut so."""
    n = len(letters)
    best: list[tuple | None] = [None] * (n + 1)
    best[0] = ()
    for i in range(n):
        if best[i] is None:
            continue
        for j in range(i + 2, min(n, i + longest) + 1):
            if letters[i:j] in known and (best[j] is None or len(best[i]) + 1 < len(best[j])):
                best[j] = (*best[i], (i, j))
    return list(best[n]) if best[n] else None


def initials(reading: Iterable[str]) -> str:
    """The initials of a reading, as the abbrev op writes them (zh, ch, sh by their first letter)."""
    return "".join(s[0] for s in reading)
