"""The Perturber: targets + ops + a seed -> cloaked text with a record of every edit.

For each target span (a lexicon term, or a word chosen at ``rate``), the ops are tried in an order drawn
at random until one cloaks the span, so ``ops=["homophone", "emoji"]`` mixes both and an op that has
nothing to offer for a word (no emoji for 歧视) hands it to the next. Randomness comes from
``Rng(seed, key, variant)``: the same seed, key and variant give the same output in any process.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Sequence
from operator import itemgetter
from typing import NamedTuple

from .edits import Edit, splice
from .ops import Op, parse_ops
from .ops.base import STRENGTHS
from .common.params import Interval, Options, validate
from .rng import Rng, text_key
from .targets import DEFAULT_PROTECT, Lexicon, LexiconTargets, WordTargets, drop_protected, make_targets

Span = tuple[int, int]

DEFAULT_RATE_ALL = 0.3


class Cloaked(NamedTuple):
    """One perturbed text: ``text`` is ``source`` with ``edits`` applied."""

    text: str
    source: str
    edits: list[Edit]

    @property
    def ops(self) -> list[str]:
        """Names of the ops that made the edits, in order of first use."""
        return list(dict.fromkeys(e.op for e in self.edits))

    @property
    def changed(self) -> bool:
        return bool(self.edits)


_position = itemgetter(1, 2)  # (start, end) of an Edit


def _span_cloaker(op: Op) -> Callable[[str, int, int, Rng], list[Edit]]:
    """``op.apply`` on one span; straight to ``edit_span`` where ``apply`` is the base class's loop
    (one Python call less per target: a tenth of the homophone op's time on a typical post)."""
    if type(op).apply is Op.apply:
        return op.edit_span
    return lambda text, start, end, rng: op.apply(text, rng, ((start, end),))


class Perturber:
    """Cloak texts the way posters do.

    ops: op specs or ``Op`` objects (``"homophone:tone=fuzzy,emoji"``, ``["homophone", Emoji()]``);
    targets: as ``cloak perturb --targets``: ``"lexicon"`` (the default lexicon, or ``lexicon``),
    ``"lexicon:FILE"``, ``"mined"`` (the terms most associated with the offensive label in ``mine_from``),
    ``"lexicon+mined"``, ``"all"`` (every word); or a ``Lexicon``;
    lexicon: a lexicon file instead of the default lexicon (``--lexicon FILE``);
    mine_from: labelled records, or their JSONL file, to mine ``mined`` targets from (``--mine-from``);
    balance: with mined targets, add the words that mark the non-offensive posts, as many as make them hold
    as many characters of targets as the offensive posts (``cloak.mining.build_balanced_targets``): a
    non-offensive post is cloaked as often and as heavily as an offensive one, so that a cloak does not
    carry the label to a detector trained on the cloaks (the default; False: the offensive posts'
    terms alone, which attacks cloak);
    rate: probability that a target span is cloaked (default 1.0 for lexicon, 0.3 for all);
    strength: how much of each target the ops cloak: ``op`` (each op's own parameters), ``whole``
    (every character of a term, or the term as a unit), ``poster`` (that, and rarer same-sound
    characters as posters dodging a filter write them); an op parameter given explicitly is kept;
    seed: with the record key and variant, decides every random choice;
    protect: regular expression of spans never to touch (None to protect nothing).

    >>> p = Perturber(ops="homophone", seed=1)
    >>> out = p("白人都是垃圾")
    >>> out.text != out.source and all(e.op == "homophone" for e in out.edits)
    True
    """

    _parameter_constraints = {"rate": [Interval(float, 0, 1), None], "seed": Interval(int),
                              "strength": Options(*STRENGTHS)}

    def __init__(self, ops: str | Sequence[str | Op] = "homophone",
                 targets: str | Lexicon | LexiconTargets | WordTargets = "lexicon",
                 rate: float | None = None, seed: int = 0,
                 protect: str | None = DEFAULT_PROTECT, strength: str = "op", *, lexicon: str | None = None,
                 mine_from: Iterable[dict] | str | os.PathLike | None = None, balance: bool = True) -> None:
        checked = validate({"rate": rate, "seed": seed, "strength": strength}, self._parameter_constraints,
                           "Perturber")
        self.strength = strength
        self.ops = [op.at_strength(strength) for op in parse_ops(ops)]
        self.targets = make_targets(targets, lexicon=lexicon, mine_from=mine_from, balance=balance)
        if checked["rate"] is None:
            checked["rate"] = DEFAULT_RATE_ALL if isinstance(self.targets, WordTargets) else 1.0
        self.rate, self.seed = checked["rate"], checked["seed"]
        self.protect = re.compile(protect) if protect else None
        self._prepared = False
        self._cloakers = [_span_cloaker(op) for op in self.ops]

    def __repr__(self) -> str:
        ops = ",".join(op.spec() for op in self.ops)
        return (f"Perturber(ops={ops!r}, targets={self.targets!r}, rate={self.rate}, seed={self.seed}"
                + (f", strength={self.strength!r})" if self.strength != "op" else ")"))

    def prepare(self) -> Perturber:
        """Load every table now (otherwise on first use); returns self."""
        if not self._prepared:
            for op in self.ops:
                op.prepare()
            if hasattr(self.targets, "prepare"):
                self.targets.prepare()
            self._prepared = True
        return self

    def target_spans(self, text: str, rng: Rng, protected: Sequence[Span] = ()) -> list[Span]:
        """The spans of ``text`` that will be cloaked."""
        spans = self.targets.spans(text)
        if not spans:
            return spans
        protected = list(protected)
        if self.protect is not None and self.protect.search(text):
            protected += [m.span() for m in self.protect.finditer(text)]
        if protected:
            spans = drop_protected(spans, protected)
        if self.rate < 1.0:
            spans = [s for s in spans if rng.random() < self.rate]
        return spans

    def __call__(self, text: str, *, key: int | None = None, variant: int = 0,
                 protected: Sequence[Span] = ()) -> Cloaked:
        """Cloak one text. ``key`` identifies the record (default: the text itself)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        rng = Rng(self.seed, text_key(text) if key is None else key, variant)
        spans = self.target_spans(text, rng, protected)
        if not spans:
            return Cloaked(text, text, [])
        edits: list[Edit] = []
        cloakers = self._cloakers
        for start, end in spans:
            if len(cloakers) > 1:
                cloakers = list(self._cloakers)
                rng.shuffle(cloakers)
            for cloak_span in cloakers:
                found = cloak_span(text, start, end, rng)
                if found:
                    if len(found) > 1:  # an op of one's own may list a span's edits in any order
                        found.sort(key=_position)
                    edits.extend(found)
                    break
        if not edits:
            return Cloaked(text, text, [])
        # Spans are sorted and disjoint, and each op returns its edits in order: already sorted.
        return Cloaked(splice(text, edits), text, edits)

    def augment(self, texts: Iterable[str], n: int = 1, *, epoch: int = 0) -> list[str]:
        """``n`` cloaked copies of each text, text-major; pass the epoch to get fresh ones each epoch."""
        return [self(t, variant=epoch * n + k).text for t in texts for k in range(n)]
