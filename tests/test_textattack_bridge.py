"""TextAttack both ways: mmcloak's ops as a TextAttack transformation, its victims as a TextAttack model wrapper.

TextAttack 0.3.11 needs transformers < 5, so it lives in a virtual environment of its own: ``make test-all`` runs
this file in ``.venv-textattack``; elsewhere its TextAttack tests skip, saying so. Offline: its import reads NLTK's
stop words from a folder written here, and its first-import downloads are marked done in a cache of its own.
"""
import importlib.util
import os
import sys

import numpy as np
import pytest

from attacks import make_victim
from attacks.search import OpCandidates
from attacks.textattack_bridge import EXTRA, import_textattack, nltk_stopwords
from cloak import apply_edits
from cloak.ops import Homophone

from .conftest import read_jsonl

needs_textattack = pytest.mark.skipif(
    importlib.util.find_spec("textattack") is None,
    reason="TextAttack is not installed: run `make .venv-textattack/.installed && .venv-textattack/bin/python -m "
           "pytest tests/test_textattack_bridge.py` (make test-all does), or pip install 'mmcloak[textattack]' "
           "in a virtual environment with transformers < 5")


@pytest.fixture(scope="module")
def textattack(tmp_path_factory):
    """TextAttack imported offline; the variables its import sets (its cache as HF_HOME, ...) put back after."""
    folder = tmp_path_factory.mktemp("textattack")
    (folder / "cache").mkdir()
    (folder / "cache" / "post_install_check_3").touch()  # its first import's NLTK downloads: none offline
    saved = dict(os.environ)
    os.environ.update(NLTK_DATA=str(nltk_stopwords(folder / "nltk_data")), TA_CACHE_DIR=str(folder / "cache"))
    try:
        module = import_textattack()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return module


@pytest.fixture(scope="module")
def tfidf(sample_path):
    rows = read_jsonl(sample_path)
    return make_victim("tfidf-lr").fit(rows[:200]), rows[200:]


def test_without_textattack_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "textattack", None)  # what an import finds where it is not installed
    with pytest.raises(ImportError, match=r"mmcloak\[textattack\]") as raised:
        import_textattack()
    assert raised.value.name == EXTRA


def test_the_bridge_imports_without_textattack():
    import attacks.textattack_bridge as bridge

    assert "textattack" not in bridge.__dict__ and "OpTransformation" not in bridge.__dict__


@needs_textattack
def test_the_transformation_yields_the_ops_candidates_for_a_word(textattack):
    from attacks.textattack_bridge import OpTransformation

    text = "这些黑鬼真是傻逼"
    attacked = textattack.shared.AttackedText(text)
    i = attacked.words.index("黑鬼")
    word = attacked.words[i]
    op = Homophone()
    op.prepare()
    expected = [apply_edits(word, [e]) for e in op.candidates(word, 0, len(word))][:30]
    assert len(expected) > 3  # a word the op has candidates for
    transformation = OpTransformation("homophone", max_candidates=30)
    assert transformation._get_replacement_words(word) == expected
    # TextAttack's call: the post with that word replaced by each candidate, in the op's order
    made = transformation(attacked, indices_to_modify={i})
    assert [t.text for t in made] == [text.replace(word, new) for new in expected]
    # every op, the search's merge and cap: what attacks evaluate's search scores at that word
    merged = OpCandidates("", 10).candidates(word, 0, len(word))
    assert OpTransformation(max_candidates=10)._get_replacement_words(word) == [apply_edits(word, [e]) for e in merged]


@needs_textattack
def test_the_model_wrapper_gives_the_victims_probabilities(textattack, tfidf):
    from attacks.textattack_bridge import VictimModelWrapper

    victim, rows = tfidf
    texts = [r["text"] for r in rows[:5]]
    model = VictimModelWrapper(victim)
    assert isinstance(model, textattack.models.wrappers.ModelWrapper)
    probs = model(texts)
    np.testing.assert_array_equal(probs, victim.predict_proba(texts))
    assert probs.shape == (5, 2) and model.seconds > 0


@needs_textattack
def test_textattacks_attack_with_the_ops_breaks_a_tfidf_victim(textattack, tfidf):
    from textattack.constraints.pre_transformation import RepeatModification
    from textattack.goal_functions import UntargetedClassification
    from textattack.search_methods import GreedyWordSwapWIR

    from attacks.textattack_bridge import OpTransformation, VictimModelWrapper

    victim, rows = tfidf
    model = VictimModelWrapper(victim)
    attack = textattack.Attack(UntargetedClassification(model, query_budget=50), [RepeatModification()],
                               OpTransformation("homophone,similar,emoji"), GreedyWordSwapWIR("delete"))
    results = [attack.attack(r["text"], int(r["label"])) for r in rows[:10]]
    succeeded = [r for r in results if type(r).__name__ == "SuccessfulAttackResult"]
    assert succeeded
    for result in succeeded:  # a real flip: the victim itself gets the adversarial text wrong
        adversarial = result.perturbed_result.attacked_text.text
        label = result.original_result.ground_truth_output
        assert adversarial != result.original_result.attacked_text.text
        assert victim.predict_proba([adversarial])[0].argmax() != label
    assert all(r.num_queries <= 50 for r in results)
