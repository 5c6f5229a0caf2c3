"""What every attack is, and the registry of attacks by kind.

An attack (after TextAttack's split into what it changes and how it searches) is any object with:

- ``kind``: ``cloak``, ``search``, ``fgm``, ``pgd``, ... — what the summary and the report sort it by;
- ``name``: what its outcomes are kept and reported under (``cloak:homophone``, ``search``, ``fgm@0.5``);
- ``settings()``: ``{"kind": ..., every parameter}``, which a resumed evaluation is checked against;
- ``skip_reason(facts)``: why it cannot run on a victim (``Victim.facts``: kind, name, ...), or None;
- ``attack(victim, records, positions, clean)``: one :class:`Outcome` per record (``positions``: the
  records' places in the data, which seed what is random; ``clean``: the victim's clean probabilities).

The evaluator and the report read only these. An attack of your own is a module with such a class and
its registration, a factory making the attacks one ``attacks evaluate --attacks KIND`` asks for from the
command's options (:data:`OPTIONS` names them)::

    register_attack("reverse", lambda options: [ReverseAttack(seed=options["seed"])])
"""
from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol

import numpy as np

from cloak.params import unknown_key

# What `attacks evaluate` hands every factory: its options, by these names.
OPTIONS = ("ops", "mode", "targets", "strength", "rate", "variants", "seed", "query_budget", "max_candidates",
           "importance", "stopwords", "eps", "steps")


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


class Attack(Protocol):
    kind: ClassVar[str]

    @property
    def name(self) -> str: ...

    def settings(self) -> dict: ...

    def skip_reason(self, facts: Mapping[str, Any]) -> str | None: ...

    def attack(self, victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]: ...


AttackFactory = Callable[[Mapping[str, Any]], list[Attack]]
_FACTORIES: dict[str, AttackFactory] = {}
# Our attacks by the module that registers each, imported when asked for (`attacks --help` waits for none)
BUILTIN = {"cloak": "attacks.cloaking", "search": "attacks.search", "fgm": "attacks.fgm", "pgd": "attacks.fgm"}


def register_attack(kind: str, factory: AttackFactory) -> None:
    """Make ``attacks evaluate --attacks KIND`` call ``factory(options)`` for the attacks to run."""
    _FACTORIES[kind] = factory


def attack_kinds() -> list[str]:
    return sorted({*_FACTORIES, *BUILTIN})


def make_attacks(kind: str, options: Mapping[str, Any]) -> list[Attack]:
    """The attacks of ``kind`` that ``options`` ask for (an FGM sweep is one attack per eps)."""
    if kind not in _FACTORIES and kind in BUILTIN:
        importlib.import_module(BUILTIN[kind])
    if kind not in _FACTORIES:
        raise unknown_key(kind, attack_kinds(), "--attacks", kind="attack")
    return _FACTORIES[kind](options)
