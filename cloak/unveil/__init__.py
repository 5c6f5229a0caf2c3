"""cloak unveil: read cloaks back, with the tables that make them (see ``Unveiler``)."""
from .ngram import CharNgramLM
from .scorers import Scorer, available_scorers, make_scorer, register_scorer
from .unveiler import FAMILIES, Unveiled, Unveiler

__all__ = ["CharNgramLM", "FAMILIES", "Scorer", "Unveiled", "Unveiler", "available_scorers", "make_scorer",
           "register_scorer"]
