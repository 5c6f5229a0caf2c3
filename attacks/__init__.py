"""attacks: every detector behind one contract (victims), and the attacks on them.

``make_victim(name)`` makes a detector by name (``attacks models`` lists them): the conventional
pipelines (``tfidf-lr``, ``bow-svm``, ``emb-gbt``, ...), ``bert``, ``chinesebert``, ``habertor``, ``mmbert`` and
``llm``; ``load_victim(dir)`` loads a saved one. The victims are imported on first use, so that
``attacks --help`` loads neither torch nor scikit-learn.
"""
from __future__ import annotations

from cloak.lazy import lazy_exports
from cloak.params import unknown_key

from .victims.base import LAZY_KINDS, Victim, VictimError, load_victim, register_victim, victim_kind, victim_kinds

__getattr__, __dir__ = lazy_exports(__name__, {name: "victims.conventional" for name in (
    "CLASSIFIERS", "FEATURES", "ConventionalVictim", "conventional_names")})


def victim_names() -> list[str]:
    """Every name ``make_victim`` takes."""
    from .victims.conventional import conventional_names

    return [*conventional_names(), *LAZY_KINDS]


def victim_class(name: str) -> type[Victim]:
    """The class of the victims ``make_victim(name)`` makes."""
    if name not in victim_names():
        raise unknown_key(name, victim_names(), "", kind="victim")
    return victim_kind(name if name in LAZY_KINDS else "conventional")


def make_victim(name: str, config: dict | None = None, training: dict | None = None) -> Victim:
    """A victim by name, its config and training settings checked (unknown keys refused by name)."""
    cls = victim_class(name)
    if name in LAZY_KINDS:
        return cls(config, training)
    features, classifier = name.split("-")
    return cls({**(config or {}), "features": features, "classifier": classifier}, training)


__all__ = ["CLASSIFIERS", "FEATURES", "ConventionalVictim", "Victim", "VictimError", "load_victim", "make_victim",
           "register_victim", "victim_class", "victim_kind", "victim_kinds", "victim_names"]
