"""The unveiler as a scikit-learn transformer: texts in, the texts with their cloaks read back out.

    from sklearn.pipeline import make_pipeline
    pipeline = make_pipeline(UnveilTransformer(targets="lexicon+mined"),
                             TfidfVectorizer(analyzer="char"), LogisticRegression())
    pipeline.fit(texts, labels)                  # the terms are mined from these posts
    GridSearchCV(pipeline, {"unveiltransformer__threshold": [4.0, 5.5, 7.0]})

Needs scikit-learn (the ``report`` extra): this module imports it, and ``cloak`` imports this module only
when ``UnveilTransformer`` is asked for. Its parameters are the ``Unveiler``'s fields, declared there once,
and ``fit_lm``; like every scikit-learn estimator it keeps them as given and checks them in ``fit``.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from typing import Any

from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ..common.params import check_value
from ..mining import mines
from .ngram import DICTIONARY, CharNgramLM, dictionary_words
from .scorers import NgramScorer
from .unveiler import Unveiled, Unveiler

UNVEILER_PARAMS = tuple(f.name for f in dataclasses.fields(Unveiler))
# The transformer's own: whether fit fits the n-gram scorer's model on the texts it is given
OWN_PARAMS = {"fit_lm": False}


class UnveilTransformer(TransformerMixin, BaseEstimator):
    """Read cloaks back in front of any text classifier (``Unveiler``, as a scikit-learn transformer).

    Parameters: every field of ``Unveiler``, by the same name and default (``families``, ``targets``,
    ``threshold``, ...: see it), and ``fit_lm``: fit the character n-gram scorer's model on the texts ``fit``
    is given, as ``cloak fit-lm`` does (the ngram scorer only; instead of ``model``).

    ``fit(X, y)`` fixes what the transform reads back: the terms (mined from ``X`` and its labels ``y`` with
    ``targets`` mined or lexicon+mined and no ``mine_from``; else as ``targets``, ``lexicon`` and
    ``mine_from`` choose them) and the n-gram model (fitted with ``fit_lm``, else ``model``'s file read), so a
    fitted transformer, pickled or saved as a victim, needs neither file again. Fitted attributes: ``terms_``,
    ``lm_`` (None: the model mmcloak ships, or another scorer's) and ``unveiler_``. ``transform(X)``: the
    texts read back, a list of str (``unveil(X)``: the ``Unveiled`` texts, with their edits).
    """

    def __init__(self, **params: Any) -> None:
        for name, default in _defaults().items():
            setattr(self, name, params.pop(name, default))
        if params:
            raise TypeError(f"UnveilTransformer got unexpected parameters: {', '.join(sorted(params))}")

    def fit(self, X: Iterable[str], y: Iterable | None = None) -> UnveilTransformer:
        """Fix the terms and the n-gram model the transform reads back with (see the class docstring)."""
        texts = _texts(X)
        if not texts:
            raise ValueError("UnveilTransformer: no texts to fit on")
        unveiler = Unveiler(**{name: getattr(self, name) for name in UNVEILER_PARAMS})  # its params checked
        fit_lm = check_value(self.fit_lm, bool, "UnveilTransformer: 'fit_lm'")
        labelled = None
        if mines(self.targets) and self.mine_from is None:
            if y is None:
                raise ValueError(f"UnveilTransformer: targets {self.targets} mines the terms of the labelled posts "
                                 "fit is given: fit(X, y) with their labels (or give mine_from a file)")
            labels = list(y)
            if len(labels) != len(texts):
                raise ValueError(f"UnveilTransformer: {len(texts)} texts and {len(labels)} labels")
            labelled = [{"text": t, "label": int(label)} for t, label in zip(texts, labels)]
        if fit_lm and (self.scorer != "ngram" or self.model):
            raise ValueError(f"UnveilTransformer: fit_lm fits the ngram scorer's model; scorer is {self.scorer!r} "
                             f"and model {self.model!r} (give scorer='ngram' and no model, or no fit_lm)")
        self.terms_ = list(unveiler.choose_terms(labelled).terms)
        if fit_lm:
            # as its file holds it (four decimals), so that it reads the same once pickled or saved
            self.lm_ = CharNgramLM.from_bytes(CharNgramLM.fit(texts, words=dictionary_words(DICTIONARY)).to_bytes())
        else:
            self.lm_ = CharNgramLM.load(self.model) if self.scorer == "ngram" and self.model else None
        self.unveiler_ = self._fitted_unveiler()
        return self

    def unveil(self, X: Iterable[str]) -> list[Unveiled]:
        """The texts read back, each with the edits that restored what its cloaks hid."""
        check_is_fitted(self)
        return self.unveiler_.unveil_batch(_texts(X))

    def transform(self, X: Iterable[str]) -> list[str]:
        """The texts with their cloaks read back."""
        return [u.text for u in self.unveil(X)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False  # texts, as scikit-learn's text vectorizers take
        tags.input_tags.string = True
        tags.target_tags.required = False  # only mined targets need labels
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return "terms_" in self.__dict__

    def _fitted_unveiler(self) -> Unveiler:
        unveiler = Unveiler(**{name: getattr(self, name) for name in UNVEILER_PARAMS})
        return unveiler.use(self.terms_, None if self.lm_ is None else NgramScorer(self.model or "", self.lm_))

    # Pickled or saved with skops: the model as the bytes of its file (skops would write its tables entry by
    # entry), and no unveiler, which is made again from the params and what fit fixed.
    def __getstate__(self) -> dict:
        state = {k: v for k, v in super().__getstate__().items() if k != "unveiler_"}
        if state.get("lm_") is not None:
            state["lm_"] = state["lm_"].to_bytes()
        return state

    def __setstate__(self, state: dict) -> None:
        if isinstance(state.get("lm_"), bytes):
            state = {**state, "lm_": CharNgramLM.from_bytes(state["lm_"], "UnveilTransformer's lm_")}
        super().__setstate__(state)
        if "terms_" in state:
            self.unveiler_ = self._fitted_unveiler()


def _defaults() -> dict[str, Any]:
    return {**{f.name: f.default for f in dataclasses.fields(Unveiler)}, **OWN_PARAMS}


# scikit-learn reads an estimator's params from its __init__'s signature (get_params, clone, repr): the
# Unveiler's fields, then the transformer's own, each with its default, so a new Unveiler field is one here too.
UnveilTransformer.__init__.__signature__ = inspect.Signature([
    inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
    *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
      for name, default in _defaults().items())])


def _texts(X: Iterable[str]) -> list[str]:
    """X as a list of texts (a list, an array or a Series of str)."""
    if isinstance(X, str):
        raise TypeError("UnveilTransformer takes a list of texts, not one string")
    texts = list(X)
    wrong = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
    if wrong is not None:
        raise TypeError(f"UnveilTransformer takes texts (str); item {wrong} is {type(texts[wrong]).__name__}")
    return texts
