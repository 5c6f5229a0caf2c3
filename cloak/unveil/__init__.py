"""cloak unveil: read cloaks back, with the tables that make them (see ``Unveiler``); ``UnveilTransformer``,
the unveiler as a scikit-learn transformer, needs scikit-learn (the ``report`` extra), imported when asked for."""
from ..common.lazy import lazy_exports
from .ngram import CharNgramLM
from .scorers import Scorer, available_scorers, make_scorer, register_scorer
from .unveiler import FAMILIES, Unveiled, Unveiler

__getattr__, __dir__ = lazy_exports(__name__, {"UnveilTransformer": "sklearn"})

__all__ = ["CharNgramLM", "FAMILIES", "Scorer", "UnveilTransformer", "Unveiled", "Unveiler", "available_scorers",
           "make_scorer", "register_scorer"]
