"""The operation interface and the registry of operations by name.

An operation is a small dataclass: its fields are its parameters (``homophone:tone=fuzzy`` on the
command line sets ``Homophone(tone="fuzzy")``), checked when the op is made against the fields' types
and the class's ``_parameter_constraints`` (``cloak.common.params``). ``apply(text, rng, targets)`` returns the
edits it makes inside the target spans; it must not touch text outside them, and returns no edit for a
span it cannot cloak (the ``Perturber`` then tries another op on that span).

``candidates(text, start, end)`` lists every edit the op could make in a span, the most plausible
first, after TextAttack's transformations: the search attack tries them in that order. ``edit_span``
draws its edits from the same options, so every edit it makes is one of the candidates.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from typing import ClassVar

from ..edits import Edit
from ..common.params import Interval, parse_spec, spec_of, unknown_key, validate_fields
from ..rng import Rng

Span = tuple[int, int]

SHARE = Interval(float, 0, 1)  # the share of a span's characters an op changes
# How much of a target term an op cloaks: "op", its own parameters (a share of a word's characters, a
# mix of styles); "whole", every character of the term (or the term as a unit); "poster", that and the
# styles real posters add to it (rarer same-sound characters): what the robustness figures default to.
STRENGTHS = ("op", "whole", "poster")


class Op:
    """Base class of perturbation operations. Subclasses are dataclasses that set ``name``."""

    name: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict] = {}
    # (parameters, word) pairs that show the op's styles: ``cloak ops`` prints what each makes of its
    # word, and the property tests run every one of them.
    examples: ClassVar[tuple[tuple[str, str], ...]] = ()
    # the parameters that cloak a whole term (strength "whole"), and what posters add (strength "poster")
    whole_term: ClassVar[dict[str, object]] = {}
    poster_style: ClassVar[dict[str, object]] = {}
    # Where the op's table comes from, and whether it is foreign: made by none of the tables ``cloak unveil``
    # reads back with (``cloak.ops.foreign``). A foreign op's attacks on a detector behind unveil are reported
    # apart from those of the defence's own tables, which flatter it (DESIGN §9c(3)); a default op list
    # (``default_ops``) leaves them out, they are asked for by name.
    source: ClassVar[str] = "the project's tables (cloak.pinyin, cloak.hanzi, cloak's data), which cloak unveil reads with"
    foreign: ClassVar[bool] = False

    # the parameters the op was made with (a spec's ``key=value``s, the constructor's arguments): a strength
    # changes only the others, so ``split:share=0.5`` keeps its share at strength whole though 0.5 is the default
    given: frozenset[str]

    def __new__(cls, *args, **kwargs):
        op = super().__new__(cls)
        names = [f.name for f in dataclasses.fields(cls) if f.init] if dataclasses.is_dataclass(cls) else []
        object.__setattr__(op, "given", frozenset([*names[:len(args)], *kwargs]))
        return op

    def __post_init__(self) -> None:
        validate_fields(self, f"op {self.name}")

    def at_strength(self, strength: str) -> Op:
        """This op at ``strength`` (see ``STRENGTHS``); a parameter the op was made with is kept."""
        if strength not in STRENGTHS:
            raise unknown_key(strength, STRENGTHS, "strength", kind="strength")
        changes = {} if strength == "op" else {**self.whole_term, **(self.poster_style if strength == "poster" else {})}
        kept = {k: v for k, v in changes.items() if k not in self.given}
        if not kept:
            return self
        op = dataclasses.replace(self, **kept)  # type: ignore[type-var]
        object.__setattr__(op, "given", self.given)  # what the strength set was not given
        return op

    def apply(self, text: str, rng: Rng, targets: Sequence[Span]) -> list[Edit]:
        """Edits cloaking ``text`` inside each target span (sorted, non-overlapping spans)."""
        edits: list[Edit] = []
        for start, end in targets:
            edits.extend(self.edit_span(text, start, end, rng))
        return edits

    def edit_span(self, text: str, start: int, end: int, rng: Rng) -> list[Edit]:
        """Edits cloaking ``text[start:end]``, sorted by position; [] when this op has nothing there."""
        raise NotImplementedError

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """Every single edit this op could make inside ``text[start:end]``, the most plausible first."""
        raise NotImplementedError(f"op {self.name} does not list its candidates (the search attack needs them)")

    def prepare(self) -> None:
        """Load the tables this op needs (done once, before worker processes fork)."""

    @classmethod
    def edit_styles(cls, edit: Edit) -> tuple[str, ...]:
        """The styles of this op that an edit shows in its output (pinyin's "spaced", homophone's "rare
        characters"): what a victim trained on cloaked records saw, read from their edits, which do not name the
        op's parameters. () where the output does not tell the styles apart."""
        return ()

    def spec(self) -> str:
        """The command-line form of this op and its parameters, e.g. ``homophone:tone=fuzzy``."""
        return spec_of(self)

    # -- helper shared by ops that swap single characters ----------------------------------------

    def replace_chars(self, text: str, start: int, end: int, rng: Rng,
                      options: Callable[[int], Candidates | None], share: float) -> list[Edit]:
        """Replace about ``share`` of the span's characters that have options (at least one).

        ``options(i)`` gives the candidates for ``text[i]`` (see ``pick``), or None.
        """
        return self.swap_some(text, self.found_chars(text, start, end, options), rng, share)

    def found_chars(self, text: str, start: int, end: int,
                    options: Callable[[int], Candidates | None]) -> list[tuple[int, Candidates]]:
        """[(position, candidates)] of the span's characters that have another character to become."""
        return [(i, o) for i in range(start, end) if (o := options(i)) and (len(o[0]) > 1 or o[0][0] != text[i])]

    def char_candidates(self, text: str, found: list[tuple[int, Candidates]]) -> list[Edit]:
        """Single-character swaps at ``found``: every position's best option, then every second best, ..."""
        ranked = [[Edit(self.name, i, i + 1, text[i], new) for new in ranked_items(c) if new != text[i]]
                  for i, c in found]
        return [e for rank in itertools.zip_longest(*ranked) for e in rank if e is not None]

    def swap_some(self, text: str, found: list[tuple[int, Candidates]], rng: Rng,
                  share: float) -> list[Edit]:
        """Swap about ``share`` of the characters at ``found`` = [(position, candidates)], at least one."""
        if not found:
            return []
        chosen = [f for f in found if rng.random() < share] or [rng.choice(found)]
        edits = []
        for i, candidates in chosen:
            new = pick(candidates, text[i], rng)
            if new is not None:
                edits.append(Edit(self.name, i, i + 1, text[i], new))
        return edits


Candidates = tuple[Sequence[str], Sequence[float] | None]  # (items, cumulative weights or None)


def ranked_items(candidates: Candidates) -> list[str]:
    """The items, heaviest first (as listed when unweighted; ties keep their order)."""
    items, cum = candidates
    if not cum:
        return list(items)
    weights = [hi - lo for lo, hi in zip((0.0, *cum), cum)]
    return [items[i] for i in sorted(range(len(items)), key=lambda i: -weights[i])]


def pick(candidates: Candidates | None, avoid: str, rng: Rng) -> str | None:
    """A candidate other than ``avoid``: weighted by cumulative weights when given, else uniform."""
    if candidates is None:
        return None
    items, cum = candidates
    if len(items) == 1:
        return None if items[0] == avoid else items[0]
    for _ in range(4):  # rejection sampling: ``avoid`` is one item among several
        new = rng.weighted_choice(items, cum) if cum else rng.choice(items)
        if new != avoid:
            return new
    others = [w for w in items if w != avoid]
    return rng.choice(others) if others else None


def example_specs() -> list[str]:
    """The spec of every style the registered ops' ``examples`` show (``pinyin:tones=marks``; the bare
    name where an example is the op's defaults), by op name: what the property tests and benches run."""
    return list(dict.fromkeys(f"{name}:{params}" if params else name
                              for name, cls in sorted(_REGISTRY.items()) for params, _ in cls.examples))


def cloakable(op: Op, terms: Sequence[str]) -> list[str]:
    """The terms ``op`` can cloak when the term is the whole text (it has a candidate for them)."""
    op.prepare()
    return [t for t in terms if op.candidates(t, 0, len(t))]


_REGISTRY: dict[str, type[Op]] = {}


def register_op(cls: type[Op]) -> type[Op]:
    """Register an op class under its ``name``; usable as a class decorator for your own ops."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} needs a class attribute `name`")
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} must be a dataclass (its fields are its parameters)")
    _REGISTRY[cls.name] = cls
    return cls


def available_ops() -> dict[str, type[Op]]:
    """All registered ops by name."""
    return dict(_REGISTRY)


def default_ops() -> list[str]:
    """The ops a default op list takes (an attack, a search): every registered op but the foreign ones, whose
    tables come from optional packages and which are asked for by name (``--attacks cloak --ops jionlp``)."""
    return [name for name, cls in _REGISTRY.items() if not cls.foreign]


def foreign_ops() -> list[str]:
    """The registered ops made by none of the tables ``cloak unveil`` reads with."""
    return [name for name, cls in _REGISTRY.items() if cls.foreign]


def make_op(spec: str | Op) -> Op:
    """An op from its command-line form ``name[:param=value[:param=value...]]``."""
    return spec if isinstance(spec, Op) else parse_spec(spec, _REGISTRY, "op")


def parse_ops(specs: str | Sequence[str | Op]) -> list[Op]:
    """Ops from ``"homophone:tone=fuzzy,emoji"`` or a list of specs / ops."""
    if isinstance(specs, str):
        specs = [s for s in specs.split(",") if s.strip()]
    ops = [make_op(s) for s in specs]
    if not ops:
        raise ValueError("no ops given")
    return ops
