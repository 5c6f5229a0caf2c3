"""Context scorers: how much likelier a text reads with a cloak read back than as it is written.

A scorer gives, for each candidate of a text, ``log P(the text with it read back) - log P(the text)`` under
its model; the unveiler reads a candidate back where that gain clears its threshold. ``ngram`` (the
default) is a character n-gram model (``cloak.unveil.ngram``) and needs no weights; a package adds its own
under the entry-point group ``mmcloak.unveil_scorers`` (mmbert's ``mlm``: any BERT-style masked language
model), which cloak never imports itself and loads only when one is asked for, as ``cloak`` finds the
``render`` and ``speech`` commands. A scorer of your own is a class with a ``name``, made from one string
(``model``: a file, folder or hub name; "" for its default), with ``prepare()``, ``gains_batch`` and ``save``
(its model written into a folder, so that a saved defended detector predicts without the original); one
that can also weigh neighbouring candidates together (``JointScorer``: the n-gram scorer) chooses which of
a text's candidates to read back itself, by the likeliest reading (``cloak.unveil.lattice``).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import ClassVar, Protocol, runtime_checkable

from ..common.io import write_atomic
from ..common.params import unknown_key
from .index import Candidate
from .lattice import best_reading
from .ngram import BOS, EOS, CharNgramLM, model_bytes

ENTRY_POINTS = "mmcloak.unveil_scorers"
MODEL_FILE = "ngram.lm.gz"  # the n-gram scorer's model, as a saved unveiler keeps it


@runtime_checkable
class Scorer(Protocol):
    """What the unveiler asks of a context scorer."""

    name: ClassVar[str]

    @property
    def reach(self) -> int:
        """How many characters either side of a candidate its gain depends on (a masked language model:
        the whole text)."""

    def prepare(self) -> None:
        """Load the model (once, before worker processes fork)."""

    def gains_batch(self, items: Sequence[tuple[str, Sequence[Candidate]]]) -> list[list[float]]:
        """For each (text, its candidates): each candidate's gain in log probability."""

    def save(self, directory: str) -> str:
        """Write the model it reads into ``directory`` (a defended detector's folder keeps it); returns its name
        there, a file or a folder, from which the scorer of this name reads the same model back."""


@runtime_checkable
class JointScorer(Scorer, Protocol):
    """A scorer that reads a text's neighbouring candidates together."""

    def best_reading(self, text: str, candidates: Sequence[Candidate], costs: Sequence[float]) -> list[int]:
        """The indices of the candidates to read back: the reading of ``text`` whose log probability less
        the costs of the candidates it reads back is highest."""


class NgramScorer:
    """A character n-gram model's gain: the log probability of the characters the candidate changes and of
    those whose history it changes, read back against as written. ``model``: a file of ``cloak fit-lm``
    ("": the one mmcloak ships, fitted on COLD's training posts and SWSR's comments), or ``lm``, a model in
    memory (one ``UnveilTransformer`` fitted), instead."""

    name = "ngram"

    def __init__(self, model: str = "", lm: CharNgramLM | None = None) -> None:
        self.model, self.lm, self.given = model, lm, lm is not None

    def __getstate__(self) -> dict:  # a worker loads a file again rather than receive its tables
        return {**self.__dict__, "lm": self.lm if self.given else None}

    def prepare(self) -> None:
        if self.lm is None:
            self.lm = shared_lm(self.model)

    @property
    def reach(self) -> int:
        self.prepare()
        return self.lm.order - 1

    def save(self, directory: str) -> str:
        """A copy of its model file, byte for byte (of the one shipped, for the default)."""
        write_atomic(os.path.join(directory, MODEL_FILE), model_bytes(self.model or None))
        return MODEL_FILE

    def gains(self, text: str, candidates: Sequence[Candidate]) -> list[float]:
        self.prepare()
        lm, reach = self.lm, self.lm.order - 1
        padded = BOS + text + EOS
        written: dict[tuple[int, int], float] = {}
        gains = []
        for c in candidates:
            start, end = c.start + 1, c.end + 1  # in the padded text
            left, right = padded[max(0, start - reach):start], padded[end:end + reach]
            if (start, end) not in written:
                written[start, end] = lm.span_logprob(left + padded[start:end] + right, len(left),
                                                      len(left) + end - start + len(right))
            read = left + c.dst + right
            gains.append(lm.span_logprob(read, len(left), len(read)) - written[start, end])
        return gains

    def gains_batch(self, items: Sequence[tuple[str, Sequence[Candidate]]]) -> list[list[float]]:
        return [self.gains(text, candidates) for text, candidates in items]

    def best_reading(self, text: str, candidates: Sequence[Candidate], costs: Sequence[float]) -> list[int]:
        self.prepare()
        return best_reading(self.lm, text, candidates, costs)


@functools.cache
def shared_lm(model: str) -> CharNgramLM:
    """The n-gram model of a file of ``cloak fit-lm`` ("": the one shipped), loaded once a process and shared
    by every unveiler using it (and by ``bench.unveil_tuning``, which reads posts as they do)."""
    return CharNgramLM.load(model or None)


_SCORERS: dict[str, type] = {"ngram": NgramScorer}


def register_scorer(cls: type) -> type:
    """Register a scorer class under its ``name`` (a class decorator, for scorers of your own)."""
    if not getattr(cls, "name", ""):
        raise ValueError(f"{cls.__name__} needs a class attribute `name`")
    _SCORERS[cls.name] = cls
    return cls


@functools.cache
def _entry_points() -> dict:
    from importlib.metadata import entry_points

    return {entry.name: entry for entry in entry_points(group=ENTRY_POINTS)}


def available_scorers() -> list[str]:
    """The scorers' names: registered ones and those installed packages offer."""
    return sorted({*_SCORERS, *_entry_points()})


def make_scorer(name: str, model: str = "") -> Scorer:
    """The scorer called ``name``, for ``model`` (its file, folder or hub name; "" for its default)."""
    if name not in _SCORERS:
        entry = _entry_points().get(name)
        if entry is None:
            raise unknown_key(name, available_scorers(), "unveil", kind="scorer")
        _SCORERS[name] = entry.load()
    return _SCORERS[name](model)
