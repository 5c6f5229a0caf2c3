"""attacks: every detector behind one contract (victims), and the attacks on them.

``make_victim(name)`` makes a detector by name (``attacks models`` lists them): the conventional
pipelines (``tfidf-lr``, ``bow-svm``, ``emb-gbt``, ...), ``bert``, ``chinesebert``, ``habertor``, ``mmbert``,
``llm`` and any registered with ``register_victim``; ``load_victim(dir)`` loads a saved one, and
``SklearnVictim(pipeline)`` wraps a scikit-learn pipeline of your own. The victims are
imported on first use, so that ``attacks --help`` loads neither torch nor scikit-learn.
"""
from __future__ import annotations

from cloak.common.lazy import lazy_exports

from .victims.base import (NotFittedError, Victim, VictimError, inspect_victim, load_victim, make_victim,
                           register_victim, victim_class, victim_kind, victim_kinds, victim_names)

__getattr__, __dir__ = lazy_exports(__name__, {
    **{name: "victims.conventional" for name in ("CLASSIFIERS", "FEATURES", "ConventionalVictim", "conventional_names")},
    "SklearnVictim": "victims.sklearn_pipeline"})

__all__ = ["CLASSIFIERS", "FEATURES", "ConventionalVictim", "NotFittedError", "SklearnVictim", "Victim", "VictimError",
           "inspect_victim", "load_victim", "make_victim", "register_victim", "victim_class", "victim_kind",
           "victim_kinds", "victim_names"]
