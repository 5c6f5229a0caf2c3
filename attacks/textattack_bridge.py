"""TextAttack both ways (Morris et al., "TextAttack: A Framework for Adversarial Attacks, Data Augmentation, and
Adversarial Training in NLP", 2020): mmcloak's ops as a TextAttack transformation and its victims as a TextAttack
model wrapper, so that TextAttack's own ``Attack(goal_function, constraints, transformation, search_method)``
runs against an mmcloak detector with mmcloak's cloaks::

    from textattack import Attack
    from textattack.constraints.pre_transformation import RepeatModification
    from textattack.goal_functions import UntargetedClassification
    from textattack.search_methods import GreedyWordSwapWIR

    from attacks import load_victim
    from attacks.textattack_bridge import OpTransformation, VictimModelWrapper

    model = VictimModelWrapper(load_victim("victims/tfidf-lr"))
    attack = Attack(UntargetedClassification(model, query_budget=200), [RepeatModification()],
                    OpTransformation("homophone,similar"), GreedyWordSwapWIR("delete"))
    result = attack.attack(text, label)

- :class:`OpTransformation` (a TextAttack ``WordSwap``): the replacements of a word are the candidates of
  ``attacks evaluate``'s search (``attacks.search.OpCandidates``: every op's most plausible edit of the
  word, then each one's second, ..., at most ``max_candidates``), each applied to the word. TextAttack hands
  a transformation the word alone, so the ops see the word without the post around it.
- :class:`VictimModelWrapper` (a TextAttack ``ModelWrapper``): any victim's ``predict_proba`` (a saved
  folder through ``load_victim``, a pipeline, a defended victim), and the seconds spent inside it.

TextAttack is the optional extra ``mmcloak[textattack]``, in a virtual environment of its own: TextAttack 0.3.11
imports flair, which needs transformers < 5, older than the rest of mmcloak's (``make test-all`` builds
``.venv-textattack``). TextAttack is imported when one of the two classes is first asked for, so this module
imports without it. Its import reads NLTK's English stop words, which it cannot download offline:
:func:`nltk_stopwords` writes them into a folder for ``NLTK_DATA``.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

import numpy as np

from cloak import apply_edits

from .search import OpCandidates
from .victims.base import Victim

EXTRA = "mmcloak[textattack]"
NEEDS = ("the optional extra mmcloak[textattack], in a virtual environment of its own (TextAttack 0.3.11 needs "
         "transformers < 5): `make .venv-textattack/.installed`, or docs/guide/attacks.md#textattack")


def nltk_stopwords(folder: str | Path) -> Path:
    """``folder`` holding NLTK's English stop-word corpus, written from scikit-learn's list: TextAttack's import
    reads it and cannot download it offline. Set ``NLTK_DATA`` to the folder before importing TextAttack."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    corpus = Path(folder) / "corpora" / "stopwords"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "english").write_text("\n".join(sorted(ENGLISH_STOP_WORDS)) + "\n", encoding="utf-8")
    return Path(folder)


def import_textattack():
    """The ``textattack`` module, or an error naming the extra (and NLTK's data where that is what it lacks)."""
    try:
        import textattack
    except ImportError as e:
        raise ImportError(f"TextAttack is not installed ({e}): it is {NEEDS}", name=EXTRA) from None
    except LookupError as e:  # nltk.data.find: a corpus the import reads is missing
        raise LookupError(f"TextAttack's import needs NLTK's stop words, which it cannot download here: "
                          f"attacks.textattack_bridge.nltk_stopwords(folder) writes them; set NLTK_DATA to that "
                          f"folder ({str(e).strip().splitlines()[0]})") from None
    return textattack


@functools.cache
def _classes() -> dict[str, type]:
    """The two classes, made once TextAttack is imported (their bases are TextAttack's)."""
    import_textattack()  # for its error; the bases come from its modules
    from textattack.models.wrappers import ModelWrapper
    from textattack.transformations import WordSwap

    class OpTransformation(WordSwap):
        """mmcloak's ops as a TextAttack word swap: a word's replacements are the search's candidates for it
        (``ops``: every op by default; at most ``max_candidates``), the most plausible first."""

        def __init__(self, ops: str = "", max_candidates: int = 10) -> None:
            super().__init__()
            self.ops, self.max_candidates = ops, max_candidates
            self.op_candidates = OpCandidates(ops, max_candidates)

        def _get_replacement_words(self, word: str) -> list[str]:
            return [apply_edits(word, [edit]) for edit in self.op_candidates.candidates(word, 0, len(word))]

        @property
        def deterministic(self) -> bool:
            return True

        def extra_repr_keys(self) -> list[str]:
            return ["ops", "max_candidates"]

    class VictimModelWrapper(ModelWrapper):
        """A victim as a TextAttack model: a list of texts in, their probabilities (n, n_classes) out.
        ``seconds`` adds up the time spent inside the victim (the rest of an attack is TextAttack's work)."""

        def __init__(self, victim: Victim) -> None:
            self.model = victim
            self.seconds = 0.0

        def __call__(self, text_input_list: list[str]) -> np.ndarray:
            started = time.perf_counter()
            probs = np.asarray(self.model.predict_proba(list(text_input_list)))
            self.seconds += time.perf_counter() - started
            return probs

    return {"OpTransformation": OpTransformation, "VictimModelWrapper": VictimModelWrapper}


def __getattr__(name: str) -> type:
    if name in ("OpTransformation", "VictimModelWrapper"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
