"""Which parts of a text get cloaked: lexicon terms ("keyword" mode) or words at a rate ("full" mode).

- ``lexicon`` / ``lexicon:FILE``: every occurrence of a lexicon term (leftmost-longest, no overlaps),
  as in ToxiCloakCN's keyword setting. The default lexicon ships with the package (``data/LEXICON.md``).
- ``mined`` / ``lexicon+mined``: the terms most associated with the offensive label in labelled records
  (``cloak.mining``), alone or with the lexicon's.
- ``all``: every word. Words come from forward maximum matching over jieba's dictionary — the same
  dictionary jieba segments with, matched by a Rust Aho-Corasick automaton, about 20x faster than
  ``jieba.cut`` and close to it for picking words to cloak; characters outside dictionary words are
  single-character words, runs of Latin letters or digits are words too.

Protected spans (URLs, @mentions, #topics#, Weibo emoticon codes such as [机智], and any the caller
adds) are never touched: a poster cloaks words, not links.
"""
from __future__ import annotations

import csv
import functools
import os
import re
from collections.abc import Iterable, Sequence
from importlib import resources

from .common.cache import disk_cached
from .hanzi import cjk_chars, word_frequencies

Span = tuple[int, int]

DEFAULT_PROTECT = (r"https?://\S+|www\.\S+|@[\w\-]+|#[^#\s]{1,30}#|\[[^\[\]\s]{1,10}\]")

# Dictionary words this rare are mostly names and segmentation debris; they would split real words.
_MIN_SEGMENT_FREQ = 3
_LATIN_RUN = re.compile(r"[A-Za-z0-9]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def matches(matcher, text: str, overlapping: bool = False) -> list[tuple[int, int, int]]:
    """An ahocorasick-rs matcher's matches (pattern, start, end) in ``text``: leftmost-longest, or every one
    with ``overlapping`` (a standard matcher); lone surrogates (which the Rust matcher cannot take) match
    nothing."""
    try:
        return matcher.find_matches_as_indexes(text, overlapping=overlapping)
    except UnicodeEncodeError:  # U+FFFD keeps every code point where it was
        return matcher.find_matches_as_indexes(_SURROGATE.sub("\ufffd", text), overlapping=overlapping)


class Lexicon:
    """A set of target terms with their categories, matched leftmost-longest."""

    def __init__(self, terms: Iterable[str], categories: dict[str, str] | None = None,
                 name: str = "custom") -> None:
        self.terms = sorted({t for t in (s.strip() for s in terms) if t})
        if not self.terms:
            raise ValueError(f"lexicon {name} has no terms")
        self.categories = categories or dict.fromkeys(self.terms, "")
        self.name = name
        self._matcher = None

    def __len__(self) -> int:
        return len(self.terms)

    def __contains__(self, term: str) -> bool:
        return term in self.categories

    def subset(self, terms: Iterable[str], name: str) -> Lexicon:
        """A lexicon of some of these ``terms``, each keeping its category."""
        kept = list(terms)
        return Lexicon(kept, {t: self.categories[t] for t in kept}, name=name)

    def find(self, text: str) -> list[Span]:
        """Spans of lexicon terms in ``text`` (code points), sorted, non-overlapping."""
        if self._matcher is None:
            import ahocorasick_rs

            self._matcher = ahocorasick_rs.AhoCorasick(
                self.terms, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)
        return [(s, e) for _, s, e in matches(self._matcher, text)]

    def __getstate__(self) -> dict:  # the Rust matcher does not pickle; workers rebuild it
        return {**self.__dict__, "_matcher": None}

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Lexicon:
        """A lexicon file: TSV/CSV with a ``term`` column (``category`` optional), or one term a line."""
        path = os.fspath(path)
        with open(path, encoding="utf-8-sig") as f:
            first = f.readline()
            f.seek(0)
            delimiter = "\t" if "\t" in first else ","
            header = [h.strip() for h in first.rstrip("\r\n").split(delimiter)]
            if "term" in header:
                rows = list(csv.DictReader(f, delimiter=delimiter))
                categories = {r["term"].strip(): (r.get("category") or "").strip() for r in rows
                              if r.get("term")}
                return cls(categories, categories, name=path)
            return cls((line.split("\t")[0] for line in f), name=path)

    def save(self, path: str | os.PathLike) -> None:
        """Write it as a lexicon file, a TSV of ``term`` and ``category`` that ``from_file`` reads back (the
        same terms, the same categories)."""
        import io

        from .common.io import write_atomic

        buffer = io.StringIO()
        rows = csv.writer(buffer, delimiter="\t", lineterminator="\n")  # quotes a term that holds a quote or tab
        rows.writerow(["term", "category"])
        rows.writerows([t, self.categories.get(t, "")] for t in self.terms)
        write_atomic(path, buffer.getvalue().encode("utf-8"))


@functools.cache
def default_lexicon() -> Lexicon:
    """The lexicon shipped with mmcloak (race, region, gender, LGBT and insult terms)."""
    with resources.as_file(resources.files("cloak") / "data" / "lexicon.tsv") as path:
        lexicon = Lexicon.from_file(path)
    lexicon.name = "lexicon"
    return lexicon


class LexiconTargets:
    """Targets are the lexicon's terms."""

    def __init__(self, lexicon: Lexicon) -> None:
        self.lexicon = lexicon

    def spans(self, text: str) -> list[Span]:
        return self.lexicon.find(text)

    def __repr__(self) -> str:
        return f"lexicon:{self.lexicon.name}"


@disk_cached
def segment_words() -> list[str]:
    """The dictionary words ``--targets all`` segments into (cached: reading jieba's 349k-line
    dictionary takes longer than building the matcher)."""
    return [w for w, f in word_frequencies().items() if len(w) >= 2 and f >= _MIN_SEGMENT_FREQ]


@functools.cache
def _dictionary_matcher():
    import ahocorasick_rs

    # Every Han character is a pattern too: where no word starts, the character itself matches, as it
    # did in the gaps between words. Leftmost-longest still prefers a word, so the spans are the same,
    # found in one pass of the matcher instead of a Python loop over the gaps (a third of the time).
    return ahocorasick_rs.AhoCorasick(segment_words() + cjk_chars(), matchkind=ahocorasick_rs.MatchKind.LeftmostLongest)


class WordTargets:
    """Targets are all words (dictionary words, other Chinese characters, Latin/digit runs)."""

    def spans(self, text: str) -> list[Span]:
        found = matches(_dictionary_matcher(), text)
        if not _LATIN_RUN.search(text):
            return [(start, end) for _, start, end in found]
        spans: list[Span] = []
        pos = 0
        for _, start, end in found:
            if pos < start:  # a gap holds no Han character: only Latin/digit runs are left to find
                spans.extend(m.span() for m in _LATIN_RUN.finditer(text, pos, start))
            spans.append((start, end))
            pos = end
        spans.extend(m.span() for m in _LATIN_RUN.finditer(text, pos, len(text)))
        return spans

    def prepare(self) -> None:
        _dictionary_matcher()

    def __repr__(self) -> str:
        return "all"


def make_targets(spec: str | Lexicon | LexiconTargets | WordTargets, *, lexicon: str | None = None,
                 mine_from: Iterable[dict] | str | os.PathLike | None = None,
                 balance: bool = False) -> LexiconTargets | WordTargets:
    """Targets from a ``Lexicon``, or from what ``cloak perturb`` takes: ``spec`` as its ``--targets``
    (``lexicon``, ``lexicon:FILE``, ``mined``, ``lexicon+mined``, ``all``), ``lexicon`` as ``--lexicon FILE``
    and ``mine_from`` as ``--mine-from`` (labelled records, or their JSONL file): see
    ``cloak.mining.build_targets``, which every command chooses its targets through. ``balance``: targets
    that mine add the words that mark the other labels (``cloak.mining.build_balanced_targets``)."""
    if isinstance(spec, (LexiconTargets, WordTargets, Lexicon)):
        if lexicon is not None or mine_from is not None:
            raise ValueError("lexicon and mine_from go with targets named as on the command line (a string)")
        return LexiconTargets(spec) if isinstance(spec, Lexicon) else spec
    from .mining import build_balanced_targets, build_targets, mines  # mining builds on this module's lexicons

    if balance and mines(spec):
        return LexiconTargets(build_balanced_targets(spec, lexicon=lexicon, labelled=mine_from))
    built = build_targets(spec, lexicon=lexicon, labelled=mine_from)
    return LexiconTargets(built) if isinstance(built, Lexicon) else WordTargets()


@functools.cache
def load_stopwords(spec: str = "none") -> frozenset[str]:
    """Words an attack leaves alone: ``"none"``; ``"zh"``, stopwords-iso's Chinese list (794 function
    words, pronouns, particles and punctuation such as 的, 了, 我们: the list TextAttack's Chinese recipe
    uses); or a file of one word a line."""
    if spec == "none":
        return frozenset()
    if spec == "zh":
        import stopwordsiso

        return frozenset(stopwordsiso.stopwords("zh"))
    if not os.path.isfile(spec):
        raise ValueError(f"stop words must be 'none', 'zh' or a file of one word a line; no file {spec!r}")
    with open(spec, encoding="utf-8-sig") as f:
        return frozenset(w for w in (line.strip() for line in f) if w)


def drop_protected(spans: Sequence[Span], protected: Sequence[Span]) -> list[Span]:
    """The spans that do not overlap any protected span."""
    return [(s, e) for s, e in spans if not any(s < pe and ps < e for ps, pe in protected)]
