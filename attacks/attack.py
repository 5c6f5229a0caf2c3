"""What every attack is, and the registry of attacks by kind.

An attack (after TextAttack's split into what it changes and how it searches) is any object with:

- ``kind``: ``cloak``, ``search``, ``fgm``, ``pgd``, ... — what the summary and the report sort it by;
- ``name``: what its outcomes are kept and reported under (``cloak:homophone``, ``search``, ``fgm@0.5``);
- ``settings()``: ``{"kind": ..., every parameter}``, which a resumed evaluation is checked against;
- ``skip_reason(facts)``: why it cannot run on a victim (``Victim.facts``: kind, name, ...), or None; a
  ValueError where its settings cannot hold for the victim (a goal naming a label it does not know): the
  evaluation is refused, before it writes anything;
- ``attack(victim, records, positions, clean)``: one :class:`Outcome` per record (``positions``: the
  records' places in the data, which seed what is random; ``clean``: the victim's clean probabilities);
- ``reported_as``: a :class:`ReportedAs`, how the report shows it (an attack that declares none is a
  column of the robustness matrix and nothing more).

The evaluator and the report read only these. An attack of your own is one module: its options, a
dataclass whose fields (``cloak.common.params.param``: a default and a help text) become ``attacks evaluate``'s
options, checked as every parameter here; its class; and its registration, a factory making the attacks
one ``attacks evaluate --attacks KIND`` asks for from those options and the records under attack::

    @dataclasses.dataclass
    class ReverseOptions:
        reverse_share: float = param(0.5, "reverse: the share of each post reversed.")
        _parameter_constraints = {"reverse_share": Interval(float, 0, 1)}

        def __post_init__(self) -> None:
            validate_fields(self, "reverse options")

    register_attack("reverse", lambda options, records: [ReverseAttack(options.reverse_share)], ReverseOptions)

and ``attacks evaluate --attacks reverse --reverse-share 0.3`` runs it (``make_attacks("reverse",
{"reverse_share": 0.3})`` from Python).
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from cloak.common.params import InstanceOf, Interval, ListOf, Options, unknown_key, validate_fields


@dataclasses.dataclass
class Outcome:
    """What an attack made of one post: the text the victim read, the edits that made it from the post
    (``Edit.to_dict()``; start/end in the post's coordinates), the victim's probabilities (NaN where it did
    not answer), whether the post was changed, the victim queries it took, and what else the attack tells of
    it (``details``: a cloak's variant that counted, a search's status and word ranking)."""

    text: str
    edits: list[dict]
    probs: np.ndarray
    changed: bool
    queries: int
    details: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        """The outcome as one line of an outcome file holds it."""
        return {"text": self.text, "edits": self.edits, "probs": self.probs, "changed": self.changed,
                "queries": self.queries, **self.details}


FIGURES = ("ranked", "counts", "column", "curve")  # in the order the report's matrix lists their attacks


@dataclasses.dataclass(frozen=True)
class ReportedAs:
    """What an attack declares of how the report shows it. The evaluator writes it into the attack's entry of
    ``summary.json`` (``"reported_as"``), and the report reads it there: it never goes by an attack's name.

    - ``figure``: where its results go besides its column of the robustness matrix. ``ranked``: it cloaks
      posts as posters do, so it counts in which detector holds up best under cloaking, in the coverage
      table and the bars per attack; ``counts``: a row of the search table (TextAttack's counts, by gold
      label); ``curve``: a point of a curve of accuracy against ``axis``, one curve a kind; ``column``:
      nowhere else.
    - ``axis``, ``axis_text``: the setting a curve runs over (``eps``), and what it is, for the plot.
    - ``examples``: where the posts it flipped come among a victim's examples, lower first; None where it
      edits no text, so that there is nothing to show.
    - ``prefix``: what headings leave out of its names (``cloak:``).
    - ``trained_ops``: a victim whose training data carried cloaks by one of its ``ops`` meets it in
      distribution: it is marked seen, and not counted for that victim.
    - ``varies``: the setting the header lists its runs by (``ops``, ``eps``); ``hidden``: settings the
      header leaves out; ``unset``: what a setting left None means, as the header says it.
    """

    figure: str = "column"
    axis: str | None = None
    axis_text: str = ""
    examples: int | None = 1
    prefix: str = ""
    trained_ops: bool = False
    varies: str | None = None
    hidden: tuple[str, ...] = ()
    unset: dict[str, str] = dataclasses.field(default_factory=dict)
    _parameter_constraints = {"figure": Options(*FIGURES), "examples": [Interval(int, 0), None],
                              "axis": [InstanceOf(str), None], "varies": [InstanceOf(str), None],
                              "hidden": ListOf(InstanceOf(str)), "unset": InstanceOf(dict)}

    def __post_init__(self) -> None:
        validate_fields(self, "reported_as")
        object.__setattr__(self, "hidden", tuple(self.hidden))  # JSON gives a list

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ReportedAs:
        """As ``dataclasses.asdict`` wrote it into a summary."""
        return cls(**values)


class Attack(Protocol):
    """What ``attacks evaluate`` runs: the protocol an attack of one's own implements (after TextAttack's attack:
    a goal, constraints, a transformation and a search, behind one method). The kind's factory, given to
    ``register_attack``, makes the attacks to run; ``evaluate`` asks each to skip a victim it cannot attack, then
    to attack the posts at ``positions``, and writes each post's ``Outcome``. See the architecture page's
    "An attack"."""

    kind: ClassVar[str]
    """The kind it is registered under (``--attacks KIND``)."""
    reported_as: ClassVar[ReportedAs]
    """How the report shows it (a ``ReportedAs``), written into its entry of ``summary.json``."""

    @property
    def name(self) -> str:
        """Its name in outcome files and tables, unique in a run (``cloak:homophone``, ``fgm@0.5``)."""
        ...

    def settings(self) -> dict:
        """``{"kind": ..., every parameter}``, as JSON: recorded in ``summary.json``, checked when a run resumes."""
        ...

    def skip_reason(self, facts: Mapping[str, Any]) -> str | None:
        """Why it cannot attack a victim with these facts (``Victim.facts``: kind, name, ...), or None."""
        ...

    def attack(self, victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]:
        """Attack ``records`` (their positions in the data: ``positions``, which seed per-post randomness) given
        the victim's ``clean`` probabilities of them (one row a record); one ``Outcome`` a record, in order."""
        ...


AttackFactory = Callable[[Any, Sequence[dict]], list[Attack]]


@dataclasses.dataclass(frozen=True)
class AttackKind:
    """A registered kind: the factory of its attacks and the dataclass of its options (None: it takes none)."""

    factory: AttackFactory
    options: type | None = None


_KINDS: dict[str, AttackKind] = {}
# Our attacks by the module that registers each, imported when asked for (`attacks --help` waits for none)
BUILTIN = {"cloak": "attacks.cloaking", "search": "attacks.search", "fgm": "attacks.fgm", "pgd": "attacks.fgm"}


def register_attack(kind: str, factory: AttackFactory, options: type | None = None) -> None:
    """Make ``attacks evaluate --attacks KIND`` call ``factory(options, records)`` for the attacks to run,
    ``options`` an instance of the dataclass ``options`` (whose fields are the command's options too)."""
    _KINDS[kind] = AttackKind(factory, options)


def attack_kinds() -> list[str]:
    return sorted({*_KINDS, *BUILTIN})


def attack_kind(kind: str) -> AttackKind:
    """A kind's registration (a built-in one's module imported on first use)."""
    if kind not in _KINDS and kind in BUILTIN:
        importlib.import_module(BUILTIN[kind])
    if kind not in _KINDS:
        raise unknown_key(kind, attack_kinds(), "--attacks", kind="attack")
    return _KINDS[kind]


def options_classes() -> list[type]:
    """The options dataclass of every kind, ours first (what ``attacks evaluate`` makes its options from)."""
    kinds = [attack_kind(k) for k in [*BUILTIN, *sorted(set(_KINDS) - set(BUILTIN))]]
    return list(dict.fromkeys(k.options for k in kinds if k.options is not None))


def make_options(kind: str, values: Mapping[str, Any] | None = None) -> Any:
    """The options of ``kind`` from ``values`` (a mapping of some of its fields: the rest keep their
    defaults; an unknown one is refused by name), checked; None for a kind without options."""
    cls = attack_kind(kind).options
    if cls is None:
        return None
    known = [f.name for f in dataclasses.fields(cls)]
    for key in values or {}:
        if key not in known:
            raise unknown_key(key, known, f"{kind} options")
    return cls(**(values or {}))


def make_attacks(kind: str, options: Any = None, records: Sequence[dict] = ()) -> list[Attack]:
    """The attacks of ``kind`` that ``options`` ask for (an FGM sweep is one attack per eps): its options
    dataclass, or a mapping of some of its fields (:func:`make_options`). ``records``: the labelled records
    under attack, for attacks that draw on them (the cloak's mined targets)."""
    registered = attack_kind(kind)
    if options is None or isinstance(options, Mapping):
        options = make_options(kind, options)
    return registered.factory(options, records)
