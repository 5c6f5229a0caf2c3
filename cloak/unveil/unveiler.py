"""The Unveiler: a cloaked text -> the text with its cloaks read back, and an edit for each.

Three steps. Characters that need no context are read back at once (invisible characters, full-width
letters, traditional and variant forms: ``cloak.unveil.normalise``). The matching stage lists every place
that may hide a term, by sound, initials, the ops' literal forms and noise (``cloak.unveil.index``). A
context scorer weighs each: a candidate is read back where the text reads likelier with it, by more than
``threshold`` (natural log), and more or less by its reader's prior and for a cloak heard only through a
confusion or of a one-character term (``PRIORS``, ``FUZZY``, ``SINGLE``): its cost. The n-gram scorer
reads neighbouring candidates together, choosing the reading of the text whose log probability less the
costs of what it reads back is highest (``cloak.unveil.lattice``); a scorer that cannot (a masked
language model) reads them back in rounds, the best first among overlapping ones. Clean text stays as it
is wherever no reading clears the bar.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..common.io import file_sha256, write_atomic
from ..edits import Edit, compose_edits, splice
from ..common.params import Interval, Satisfies, param, parse_spec, spec_of, unknown_key, validate_fields
from ..perturber import Cloaked
from ..targets import Lexicon
from .index import Candidate, TermIndex, changed_span
from .normalise import READERS as CHARACTER_READERS
from .normalise import normalise
from .scorers import JointScorer, Scorer, make_scorer

# What each family reads back (the readers name the edits: unveil:homophone ...)
FAMILIES = {"sound": ("homophone", "pinyin", "abbrev"), "shape": ("split", "similar"), "emoji": ("emoji",),
            "script": ("traditional", "variant"), "typography": ("zerowidth", "fullwidth", "noise"),
            "english": ("english",), "order": ("shuffle",)}
DEFAULT_FAMILIES = "sound+shape+emoji+script+typography+english+order"
# The threshold, and what a candidate must gain beyond it (natural log), chosen on cloaks of COLD dev posts
# (python -m bench.unveil --tune), never on the test posts the benchmark reports: this much for each
# syllable heard only through a confusion (n/l, h/f, -ng/-n, ei/ai), this much for a term of one character
# (骂, 事), whose homophones are everywhere, and a prior for each reader (what clean text rarely holds,
# such as split characters or emoji standing for a term, needs less). The confusion penalty was chosen on
# cloaks the project did not make, the posts of C²TU's COLD set that are COLD dev posts (python -m
# bench.c2tu_sets), keeping clean COLD dev posts read with mined terms within 0.005 of what 12 kept: 12,
# chosen on the project's own cloaks, which hear few syllables through a confusion, turned down most of theirs.
THRESHOLD = 5.5
FUZZY = 2.0
SINGLE = 2.0
PRIORS: dict[str, float] = {"pinyin": 5.0}
# With balance (the words of every label read back), the threshold chosen the same way on COLD dev cloaked
# by the README's recipe on the offensive terms and on the balanced targets (python -m
# bench.balanced_augmentation): at 5.5 it changed 4% of clean dev posts, at 7.0 2.5%.
BALANCE_THRESHOLD = 7.0
MEMO = 100_000  # texts whose reading is remembered (a defended detector is asked the same texts often)
# What a saved unveiler's folder holds (Unveiler.save), beside its scorer's model
SETTINGS_FILE = "unveiler.json"
TERMS_FILE = "terms.tsv"


class Unveiled(Cloaked):
    """One text read back: ``text`` is ``source`` (as written, cloaked) with ``edits`` applied, each
    restoring what a cloak hid (``op`` ``unveil:READER``, ``src`` the cloak, ``dst`` what it hid)."""

    __slots__ = ()


@dataclass
class Unveiler:
    """Read cloaks back: homophones, pinyin and initials, split characters, look-alikes, emoji, traditional
    and variant forms, English, swapped characters, invisible and full-width characters and noise.

    families: ``+``-joined, of sound, shape, emoji, script, typography, english, order (see ``FAMILIES``);
    targets, lexicon, mine_from: the terms to read back, chosen as ``cloak perturb`` chooses what to cloak
    (``--targets lexicon|mined|lexicon+mined``, ``--lexicon FILE``, ``--mine-from FILE``);
    balance: with mined targets, the words that mark the other labels too (``cloak.mining.build_every_label_targets``);
    common: pinyin written out may also be read as one of this many common words (0: terms only);
    scorer: the context scorer (``ngram``, or one a package registers: ``mlm``); model: its file, folder or
    hub name ("" for its default); threshold: the log-probability gain a candidate needs (None: ``THRESHOLD``,
    or ``BALANCE_THRESHOLD`` with balance; ``bar`` is the one in use); fuzzy, single: what a candidate heard
    through a confusion (per syllable) or hiding a one-character term must gain beyond it (``cost``).

    >>> u = Unveiler()
    >>> u("白人都是垃圾").text          # clean text stays as it is
    '白人都是垃圾'
    """

    families: str = param(DEFAULT_FAMILIES, (
        "What to read back, joined by +: sound (homophones, pinyin, initials), shape (split characters, "
        "look-alikes), emoji, script (traditional, variant), typography (zero-width, full-width, noise), english, "
        "order (swapped characters)."), metavar="F+F...")
    targets: str = param("lexicon", (
        "The terms to read back, chosen as cloak perturb chooses what to cloak: the lexicon's, the terms most "
        "associated with the offensive label in --mine-from's records, or both."),
        metavar="lexicon[:FILE]|mined|lexicon+mined")
    lexicon: str | None = param(None, "The lexicon instead of the default one (what `cloak mine-terms` writes).",
                                metavar="FILE", file=True)
    mine_from: str | None = param(None, "--targets mined / lexicon+mined: the labelled records to mine (refused "
                                        "with other targets).", metavar="FILE", file=True)
    balance: bool = param(False, (
        "With mined targets, also read back the words that mark the non-offensive posts (mined the same way), "
        "so that a post whose own words are cloaked too is not read back to its offensive terms alone. It "
        "leaves fewer clean posts as they are."))
    common: int = param(20_000, "Pinyin written out may also be read as one of the N commonest words (0: terms "
                                "only).", metavar="N")
    scorer: str = param("ngram", "The context scorer: ngram (a character n-gram model, no weights) or one a package "
                                 "adds (mmbert's mlm: a masked language model).", metavar="NAME")
    model: str | None = param(None, "The scorer's model: an n-gram file of `cloak fit-lm`, a masked language "
                                    "model's folder or hub name [default: the n-gram model mmcloak ships, fitted on "
                                    "COLD's training posts and SWSR's comments].", metavar="FILE|DIR|NAME")
    threshold: float | None = param(None, (
        "How much likelier (natural log) a text must read with a cloak read back [default: 5.5, with balance 7.0: "
        "chosen on COLD dev cloaks for the default scorer; choose your own for another]."), metavar="NATS")
    fuzzy: float = param(FUZZY, (
        "What a cloak must gain beyond the threshold for each syllable heard only through a confusion (n/l, "
        "h/f, zh/z, -ng/-n, ei/ai) [default: 2, chosen on cloaks of C²TU's COLD dev posts, which lean on them]."),
        metavar="NATS")
    single: float = param(SINGLE, "What a cloak of a one-character term (骂, 事) must gain beyond the threshold.",
                          metavar="NATS")
    name: ClassVar[str] = "unveil"
    _parameter_constraints: ClassVar[dict] = {
        "common": Interval(int, 0), "targets": Satisfies(lambda t: t.partition(":")[0] != "all",
                                                         "lexicon[:FILE], mined or lexicon+mined")}

    def __post_init__(self) -> None:
        validate_fields(self, "unveil")
        for family in self.families.split("+"):
            if family not in FAMILIES:
                raise unknown_key(family, list(FAMILIES), "unveil", kind="family")
        from ..mining import mines, refuse_unused_mine_from

        if self.balance and not mines(self.targets):
            raise ValueError(f"unveil: balance reads back the words mined from labelled posts beside the terms; "
                             f"targets {self.targets} mine none (give targets mined or lexicon+mined)")
        refuse_unused_mine_from(self.targets, self.mine_from, ("targets", "mine_from"), prefix="unveil: ")
        self.readers = frozenset(r for f in self.families.split("+") for r in FAMILIES[f])
        self._scorer: Scorer = make_scorer(self.scorer, self.model or "")
        self._joint: bool | None = None  # whether the scorer is a JointScorer, known on first use
        self._targets: Lexicon | None = None  # the terms, with where each came from (mined, the lexicon's category)
        self._index: TermIndex | None = None
        self._memo: dict[str, Unveiled] = {}
        self._digest: str | None = None

    @classmethod
    def from_spec(cls, spec: str, kind: str = "defence") -> Unveiler:
        """An unveiler from its spec, ``unveil[:key=value...]`` (what ``spec()`` gives); ``kind`` names where
        the spec was given in its errors (``--settings`` of ``cloak unveil``, else a detector's defence)."""
        return parse_spec(spec, {cls.name: cls}, kind)

    def spec(self) -> str:
        """Its settings as one string, e.g. ``unveil:families=sound+shape:threshold=1.5``; ``from_spec`` reads
        it back (the settings a defended detector records)."""
        return spec_of(self)

    def save(self, directory: str) -> list[str]:
        """Write what it reads back with into ``directory``, so that ``Unveiler.load(directory)`` reads every text
        as this one does wherever the folder is moved, and whatever becomes of the files it was made from: its
        terms as a lexicon file (``terms.tsv``; mined ones are mined now), its scorer's model, and
        ``unveiler.json``, the spec that reads them (relative to the folder: ``unveil:lexicon=terms.tsv:
        model=ngram.lm.gz:threshold=5.5``) and the spec it was made from. Returns the files written, relative
        to ``directory`` (``/``-separated), for a saved victim to hash."""
        os.makedirs(directory, exist_ok=True)
        self._term_index()
        self._targets.save(os.path.join(directory, TERMS_FILE))
        model = self._scorer.save(directory)
        # the terms are those read back whatever targets, balance and mine_from chose; balance's threshold kept
        saved = dataclasses.replace(self, targets="lexicon", lexicon=TERMS_FILE, mine_from=None, balance=False,
                                    threshold=self.bar, model=model)
        settings = {"spec": saved.spec(), "made_from": self.spec()}
        write_atomic(os.path.join(directory, SETTINGS_FILE),
                     (json.dumps(settings, indent=1, ensure_ascii=False) + "\n").encode())
        return [SETTINGS_FILE, TERMS_FILE, *_files_of(directory, model)]

    @classmethod
    def load(cls, directory: str) -> Unveiler:
        """The unveiler ``save`` wrote into ``directory``, reading its terms and model there."""
        path = os.path.join(directory, SETTINGS_FILE)
        if not os.path.isfile(path):
            raise ValueError(f"{directory}: no {SETTINGS_FILE}, so not a saved unveiler (Unveiler.save writes one)")
        with open(path, encoding="utf-8") as f:
            saved = cls.from_spec(json.load(f)["spec"])
        return dataclasses.replace(saved, lexicon=os.path.join(directory, saved.lexicon),
                                   model=os.path.join(directory, saved.model))

    def digest(self) -> str:
        """SHA-256 of what it reads back with, as ``save`` writes it (settings, terms and model): two unveilers of
        one digest read every text alike. Mines its terms (once)."""
        if self._digest is None:
            with tempfile.TemporaryDirectory() as folder:
                files = self.save(folder)
                listed = "".join(f"{name} {file_sha256(os.path.join(folder, name))}\n" for name in sorted(files))
            self._digest = hashlib.sha256(listed.encode()).hexdigest()
        return self._digest

    @property
    def bar(self) -> float:
        """The threshold in use: ``threshold``, or where none is given the default for ``balance``."""
        if self.threshold is not None:
            return self.threshold
        return BALANCE_THRESHOLD if self.balance else THRESHOLD

    @property
    def terms(self) -> list[str]:
        """The terms it reads cloaks back to (``targets``, ``lexicon``, ``mine_from``, ``balance``; mined on
        first use)."""
        return list(self._term_index().terms)

    def settings(self) -> dict:
        """Its settings as a mapping (every field, defaults included)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_memo": {}}

    def prepare(self) -> Unveiler:
        """Mine or read the terms, build the automata and load the scorer now (else on first use)."""
        self._term_index().prepare()
        self._scorer.prepare()
        return self

    def choose_terms(self, labelled: Iterable[dict] | None = None) -> Lexicon:
        """The terms to read back, as ``targets``, ``lexicon`` and ``mine_from`` choose them; ``labelled``:
        records to mine instead of ``mine_from``'s (those ``UnveilTransformer.fit`` is given)."""
        from ..mining import build_every_label_targets, build_targets

        build = build_every_label_targets if self.balance else build_targets
        return build(self.targets, lexicon=self.lexicon, labelled=self.mine_from if labelled is None else labelled)

    def use(self, terms: Sequence[str], scorer: Scorer | None = None) -> Unveiler:
        """Read back ``terms`` instead of choosing them, and weigh them with ``scorer`` where given instead of
        the one ``scorer`` and ``model`` name: what a fitted ``UnveilTransformer`` learned. Returns itself."""
        self._targets = Lexicon(terms, name="terms")
        self._index = TermIndex(self._targets.terms, self.readers, self.common)
        if scorer is not None:
            self._scorer, self._joint = scorer, None
        self._memo.clear()
        return self

    def _term_index(self) -> TermIndex:
        """The index of the terms, mined or read on first use (its automata are built by ``prepare``)."""
        if self._index is None:
            self._targets = self.choose_terms()
            self._index = TermIndex(self._targets.terms, self.readers, self.common)
        return self._index

    def candidates(self, text: str) -> tuple[str, list[Edit], list[Candidate]]:
        """The matching stage alone: the text with its characters read back, their edits, and the places
        of it that may hide a term (before the scorer has weighed them)."""
        self.prepare()
        view, edits = normalise(text, self.readers & frozenset(CHARACTER_READERS))
        return view, edits, self._index.candidates(view)

    def gains(self, text: str, candidates: Sequence[Candidate]) -> list[float]:
        """The context scorer's gain (natural log) for each of ``candidates`` in ``text``: what ``margin``
        weighs against the bar (``candidates`` gives both)."""
        self.prepare()
        return self._scorer.gains_batch([(text, candidates)])[0]

    def __call__(self, text: str) -> Unveiled:
        """Read back the cloaks of one text."""
        return self.unveil_batch([text])[0]

    def unveil_batch(self, texts: Sequence[str]) -> list[Unveiled]:
        """Read back the cloaks of many texts, the scorer asked for all of them at once (a masked language
        model scores them in batches)."""
        for text in texts:
            if not isinstance(text, str):
                raise TypeError(f"text must be str, not {type(text).__name__}")
        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        found = [self.candidates(t) for t in todo]
        read = self._read_back({k: (view, candidates) for k, (view, _, candidates) in enumerate(found) if candidates})
        if len(self._memo) + len(todo) > MEMO:
            self._memo.clear()
        for k, text in enumerate(todo):
            view, normalised, _ = found[k]
            now, edits = read.get(k, (view, []))
            self._memo[text] = Unveiled(now, text, compose_edits(text, normalised, edits) if normalised else edits)
        return [self._memo[t] for t in texts]

    def cost(self, candidate: Candidate) -> float:
        """What ``candidate``'s gain must clear to be read back, at this unveiler's settings (``cost``)."""
        return cost(candidate, self.bar, fuzzy=self.fuzzy, single=self.single)

    def _read_back(self, pending: dict[int, tuple[str, list[Candidate]]]) -> dict[int, tuple[str, list[Edit]]]:
        """Each text (by its key) as read back, with its edits: by its likeliest reading where the scorer can
        weigh candidates together, else in rounds."""
        if self._joint is None:  # once: a protocol's isinstance is slow, and reading its reach loads the model
            self._joint = isinstance(self._scorer, JointScorer)
        if self._joint:
            return self._read_back_jointly(pending)
        return self._read_back_in_rounds(pending)

    def _read_back_jointly(self, pending: dict[int, tuple[str, list[Candidate]]]) -> dict[int, tuple[str, list[Edit]]]:
        """Read back the candidates of the text's likeliest reading, each at its ``cost``."""
        done: dict[int, tuple[str, list[Edit]]] = {}
        for k, (text, candidates) in pending.items():
            chosen = self._scorer.best_reading(text, candidates, [self.cost(c) for c in candidates])
            if chosen:
                edits = sorted((_trimmed(candidates[j], text) for j in chosen), key=lambda e: e.start)
                done[k] = (splice(text, edits), edits)
        return done

    def _read_back_in_rounds(self, pending: dict[int, tuple[str, list[Candidate]]]
                             ) -> dict[int, tuple[str, list[Edit]]]:
        """Weigh the candidates of each text and read back those that clear the bar, in rounds: a candidate
        next to one read back this round is weighed again in the next, in the text as now read (a post
        whose every term is cloaked reads better once its surest cloaks are read back)."""
        done: dict[int, tuple[str, list[Edit]]] = {}  # each text as now read, and the edits of it so far
        given = {k: text for k, (text, _) in pending.items()}
        while pending:
            keys = list(pending)
            gains = self._scorer.gains_batch([pending[k] for k in keys])
            for k, g in zip(keys, gains):
                text, candidates = pending.pop(k)
                taken, deferred = _choose(candidates, g, [self.cost(c) for c in candidates], reach=self._scorer.reach)
                if not taken:
                    continue
                edits = sorted((_trimmed(c, text) for c in taken), key=lambda e: e.start)
                now = splice(text, edits)
                done[k] = (now, compose_edits(given[k], done[k][1], edits) if k in done else edits)
                if deferred:
                    pending[k] = (now, _moved(deferred, edits))
        return done


def _files_of(directory: str, name: str) -> list[str]:
    """The files of ``name`` in ``directory`` (itself, or every file under it for a folder), ``/``-separated."""
    path = os.path.join(directory, name)
    if not os.path.isdir(path):
        return [name]
    return sorted(os.path.relpath(os.path.join(root, file), directory).replace(os.sep, "/")
                  for root, _, files in os.walk(path) for file in files)


def cost(candidate: Candidate, threshold: float, *, fuzzy: float = FUZZY, single: float = SINGLE,
         priors: Mapping[str, float] = PRIORS) -> float:
    """What a candidate's gain must clear to be read back: the threshold, its reader's prior, ``fuzzy`` for
    each syllable heard only through a confusion and ``single`` for a one-character term; the penalties are
    the defaults unless given (``bench.unveil_tuning`` tries others)."""
    return (threshold + priors.get(candidate.reader, 0.0) + fuzzy * candidate.fuzzy
            + (single if len(candidate.dst) == 1 else 0.0))


def margin(candidate: Candidate, gain: float, threshold: float, *, fuzzy: float = FUZZY, single: float = SINGLE,
           priors: Mapping[str, float] = PRIORS) -> float:
    """How far a candidate's gain clears its ``cost`` (read back where above 0)."""
    return gain - cost(candidate, threshold, fuzzy=fuzzy, single=single, priors=priors)


def _choose(candidates: list[Candidate], gains: list[float], costs: list[float],
            reach: int) -> tuple[list[Candidate], list[Candidate]]:
    """(the candidates read back this round: the best that clear the bar, none overlapping a better one nor
    within ``reach`` characters of one read back; those to weigh again next round: the rest that neither
    overlap one read back nor lie beyond reach of all of them, whose gain was weighed in a context about to
    change)."""
    ranked = sorted(((g - k, c) for c, g, k in zip(candidates, gains, costs)),
                    key=lambda mc: (-mc[0], mc[1].start, mc[1].end, mc[1].dst))
    taken: list[Candidate] = []
    waiting: list[Candidate] = []  # better candidates left for the next round
    deferred: list[Candidate] = []
    for m, c in ranked:
        if any(c.start < t.end and t.start < c.end for t in taken):
            continue
        near = any(c.start < t.end + reach and t.start - reach < c.end for t in taken)
        if m > 0 and not near and not any(c.start < w.end and w.start < c.end for w in waiting):
            taken.append(c)
        elif near or m > 0:
            deferred.append(c)
            if m > 0:
                waiting.append(c)
    return taken, [c for c in deferred if not any(c.start < t.end and t.start < c.end for t in taken)]


def _moved(candidates: list[Candidate], edits: list[Edit]) -> list[Candidate]:
    """The candidates placed in the text the edits made (none overlaps an edit)."""
    moved = []
    for c in candidates:
        shift = sum(len(e.dst) - (e.end - e.start) for e in edits if e.end <= c.start)
        moved.append(c._replace(start=c.start + shift, end=c.end + shift))
    return moved


def _trimmed(c: Candidate, text: str) -> Edit:
    """The candidate as an edit of only what it changes (黑任难又 -> 黑人男友 is 任难又 -> 人男友)."""
    src = text[c.start:c.end]
    head, end = changed_span(src, c.dst)
    tail = len(src) - end
    return Edit(f"unveil:{c.reader}", c.start + head, c.end - tail, src[head:end], c.dst[head:len(c.dst) - tail])
