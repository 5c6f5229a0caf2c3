"""scikit-learn: the unveiler as a transformer (cloak.unveil.sklearn) in pipelines, cross-validation and grid
search, and a fitted pipeline as a victim (attacks.victims.sklearn_pipeline), saved, loaded and attacked."""
from __future__ import annotations

import dataclasses
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import estimator_checks

from attacks import SklearnVictim, inspect_victim, load_victim
from attacks.cli import main
from attacks.victims.base import NotFittedError as VictimNotFittedError
from attacks.victims.base import VictimError
from cloak import Unveiler
from cloak.common.params import ParameterError
from cloak.mining import build_targets
from cloak.unveil import CharNgramLM, UnveilTransformer

from .conftest import ROOT, SAMPLE, read_jsonl

TRAIN = ROOT / "samples" / "cold" / "cold_train_2000.jsonl"
CLOAKED = "你们这些拜仁都是垃圾"  # 白人 read back by the homophone reader


@pytest.fixture(scope="module")
def train():
    records = read_jsonl(TRAIN)[:300]
    return [r["text"] for r in records], [r["label"] for r in records]


def unveiling_pipeline(**params):
    return make_pipeline(UnveilTransformer(**params), TfidfVectorizer(analyzer="char", ngram_range=(1, 2)),
                         LogisticRegression(max_iter=1000))


@pytest.fixture(scope="module")
def pipeline(train):
    return unveiling_pipeline().fit(*train)


def test_the_pipeline_reads_cloaks_back_before_it_classifies(pipeline, train):
    read = pipeline[0].transform([CLOAKED])[0]
    assert "白人" in read and read == Unveiler()(CLOAKED).text
    np.testing.assert_array_equal(pipeline.predict_proba([CLOAKED]), pipeline[1:].predict_proba([read]))
    test = read_jsonl(SAMPLE)
    predicted = pipeline.predict([r["text"] for r in test])
    assert set(predicted) == {0, 1} and np.mean(predicted == [r["label"] for r in test]) > 0.6


def test_its_params_are_the_unveilers_fields_and_are_kept_as_given():
    assert set(UnveilTransformer().get_params()) == {f.name for f in dataclasses.fields(Unveiler)} | {"fit_lm"}
    assert UnveilTransformer().get_params()["threshold"] is None and UnveilTransformer().families == Unveiler().families
    odd = UnveilTransformer(common=-1, families="sound+nonsense", threshold="4")  # checked in fit, not here
    assert odd.get_params()["common"] == -1 and odd.threshold == "4"
    with pytest.raises(ParameterError, match="common"):
        odd.fit(["白人"])
    with pytest.raises(TypeError, match="threshhold"):
        UnveilTransformer(threshhold=4)


def test_clone_get_params_and_set_params(pipeline):
    again = clone(pipeline)
    assert again.get_params(deep=False).keys() == pipeline.get_params(deep=False).keys()
    assert again[0].get_params() == pipeline[0].get_params() and not hasattr(again[0], "terms_")
    again.set_params(unveiltransformer__threshold=3.0, unveiltransformer__families="sound")
    assert again[0].threshold == 3.0 and again[0].families == "sound" and pipeline[0].threshold is None
    assert repr(again[0]) == "UnveilTransformer(families='sound', threshold=3.0)"


def test_not_fitted_before_fit_and_fit_fixes_the_terms(train):
    texts, labels = train
    with pytest.raises(NotFittedError):
        UnveilTransformer().transform([CLOAKED])
    mined = UnveilTransformer(targets="lexicon+mined")
    with pytest.raises(ValueError, match="fit\\(X, y\\)"):
        mined.fit(texts)
    assert mined.fit(texts, labels) is mined
    records = [{"text": t, "label": y} for t, y in zip(texts, labels)]
    assert mined.terms_ == build_targets("lexicon+mined", labelled=records).terms
    assert mined.get_params() == UnveilTransformer(targets="lexicon+mined").get_params()  # fit rewrites no param
    shuffled = np.random.default_rng(0).permutation(labels)
    assert UnveilTransformer(targets="lexicon+mined").fit(texts, shuffled).terms_ != mined.terms_
    assert mined.fit(texts, labels).terms_ == build_targets("lexicon+mined", labelled=records).terms  # refit: the same


def test_fit_lm_fits_the_ngram_model_on_the_texts_and_it_survives_pickling(train):
    texts, labels = train
    unveiler = UnveilTransformer(fit_lm=True).fit(texts, labels)
    assert isinstance(unveiler.lm_, CharNgramLM) and unveiler.lm_.info["texts"] == str(len(texts))
    assert UnveilTransformer().fit(texts).lm_ is None  # the model mmcloak ships
    again = pickle.loads(pickle.dumps(unveiler))
    assert again.lm_.logprob_ == unveiler.lm_.logprob_ and again.terms_ == unveiler.terms_
    assert again.transform(texts[:40] + [CLOAKED]) == unveiler.transform(texts[:40] + [CLOAKED])
    with pytest.raises(ValueError, match="fit_lm"):
        UnveilTransformer(fit_lm=True, model="my.lm").fit(texts)


# scikit-learn's checks that make sense for a transformer of texts; the others feed it numeric arrays (its tags
# say it takes texts, as TfidfVectorizer's do, so parametrize_with_checks skips them all): what they check of
# fit and transform, the tests above check on texts.
@pytest.mark.parametrize("check", [
    "check_estimator_cloneable", "check_estimator_repr", "check_no_attributes_set_in_init",
    "check_do_not_raise_errors_in_init_or_set_params", "check_get_params_invariance", "check_set_params",
    "check_parameters_default_constructible", "check_valid_tag_types", "check_estimator_tags_renamed",
    "check_mixin_order"])
def test_scikit_learns_estimator_checks(check):
    getattr(estimator_checks, check)("UnveilTransformer", UnveilTransformer())


def test_cross_val_score_runs_and_grid_search_tunes_the_threshold(train):
    texts, labels = train
    scores = cross_val_score(unveiling_pipeline(targets="lexicon+mined"), texts, labels, cv=2, scoring="f1_macro")
    assert scores.shape == (2,) and all(0 < s <= 1 for s in scores)
    search = GridSearchCV(unveiling_pipeline(), {"unveiltransformer__threshold": [3.0, 9.0]}, cv=2,
                          scoring="f1_macro").fit(texts, labels)
    assert len(search.cv_results_["params"]) == 2
    assert search.best_params_["unveiltransformer__threshold"] in (3.0, 9.0)
    assert search.best_estimator_[0].threshold == search.best_params_["unveiltransformer__threshold"]


def test_a_pipeline_saved_as_a_victim_predicts_the_same_and_is_evaluated(train, tmp_path):
    texts, labels = train
    fitted = unveiling_pipeline(targets="lexicon+mined", fit_lm=True).fit(texts, labels)
    victim = SklearnVictim(fitted)
    victim.save(str(tmp_path / "pipe"))
    loaded = load_victim(str(tmp_path / "pipe"))
    test = [r["text"] for r in read_jsonl(SAMPLE)] + [CLOAKED]
    np.testing.assert_array_equal(loaded.predict_proba(test), victim.predict_proba(test))
    np.testing.assert_array_equal(victim.predict_proba(test), fitted.predict_proba(test))
    assert loaded.model_[0].terms_ == fitted[0].terms_ and loaded.num_labels == 2
    vocabularies = json.loads((tmp_path / "pipe" / "vocabularies.json").read_text(encoding="utf-8"))
    assert vocabularies == {"tfidfvectorizer": {t: int(i) for t, i in fitted[1].vocabulary_.items()}}
    facts = inspect_victim(str(tmp_path / "pipe")).facts
    assert facts["kind"] == "sklearn-pipeline" and "UnveilTransformer(fit_lm=True" in facts["config"]["estimator"]
    data = tmp_path / "test.jsonl"
    data.write_text("".join(SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)[:30]), encoding="utf-8")
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(tmp_path / "pipe"), "--data", str(data), "--attacks",
                                       "cloak", "--ops", "homophone", "--out", str(tmp_path / "ev"), "-q"])
    assert result.exit_code == 0, (result.output, result.exception)
    summary = json.loads((tmp_path / "ev" / "summary.json").read_text())
    figures = summary["victims"]["pipe"]["attacks"]["cloak:homophone"]
    assert summary["victims"]["pipe"]["facts"]["kind"] == "sklearn-pipeline" and figures["all"]["n"] == 30


def test_an_unfitted_pipeline_is_fitted_by_the_victim_on_records(train):
    texts, labels = train
    victim = SklearnVictim(unveiling_pipeline())
    with pytest.raises(VictimNotFittedError):
        victim.predict_proba([CLOAKED])
    victim.fit([{"text": t, "label": y} for t, y in zip(texts, labels)])
    assert victim.predict_proba([CLOAKED]).shape == (1, 2) and not hasattr(victim.pipeline[0], "terms_")


def _shout(texts):
    return [t.upper() for t in texts]


def test_a_pipeline_of_untrusted_steps_is_refused_when_saved(train, tmp_path):
    texts, labels = train
    fitted = make_pipeline(FunctionTransformer(_shout), TfidfVectorizer(analyzer="char"), LogisticRegression())
    with pytest.raises(VictimError, match="tests.test_sklearn._shout"):
        SklearnVictim(fitted.fit(texts, labels)).save(str(tmp_path / "v"))
    assert not (tmp_path / "v" / "victim.json").exists()


def test_cloak_imports_scikit_learn_only_when_the_transformer_is_asked_for():
    code = ("import sys, cloak, cloak.unveil; before = 'sklearn' in sys.modules; "
            "from cloak.unveil import UnveilTransformer; print(before, 'sklearn' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert ran.stdout.split() == ["False", "True"], ran.stderr


def test_attacks_train_says_how_a_pipeline_victim_is_made():
    result = CliRunner().invoke(main, ["train", "--model", "sklearn-pipeline", "--train", str(SAMPLE), "--out", "x"])
    assert result.exit_code != 0 and "SklearnVictim(pipeline)" in result.output
