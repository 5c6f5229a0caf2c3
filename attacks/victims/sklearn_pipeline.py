"""Any fitted scikit-learn pipeline over raw texts as a victim, saved and attacked like the ones mmcloak trains.

    pipeline = make_pipeline(UnveilTransformer(), TfidfVectorizer(analyzer="char"), LogisticRegression())
    SklearnVictim(pipeline.fit(texts, labels)).save("victims/my-pipeline")
    # attacks evaluate --victim victims/my-pipeline --data test.jsonl --out results

``attacks train`` cannot make such a victim (it cannot know the pipeline): build and fit the pipeline in
Python, wrap it, and save it; ``load_victim`` and ``attacks evaluate`` take the folder as any other. The
pipeline is attacked whole (every attack on text queries its ``predict_proba`` with the posts as written),
so with an ``UnveilTransformer`` in front the search is an adaptive attack on the unveiler, as on a
defended victim. Its classes are the records' labels (0, 1, ...). The pipeline is saved with ``skops.io``
and loaded only if every type it holds is in ``TRUSTED_TYPES``: the conventional detectors' steps, the
unveiler's and the usual text steps; a pipeline of other steps is refused when saved, naming them (add them
to ``TRUSTED_TYPES`` in the process that saves and the one that loads, if you trust them).
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SklearnNotFittedError
from sklearn.utils.validation import check_is_fitted

from cloak.common.io import write_atomic

from . import conventional
from .base import Fitted, Settings, Victim, VictimError, labels_of, register_victim, texts_of

MODEL_FILE = "pipeline.skops"
# The text vectorizers' vocabularies, by the step's path (skops would write each term with its types: a character
# 1-3-gram TF-IDF of the 2,000 bundled posts made a 71 MB file that took 13 s to load)
VOCABULARIES_FILE = "vocabularies.json"
# What a saved pipeline may hold: skops loads these and nothing else
TRUSTED_TYPES = {
    *conventional.TRUSTED_TYPES, "cloak.unveil.sklearn.UnveilTransformer", "builtins.bytes", "builtins.list",
    "builtins.bool", "builtins.tuple", "builtins.dict", "sklearn.pipeline.FeatureUnion",
    "sklearn.feature_extraction.text.HashingVectorizer", "sklearn.linear_model._stochastic_gradient.SGDClassifier",
    "sklearn.linear_model._ridge.RidgeClassifier", "sklearn.naive_bayes.ComplementNB",
    "sklearn.preprocessing._function_transformer.FunctionTransformer",
}


@dataclasses.dataclass
class PipelineConfig(Settings):
    """What the model is: the pipeline as scikit-learn prints it (its steps, and their params that differ from
    the defaults), recorded for reports; the model itself is the saved pipeline."""

    estimator: str = ""


@register_victim
class SklearnVictim(Victim):
    """A fitted scikit-learn pipeline (or any classifier) whose ``predict_proba`` takes raw texts."""

    kind = "sklearn-pipeline"
    summary = "a scikit-learn pipeline over raw texts, wrapped in Python (attacks.SklearnVictim(pipeline).save(DIR))"
    Config = PipelineConfig
    packages = ("scikit-learn", "skops")
    model_ = Fitted()  # the fitted pipeline: the one given, fit's, or the one loaded

    def __init__(self, pipeline: Any = None, config: Settings | dict | None = None,
                 training: Settings | dict | None = None) -> None:
        super().__init__(config if config is not None else {"estimator": _printed(pipeline)}, training)
        self.pipeline = pipeline
        if pipeline is not None and _is_fitted(pipeline):
            self._use(pipeline)

    @classmethod
    def names(cls) -> list[str]:
        return []  # made from a pipeline in Python, never by name

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> SklearnVictim:
        """Fit a clone of the pipeline on ``train``'s texts and labels (``dev`` is not used)."""
        if self.pipeline is None:
            raise ValueError("SklearnVictim needs a pipeline to fit: SklearnVictim(make_pipeline(...))")
        labels = labels_of(train, "the training records")
        self._use(clone(self.pipeline).fit(texts_of(train), labels), int(labels.max()) + 1)
        return self

    def _use(self, model: Any, num_labels: int = 0) -> None:
        """Predict with ``model``, fitted; its classes must be labels (0, 1, ...)."""
        classes = np.asarray(model.classes_)
        if classes.dtype.kind not in "iu" or classes.min() < 0:
            raise ValueError(f"the pipeline's classes must be the records' labels 0, 1, ...; got {classes.tolist()}")
        self.model_, self.num_labels_ = model, max(num_labels, int(classes.max()) + 1)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return conventional.class_probabilities(self.model_, texts, self.num_labels_)

    def _save_weights(self, directory: str) -> list[str]:
        import skops.io

        steps = _with_vocabularies(self.model_)
        vocabularies = {path: step.vocabulary_ for path, step in steps.items()}
        for step in steps.values():
            del step.vocabulary_
        try:
            data = skops.io.dumps(self.model_)
        finally:
            for path, step in steps.items():
                step.vocabulary_ = vocabularies[path]
        refused = sorted(set(skops.io.get_untrusted_types(data=data)) - TRUSTED_TYPES)
        if refused:
            raise VictimError(f"the pipeline holds types that load_victim does not trust: {', '.join(refused)}; add "
                              "them to attacks.victims.sklearn_pipeline.TRUSTED_TYPES (where it is saved and loaded) "
                              "if you trust them")
        write_atomic(os.path.join(directory, MODEL_FILE), data)
        write_atomic(os.path.join(directory, VOCABULARIES_FILE), json.dumps(
            {path: {term: int(i) for term, i in vocabulary.items()} for path, vocabulary in vocabularies.items()},
            ensure_ascii=False).encode())
        return [MODEL_FILE, VOCABULARIES_FILE]

    @classmethod
    def load(cls, directory: str, meta: dict) -> SklearnVictim:
        import skops.io

        path = os.path.join(directory, MODEL_FILE)
        found = set(skops.io.get_untrusted_types(file=path))
        refused = sorted(found - TRUSTED_TYPES)
        if refused:
            raise VictimError(f"{path} holds types that are not trusted: {', '.join(refused)}; refusing to load it "
                              "(add them to attacks.victims.sklearn_pipeline.TRUSTED_TYPES if you trust them)")
        model = skops.io.load(path, trusted=sorted(found))
        steps = _steps(model)
        with open(os.path.join(directory, VOCABULARIES_FILE), encoding="utf-8") as f:
            for step_path, vocabulary in json.load(f).items():
                if step_path not in steps:
                    raise VictimError(f"{directory}: {VOCABULARIES_FILE} names a step the pipeline has not: "
                                      f"{step_path!r}")
                steps[step_path].vocabulary_ = vocabulary
        victim = cls(None, meta.get("config"), meta.get("training"))
        victim._use(model, int(meta["num_labels"]))
        victim.trained_on = meta.get("trained_on")
        victim.fingerprint = meta["fingerprint"]
        return victim


def _steps(model: Any) -> dict[str, Any]:
    """The model and every estimator inside it, by its path in ``get_params`` (the model's: "")."""
    return {"": model, **(model.get_params(deep=True) if hasattr(model, "get_params") else {})}


def _with_vocabularies(model: Any) -> dict[str, Any]:
    """The steps of ``model`` that hold a vocabulary (a text vectorizer's ``vocabulary_``), by their path."""
    found, seen = {}, set()
    for path, step in _steps(model).items():
        if isinstance(getattr(step, "vocabulary_", None), dict) and id(step) not in seen:
            found[path] = step
            seen.add(id(step))
    return found


def _is_fitted(estimator: Any) -> bool:
    try:
        check_is_fitted(estimator)
    except SklearnNotFittedError:
        return False
    return True


def _printed(estimator: Any) -> str:
    """The estimator as scikit-learn prints it, on one line."""
    return " ".join(repr(estimator).split()) if estimator is not None else ""
