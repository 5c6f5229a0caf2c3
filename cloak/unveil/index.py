"""Where a text may hide a term: the matching stage of ``cloak unveil``.

Four passes, each one scan of the text by an Aho-Corasick automaton (ahocorasick-rs) or a look-up:

- **sound** (readers ``homophone``, ``pinyin``): the text keyed to sound classes (``cloak.unveil.sound``),
  romanised runs read as pinyin in place, searched for every term's classes on every reading, and for the
  main-reading classes of the same-sounding words the homophone op writes for it (拜仁 for 白人);
- **initials** (``abbrev``): a romanised run that is a term's initials (txl, nmsl);
- **forms** (``split``, ``similar``, ``emoji``, ``english``, ``shuffle``, ``traditional``, ``variant``): the
  literal forms the ops write for each term (``cloak.unveil.variants``);
- **noise**: the text with the noise op's symbols (and spaces) between two Han characters left out,
  searched for the terms themselves (黑*人).

Every place a term may be is a ``Candidate``; the context scorer decides which are read back. Pinyin
written out of two syllables or more may also be read as one of the ``common`` most frequent words of
jieba's dictionary (nvxing -> 女性), since such a run is a cloak whatever word it hides.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from ..common.cache import disk_cached
from ..hanzi import common_words, is_han
from ..ops.homophone import word_index
from ..ops.typography import Noise
from ..pinyin import reading_key, word_reading
from ..targets import DEFAULT_PROTECT, matches
from . import sound
from .normalise import READERS as CHARACTER_READERS
from .normalise import normalise
from .variants import LITERAL_OPS, literal_forms

SOUND_READERS = ("homophone", "pinyin")
NOISE_SYMBOLS = Noise.symbols + " "
COMMON_PER_SOUND = 3  # common words read back from one pinyin spelling, at most
MEMO = 200_000  # written spans whose terms by sound are remembered
# What cloak never touches, read back never either; an @ inside romanised text is a look-alike a (n@n), not
# a mention
_PROTECT = re.compile(DEFAULT_PROTECT.replace("@[", "(?<![A-Za-z0-9$@])@["))


class Candidate(NamedTuple):
    """``text[start:end]`` may be a cloak of ``dst``, as ``reader`` reads it; ``fuzzy``: syllables heard only
    through a confusion (n/l, -ng/-n, ei/ai ...)."""

    start: int
    end: int
    dst: str
    reader: str
    fuzzy: int = 0


def _automaton(patterns: Sequence[str]):
    import ahocorasick_rs

    return ahocorasick_rs.AhoCorasick(patterns, matchkind=ahocorasick_rs.MatchKind.Standard)


def _leftmost_longest(patterns: Sequence[str]):
    import ahocorasick_rs

    return ahocorasick_rs.AhoCorasick(patterns, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)



@disk_cached
def common_by_sound(size: int) -> dict[str, tuple[str, ...]]:
    """Class key -> the most frequent of jieba's ``size`` commonest words of 2-4 common characters with
    that sound, the commonest first (at most COMMON_PER_SOUND)."""
    found: dict[str, list[str]] = {}
    for word in common_words(size):
        options = found.setdefault(sound.key(sound.plain(s) for s in word_reading(word)), [])
        if len(options) < COMMON_PER_SOUND:
            options.append(word)
    return {k: tuple(v) for k, v in found.items()}


@disk_cached
def common_readings(size: int) -> dict[str, frozenset[str]]:
    """Character -> its readings in use, for the characters of ``common_by_sound(size)``'s words (kept, so
    that reading pinyin as a common word needs no pypinyin in a worker)."""
    chars = sorted({ch for words in common_by_sound(size).values() for word in words for ch in word})
    return {ch: frozenset(sound.readings(ch)) for ch in chars}


class TermIndex:
    """The terms (``Lexicon.terms``) and the automata that find where each may be cloaked, for ``readers``."""

    def __init__(self, terms: Sequence[str], readers: frozenset[str], common: int = 0) -> None:
        self.terms, self.readers, self.common = list(terms), readers, common
        self._built = False

    def __getstate__(self) -> dict:  # the Rust automata do not pickle; a worker builds them again
        return {"terms": self.terms, "readers": self.readers, "common": self.common, "_built": False}

    def prepare(self) -> TermIndex:
        if self._built:
            return self
        han = [t for t in self.terms if all(is_han(ch) for ch in t)]
        self._sound_terms: dict[str, tuple[str, ...]] = {}
        self._initials: dict[str, tuple[str, ...]] = {}
        if self.readers & set(SOUND_READERS):
            self._sound_terms = _sound_keys(tuple(han))
            self._readings = _term_readings(tuple(han))
            self._heard_memo: dict[tuple[int, str], tuple[tuple[str, int], ...]] = {}
            sound.key_table()
        if "abbrev" in self.readers:
            self._initials = _initials(tuple(han))
        self._sound = _automaton(list(self._sound_terms)) if self._sound_terms else None
        self._common = common_by_sound(self.common) if self.common and "pinyin" in self.readers else {}
        self._common_readings = common_readings(self.common) if self._common else {}
        self._forms = _literal_forms(tuple(self.terms), tuple(sorted(self.readers & set(LITERAL_OPS))),
                                     tuple(sorted(self.readers & frozenset(CHARACTER_READERS))))
        self._form_list = list(self._forms)
        self._form_automaton = _automaton(self._form_list) if self._forms else None
        self._exact = _automaton(self.terms) if "noise" in self.readers else None
        self._written = _leftmost_longest(self.terms)
        self._term_set = frozenset(self.terms)
        self._noise = re.compile(f"(?<=[\u3400-\u9fff])[{re.escape(NOISE_SYMBOLS)}]+(?=[\u3400-\u9fff])")
        self._sound_list = list(self._sound_terms)
        self._built = True
        return self

    def candidates(self, text: str) -> list[Candidate]:
        """Every place of ``text`` that may be a cloak of a term (spans may overlap)."""
        found: list[Candidate] = []
        runs = sound.latin_runs(text) if ("pinyin" in self.readers or "abbrev" in self.readers) else []
        if self._sound is not None:
            found += self._sound_candidates(text, runs)
        if runs:
            found += self._romanised_candidates(text, runs)
        if self._form_automaton is not None:
            for k, start, end in matches(self._form_automaton, text, overlapping=True):
                found += [Candidate(start, end, term, reader) for term, reader in self._forms[self._form_list[k]]]
        if self._exact is not None and self._noise.search(text):
            found += self._noise_candidates(text)
        if found:
            found = self._unwritten(text, found)
        return found

    def _unwritten(self, text: str, found: list[Candidate]) -> list[Candidate]:
        """The candidates that do not read back what is written plainly: not a term written as it is (女拳,
        a cloak of 女权, is a term of its own), nor a part of one (the 黑 of 黑人 is not a look-alike of 男:
        what a candidate changes may hold a term written plainly, not cut one); nor inside a URL, @mention,
        #topic# or [emoticon]."""
        kept = [(s, e) for _, s, e in matches(self._written, text)]
        if _PROTECT.search(text):
            kept += [m.span() for m in _PROTECT.finditer(text)]
        if not kept:
            return [c for c in found if text[c.start:c.end] not in self._term_set]
        within: list[tuple[int, int] | None] = [None] * (len(text) + 1)  # the kept span over each place
        for s, e in kept:
            for i in range(s, e):
                within[i] = (s, e)
        kept_candidates = []
        for c in found:
            written = text[c.start:c.end]
            if written in self._term_set:
                continue
            start, end = changed_span(written, c.dst)
            start, end = c.start + start, c.start + end
            if end == start:  # changes nothing but where a term is cut: judged by its whole span
                start, end = c.start, c.end
            if ((first := within[start]) is None or first[0] >= c.start) and \
                    ((last := within[end - 1]) is None or last[1] <= c.end):
                kept_candidates.append(c)
        return kept_candidates

    def _sound_candidates(self, text: str, runs: list[tuple[int, int]]) -> list[Candidate]:
        keyed = text.translate(sound.key_table())
        places: list[tuple[int, int]] | None = None  # key symbol -> its span of the text, where they differ
        heard: list[str | None] = []  # key symbol -> the syllable written there, for romanised runs
        if runs and "pinyin" in self.readers:
            keyed, places, heard = _with_pinyin(text, keyed, runs)
        found = []
        syllables: list[str | None] | None = None  # what the key heard at each of its places
        memo = self._heard_memo
        for k, start, end in matches(self._sound, keyed, overlapping=True):
            s, e = (start, end) if places is None else (places[start][0], places[end - 1][1])
            written = text[s:e]
            reading = memo.get((k, written)) if places is None else None
            if reading is None:
                if syllables is None:
                    syllables = _heard(text, places, heard)
                reading = tuple((term, fuzzy) for term in self._sound_terms[self._sound_list[k]] if term != written
                                and (fuzzy := _confusions(syllables, heard, start, end, self._readings[term])) >= 0)
                if places is None:
                    if len(memo) > MEMO:
                        memo.clear()
                    memo[k, written] = reading
            reader = "pinyin" if places is not None and any(heard[i] for i in range(start, end)) else "homophone"
            found += [Candidate(s, e, term, reader, fuzzy) for term, fuzzy in reading]
        return found

    def _romanised_candidates(self, text: str, runs: list[tuple[int, int]]) -> list[Candidate]:
        found = []
        for s, e in runs:
            run = text[s:e]
            read = sound.read_initials(run) if self._initials else None
            if read is not None:
                letters, places = read
                for a, b in sound.split_initials(letters, self._initials) or ():
                    start, end = s + places[a], s + places[b - 1] + 1
                    found += [Candidate(start, end, term, "abbrev") for term in self._initials[letters[a:b]]
                              if term != text[start:end]]
            if self._sound is not None:
                for syllables in sound.pinyin_readings(run)[1:]:  # the first is in the key already
                    found += self._other_reading(text, s, syllables)
            syllables = sound.read_pinyin(run) if self._common else None
            if syllables and len(syllables) >= 2:  # a common word the run spells (what it reads, not its ends)
                said = [syllable for syllable, _, _ in syllables]
                start, end = s + syllables[0][1], s + syllables[-1][2]
                found += [Candidate(start, end, word, "pinyin") for word in self._common.get(sound.key(said), ())
                          if all(x in self._common_readings[ch] for x, ch in zip(said, word))]
        return found

    def _other_reading(self, text: str, at: int, syllables: tuple[tuple[str, int, int], ...]) -> list[Candidate]:
        """The terms another reading of the run at ``at`` spells, anywhere in it (nan de zhen e xin: 恶心),
        each syllable one of the term's readings (a poster spells the syllable meant)."""
        said = [syllable for syllable, _, _ in syllables]
        found = []
        for k, a, b in matches(self._sound, sound.key(said), overlapping=True):
            start, end = at + syllables[a][1], at + syllables[b - 1][2]
            found += [Candidate(start, end, term, "pinyin") for term in self._sound_terms[self._sound_list[k]]
                      if term != text[start:end] and _confusions(said, said, a, b, self._readings[term]) == 0]
        return found

    def _noise_candidates(self, text: str) -> list[Candidate]:
        kept = [(m.start(), m.end()) for m in self._noise.finditer(text)]
        skeleton, places, pos = [], [], 0
        for s, e in [*kept, (len(text), len(text))]:
            skeleton.append(text[pos:s])
            places.extend(range(pos, s))
            pos = e
        found = []
        for k, start, end in matches(self._exact, "".join(skeleton), overlapping=True):
            s, e = places[start], places[end - 1] + 1
            if e - s > end - start:  # symbols were left out inside it
                found.append(Candidate(s, e, self.terms[k], "noise"))
        return found


def changed_span(written: str, dst: str) -> tuple[int, int]:
    """The span of ``written`` that reading it as ``dst`` changes: without their common start and end."""
    head = 0
    while head < min(len(written), len(dst)) and written[head] == dst[head]:
        head += 1
    tail = 0
    while tail < min(len(written), len(dst)) - head and written[-1 - tail] == dst[-1 - tail]:
        tail += 1
    return head, len(written) - tail


@disk_cached
def _sound_keys(terms: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Class key -> the terms heard so: each term on every reading, and on the main readings of the words
    the homophone op writes for it."""
    keys: dict[str, dict[str, None]] = {}
    words = word_index("toneless")
    for term in terms:
        readings = sound.term_readings(term)
        for reading in readings:
            keys.setdefault(sound.key(reading), {})[term] = None
        if readings and len(term) >= 2:
            same = words.get(reading_key(word_reading(term)))
            for word in (same[0] if same else ()):
                written = sound.key(sound.main_syllables().get(ch, "") for ch in word)
                if sound.NO_SOUND not in written:
                    keys.setdefault(written, {})[term] = None
    return {k: tuple(v) for k, v in keys.items() if sound.NO_SOUND not in k}


@disk_cached
def _term_readings(terms: tuple[str, ...]) -> dict[str, list[frozenset[str]]]:
    """Term -> the readings in use of each of its characters."""
    return {t: [frozenset(sound.readings(ch)) for ch in t] for t in terms}


@disk_cached
def _literal_forms(terms: tuple[str, ...], readers: tuple[str, ...],
                   characters: tuple[str, ...]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Form -> its (term, reader) pairs: ``literal_forms`` of the terms for ``readers``, each form as it reads
    once the ``characters`` readers have read its characters back."""
    read = frozenset(characters)
    forms = literal_forms(list(terms), list(readers), lambda form: normalise(form, read)[0])
    return {form: tuple(found.items()) for form, found in forms.items()}


@disk_cached
def _initials(terms: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Initials -> the terms of two characters or more they abbreviate, on every reading."""
    found: dict[str, dict[str, None]] = {}
    for term in terms:
        if len(term) >= 2:
            for reading in sound.term_readings(term):
                found.setdefault(sound.initials(reading), {})[term] = None
    return {k: tuple(v) for k, v in found.items()}


def _with_pinyin(text: str, keyed: str, runs: list[tuple[int, int]]) -> tuple[str, list, list]:
    """The key with each romanised run that reads as pinyin replaced by its syllables' classes; each key
    symbol's span of the text, and the syllable written there (None for a character)."""
    symbols, places, heard = [], [], []
    pos = 0
    for s, e in runs:
        syllables = sound.read_pinyin(text[s:e])
        if not syllables:
            continue
        for i in range(pos, s + syllables[0][1]):  # what the run leaves unread stays as it is written
            symbols.append(keyed[i])
            places.append((i, i + 1))
            heard.append(None)
        for syllable, a, b in syllables:
            symbols.append(sound.symbol(syllable))
            places.append((s + a, s + b))
            heard.append(syllable)
        pos = s + syllables[-1][2]
    for i in range(pos, len(text)):
        symbols.append(keyed[i])
        places.append((i, i + 1))
        heard.append(None)
    return "".join(symbols), places, heard


def _confusions(syllables: list, heard: list, start: int, end: int, readings: list[frozenset]) -> int:
    """How many of a term's syllables the key's places start:end give only through a confusion; -1 where
    one of them is spelled in pinyin (a poster spells the syllable meant, not one it may be confused with)."""
    count = 0
    for k, r in zip(range(start, end), readings):
        if syllables[k] not in r:
            if heard and heard[k] is not None:
                return -1
            count += 1
    return count


def _heard(text: str, places: list | None, heard: list) -> list[str | None]:
    """The syllable at each place of a text's key: the one written in pinyin there, else the main reading
    of the character."""
    main = sound.main_syllables()
    if places is None:
        return [main.get(ch) for ch in text]
    return [h if h is not None else main.get(text[a]) for h, (a, _) in zip(heard, places)]
