"""What a search attack may change (TextAttack's constraints, Morris et al. 2020).

Two kinds, one protocol (a constraint overrides one of the two methods):

- before the transformation, ``modifiable(text, words)``: the words (spans) the search may edit, as
  TextAttack's pre-transformation constraints give the indices it may modify. ``stopwords:words=zh``
  leaves stop words alone (``--stopwords``); ``target-terms`` edits only the words that hold a target
  term of the lexicon (``target-terms:lexicon=FILE`` for your own), as posters cloak;
- after it, ``allows(original, edits)``: whether the adversarial text ``apply_edits(original, edits)`` may stand, checked before the
  victim is asked of it (so a refused candidate costs no query). ``max-edits:k=2`` allows at most k
  edits; ``similarity:min=0.8`` a character similarity to the post of at least ``min``.

On the command line: ``attacks evaluate --attacks search --constraint max-edits:k=2 --constraint
similarity:min=0.9``. A constraint of your own is a dataclass registered with ``@CONSTRAINTS.register``.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Sequence
from typing import Protocol

from cloak.edits import Edit, apply_edits
from cloak.common.params import InstanceOf, Interval, Named, Registry
from cloak.targets import Lexicon, default_lexicon, load_stopwords

Span = tuple[int, int]
CONSTRAINTS = Registry("constraint")


class Constraint(Protocol):
    name: str

    def spec(self) -> str: ...

    def modifiable(self, text: str, words: list[Span]) -> list[Span]: ...

    def allows(self, original: str, edits: Sequence[Edit]) -> bool: ...


class SearchConstraint(Named):
    """A constraint that lets everything through: a subclass narrows ``modifiable`` or ``allows``."""

    def modifiable(self, text: str, words: list[Span]) -> list[Span]:
        return words

    def allows(self, original: str, edits: Sequence[Edit]) -> bool:
        return True


@CONSTRAINTS.register
@dataclasses.dataclass
class Stopwords(SearchConstraint):
    """The words of a stop-word list left alone: ``none``, ``zh`` (stopwords-iso's Chinese list, 的, 了,
    我们, ...: TextAttack's Chinese recipe's), or a file of one word a line."""

    name = "stopwords"
    words: str = "zh"
    _parameter_constraints = {"words": InstanceOf(str)}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.stopwords = load_stopwords(self.words)

    def modifiable(self, text: str, words: list[Span]) -> list[Span]:
        return [(s, e) for s, e in words if text[s:e] not in self.stopwords]


@CONSTRAINTS.register
@dataclasses.dataclass
class TargetTerms(SearchConstraint):
    """Only the words that hold (overlap) a term of ``lexicon``: ``lexicon``, the default one, or a file
    (one term a line, or a TSV with a term column)."""

    name = "target-terms"
    lexicon: str = "lexicon"
    _parameter_constraints = {"lexicon": InstanceOf(str)}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.terms = _lexicon(self.lexicon)

    def modifiable(self, text: str, words: list[Span]) -> list[Span]:
        terms = self.terms.find(text)
        return [(s, e) for s, e in words if any(s < te and ts < e for ts, te in terms)]


@CONSTRAINTS.register
@dataclasses.dataclass
class MaxEdits(SearchConstraint):
    """At most ``k`` edits (each changes one word; TextAttack's ``MaxWordsPerturbed``)."""

    name = "max-edits"
    k: int = 2
    _parameter_constraints = {"k": Interval(int, 1)}

    def allows(self, original: str, edits: Sequence[Edit]) -> bool:
        return len(edits) <= self.k


@CONSTRAINTS.register
@dataclasses.dataclass
class Similarity(SearchConstraint):
    """A floor on how much of the post the adversarial text keeps: difflib's ratio of the two texts'
    characters, 2 * matched / (both lengths), 1 for the post itself (one character swapped in a post of 20:
    0.95)."""

    name = "similarity"
    min: float = 0.8
    _parameter_constraints = {"min": Interval(float, 0, 1)}

    def allows(self, original: str, edits: Sequence[Edit]) -> bool:
        return similarity(original, apply_edits(original, list(edits))) >= self.min


def similarity(a: str, b: str) -> float:
    """difflib's ratio of two texts (autojunk off: a long post's common characters are not junk)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


@functools.cache
def _lexicon(spec: str) -> Lexicon:
    return default_lexicon() if spec == "lexicon" else Lexicon.from_file(spec)


def make_constraint(spec: str | Constraint) -> Constraint:
    """A constraint from its command-line form (``max-edits:k=2``), or the constraint itself."""
    return CONSTRAINTS.make(spec)
