"""Targets mined from labelled posts: the terms most associated with the offensive label.

A lexicon written by hand reaches about half of a corpus's offensive posts; posters cloak whatever they
are saying, so the terms worth cloaking are the ones a corpus uses to offend. Each candidate term (a
word of jieba's dictionary, or a run of 1-4 Han characters) is scored by the weighted log-odds ratio
with an informative Dirichlet prior (Monroe, Colaresi and Quinn 2008, "Fightin' Words", Political
Analysis 16(4), §3.5), the field's usual statistic for "which words tell two corpora apart":

    delta_w = log((y_ow + a_w) / (n_o + a_0 - y_ow - a_w)) - log((y_cw + a_w) / (n_c + a_0 - y_cw - a_w))
    var_w   = 1 / (y_ow + a_w) + 1 / (y_cw + a_w)
    z_w     = delta_w / sqrt(var_w)

``y_ow`` / ``y_cw``: the offensive / other posts that hold term w (each post counts a term once: a post
that repeats a word is not more offensive for it), ``n_o`` / ``n_c`` those counts summed over every
term, and the prior ``a_w`` the term's count in both groups together (the corpus is its own background:
a term seen often needs a larger difference to stand out), ``a_0`` its sum. A term is kept when
``z_w`` reaches ``z`` (2.0 by default: p < 0.023, one-sided; z grows with the corpus, and 5,000 posts
give their clearest terms a z of 5 to 10) and at least ``min_count`` offensive posts hold it, unless it
is mostly a fragment of a longer kept term (族歧 of 种族歧视); the default lexicon's terms are kept too. Single characters count only where they stand as words of their own; function
words (stopwords-iso's Chinese list) and phrases that start or end with one (是歧视) are never kept:
cloaking 的 is not what posters do.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from .targets import Lexicon, WordTargets, default_lexicon, load_stopwords

MAX_CHARS = 4  # longest character n-gram; longer dictionary words are candidates as they are
FRAGMENT_SHARE = 0.9  # a term this often inside one longer kept term is a fragment of it
_HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")


@dataclasses.dataclass(frozen=True)
class MinedTerm:
    """A candidate term and the counts behind its score."""

    term: str
    z: float
    offensive: int  # offensive posts holding it
    other: int  # other posts holding it


def candidate_terms(text: str, words: WordTargets | None = None) -> set[str]:
    """The terms a post holds: its dictionary words (jieba's dictionary, leftmost-longest, as ``--targets
    all`` segments; Latin runs lower-cased), single characters among them where they stand as words of
    their own (心 in 恶心 is not a term, 骂 on its own is), and the character n-grams of 2 to 4 of its
    Han runs (posters' slang is mostly not in the dictionary)."""
    found = set()
    for run in _HAN_RUN.findall(text):
        for n in range(2, min(MAX_CHARS, len(run)) + 1):
            found.update(run[i:i + n] for i in range(len(run) - n + 1))
    for start, end in (words or WordTargets()).spans(text):
        word = text[start:end]
        if not word.isdigit():
            found.add(word.lower() if word.isascii() else word)
    return found


def drop_fragments(terms: Sequence[MinedTerm], share: float = FRAGMENT_SHARE) -> list[MinedTerm]:
    """Terms that are not mostly a piece of a longer kept term: 族歧 (543 offensive posts) goes, since 种族歧视
    (538) holds nearly every one of its occurrences; 歧视 (3,040) stays beside 歧视黑人 (621)."""
    most: dict[str, int] = {}  # substring -> the most offensive posts of a longer term holding it
    for t in terms:
        pieces = {t.term[i:j] for i in range(len(t.term)) for j in range(i + 1, len(t.term) + 1)} - {t.term}
        for piece in pieces:
            most[piece] = max(most.get(piece, 0), t.offensive)
    return [term for term in terms if most.get(term.term, -1) < share * term.offensive]


def score_terms(offensive: Counter, other: Counter) -> dict[str, float]:
    """The weighted log-odds z-score of every term (see the module docstring), offensive against other."""
    n_o, n_c = sum(offensive.values()), sum(other.values())
    prior = offensive + other
    a_0 = n_o + n_c
    scores = {}
    for term, a_w in prior.items():
        y_o, y_c = offensive[term], other[term]
        delta = math.log((y_o + a_w) / (n_o + a_0 - y_o - a_w)) - math.log((y_c + a_w) / (n_c + a_0 - y_c - a_w))
        scores[term] = delta / math.sqrt(1 / (y_o + a_w) + 1 / (y_c + a_w))
    return scores


def mine_terms(records: Iterable[dict], *, z: float = 2.0, min_count: int = 5,
               label: int | None = None) -> list[MinedTerm]:
    """The terms of labelled records (label 0: not offensive; any other: offensive) whose z-score reaches
    ``z`` and which at least ``min_count`` of the posts mined hold, the highest z first. The posts mined
    are the offensive ones against the others, or with ``label``, those of that label against the rest
    (label 0: the words that mark non-offensive posts); ``MinedTerm.offensive`` counts the posts mined."""
    words = WordTargets()
    mined, rest = Counter(), Counter()
    labels = set()
    for record in records:
        own = int(record["label"])
        labels.add(own != 0)
        inside = own != 0 if label is None else own == label
        (mined if inside else rest).update(candidate_terms(record["text"], words))
    if labels != {True, False}:
        raise ValueError("mining terms needs offensive (label >= 1) and non-offensive (label 0) posts "
                         "(give labelled posts with --mine-from, or cloak the lexicon's terms: --targets lexicon)")
    scores = score_terms(mined, rest)
    kept = [MinedTerm(t, s, mined[t], rest[t]) for t, s in scores.items()
            if s >= z and mined[t] >= min_count and not is_function_phrase(t, words)]
    return sorted(drop_fragments(kept), key=lambda m: (-m.z, m.term))


def is_function_phrase(term: str, words: WordTargets) -> bool:
    """A function word (什么, 自己: stopwords-iso's Chinese list), or a phrase that starts or ends with a
    one-character function word (是歧视, 心的): what a term is not."""
    stop = load_stopwords("zh")
    if term in stop:
        return True
    spans = words.spans(term)
    return any(e - s == 1 and term[s:e] in stop for s, e in (spans[0], spans[-1])) if len(spans) > 1 else False


def write_terms(path: str, mined: Sequence[MinedTerm], base: Lexicon | None = None) -> int:
    """The mined terms, the highest z first, then ``base``'s others, as a lexicon file (TSV with a
    ``term`` column: ``--lexicon FILE`` and ``--targets lexicon:FILE`` read it back) that also says where
    each term came from and, for a mined one, its z-score and counts. Returns the number of terms."""
    from .common.io import write_atomic

    rows = [(m.term, "mined", f"{m.z:.3f}", str(m.offensive), str(m.other)) for m in mined]
    seen = {m.term for m in mined}
    rows += [(t, (base.categories.get(t) or "lexicon"), "", "", "") for t in (base.terms if base else ())
             if t not in seen]
    lines = ["term\tcategory\tz\toffensive_posts\tother_posts", *("\t".join(r) for r in rows)]
    write_atomic(path, ("\n".join(lines) + "\n").encode())
    return len(rows)


TARGETS = ("lexicon", "mined", "lexicon+mined", "all")
MINED = ("mined", "lexicon+mined")  # the targets that mine labelled records


def mines(spec: str) -> bool:
    """Whether ``--targets spec`` mines labelled records (and so needs them)."""
    return spec.partition(":")[0] in MINED


def refuse_unused_mine_from(targets: str, mine_from: object, names: tuple[str, str] = ("--targets", "--mine-from"),
                            prefix: str = "") -> None:
    """Refuse records to mine given beside ``targets`` that mine none: they would be read for nothing, and
    whoever gave them would take the mined terms to be in use. ``names``: what the caller calls targets and
    mine_from (its options, or its spec's keys); ``prefix`` starts the message."""
    if mine_from is None or mines(targets):
        return
    what, where = names
    raise ValueError(f"{prefix}{where} {mine_from}: only {what} {' or '.join(MINED)} mine labelled records, and "
                     f"{what} {targets} mines none (add {what} lexicon+mined, or leave {where} out)")


def build_targets(spec: str, *, lexicon: str | None = None,
                  labelled: Iterable[dict] | str | os.PathLike | None = None,
                  z: float = 2.0, min_count: int = 5, label: int | None = None) -> Lexicon | str:
    """What to cloak, from a command line's ``--targets`` (``lexicon``, ``mined``, ``lexicon+mined`` or
    ``all``; ``lexicon:FILE`` as ``lexicon`` with ``--lexicon FILE``), ``--lexicon FILE`` (the lexicon
    instead of the default one) and ``--mine-from`` (``labelled``: records, or their JSONL file, read only
    when mining; ``label``: mine that label's own words instead of the offensive posts'). Every command and
    the ``Perturber`` choose their targets here. Returns a ``Lexicon`` (named after what it holds) or
    ``"all"``."""
    kind, _, path = spec.partition(":")
    if kind not in TARGETS or (path and kind != "lexicon"):
        from .common.params import unknown_key

        raise unknown_key(spec, TARGETS, "--targets", kind="targets")
    if path and lexicon and path != lexicon:
        raise ValueError(f"--targets {spec} and --lexicon {lexicon}: give the lexicon once")
    lexicon = path or lexicon
    if lexicon and not os.path.isfile(lexicon):
        raise ValueError(f"lexicon file not found: {lexicon}")
    if kind == "all":
        return "all"
    base = Lexicon.from_file(lexicon) if lexicon else default_lexicon()
    if kind == "lexicon":
        return base
    if labelled is None:
        raise ValueError(f"--targets {kind} mines terms from labelled records: give them (--mine-from FILE; "
                         "mine_from= in Python)")
    labelled = labelled_records(labelled)
    mined = mine_terms(labelled, z=z, min_count=min_count, label=label)
    if not mined and kind == "mined":
        raise ValueError(f"no term reaches z >= {z} in at least {min_count} offensive posts: too few posts to mine")
    terms = {m.term: "mined" for m in mined}
    if kind == "lexicon+mined":
        terms = {**terms, **base.categories}
    name = kind if label is None else f"{kind} of label {label}"
    return Lexicon(terms, terms, name=name if not lexicon else f"{name} ({lexicon})")


def labelled_records(labelled: Iterable[dict] | str | os.PathLike) -> list[dict]:
    """Labelled records, or those of their file (JSONL, CSV, Parquet...: every one needs a label)."""
    if isinstance(labelled, (str, os.PathLike)):
        from .common.formats import read_any_records

        return [r for _, r in read_any_records(os.fspath(labelled), labels=True)]
    return list(labelled)


def build_balanced_targets(spec: str, *, lexicon: str | None = None,
                           labelled: Iterable[dict] | str | os.PathLike | None = None) -> Lexicon:
    """What ``--balance`` cloaks in every post: the offensive posts' terms as ``build_targets`` mines them,
    and the words that mark each other label (its weighted log-odds against the rest, the most marked
    first), as many as make that label's posts hold as many characters of targets on average as the
    offensive posts hold: a non-offensive post is cloaked as often and as heavily as an offensive one,
    its own words among what is cloaked, and a cloaked word is as likely in a post of either label as the
    word itself, so that no cloak tells the labels apart."""
    if labelled is None:
        return build_targets(spec, lexicon=lexicon)  # the error that names what is missing
    records = labelled_records(labelled)
    texts: dict[int, list[str]] = {}
    for r in records:
        texts.setdefault(int(r["label"]), []).append(r["text"])
    targets = build_targets(spec, lexicon=lexicon, labelled=records)
    offensive = [t for label, group in texts.items() if label != 0 for t in group]
    for label in _other_labels(texts):
        ranked = [m.term for m in mine_terms(records, z=0.0, min_count=2, label=label)]
        targets = _enough(ranked, targets, texts[label], offensive, name=f"{targets.name}, balanced")
    return targets


def build_every_label_targets(spec: str, *, lexicon: str | None = None,
                              labelled: Iterable[dict] | str | os.PathLike | None = None) -> Lexicon:
    """What ``cloak unveil --balance`` reads back: the offensive posts' terms as ``build_targets`` mines
    them, and the words that mark each other label, mined the same way (the same z-score and count). Read
    back to the offensive terms alone, a post whose own words are cloaked too gains offensive terms and
    keeps its other words cloaked, and reads as more offensive than it was."""
    if labelled is None:
        return build_targets(spec, lexicon=lexicon)  # the error that names what is missing
    records = labelled_records(labelled)
    targets = build_targets(spec, lexicon=lexicon, labelled=records)
    terms = dict(targets.categories)
    for label in _other_labels({int(r["label"]) for r in records}):
        terms.update({m.term: f"label {label}" for m in mine_terms(records, label=label) if m.term not in terms})
    return Lexicon(terms, terms, name=f"{targets.name}, every label")


def _other_labels(labels: Iterable[int]) -> list[int]:
    """The labels whose own words are mined beside the offensive posts' terms: 0 of two labels (the
    offensive terms are label 1's), every label of more (the offensive terms mark no one of them)."""
    labels = sorted(set(labels))
    return [label for label in labels if label == 0 or len(labels) > 2]


def _held(terms: Lexicon, texts: list[str]) -> float:
    """How many characters of the terms the texts hold, on average (what the ops cloak)."""
    return sum(e - s for t in texts for s, e in terms.find(t)) / max(1, len(texts))


def _enough(ranked: list[str], base: Lexicon, texts: list[str], offensive: list[str], name: str) -> Lexicon:
    """The base's terms and the fewest of ``ranked`` (in order) with which ``texts`` hold as many characters
    of them on average as the ``offensive`` texts hold (all of ``ranked`` if never): a binary search."""
    def lexicon(k: int) -> Lexicon:
        terms = {**{t: "mined" for t in ranked[:k] if t not in base}, **base.categories}
        return Lexicon(terms, terms, name=name)

    low, high = 0, len(ranked)
    while low < high:
        middle = (low + high) // 2
        candidate = lexicon(middle)
        if _held(candidate, texts) >= _held(candidate, offensive):
            high = middle
        else:
            low = middle + 1
    return lexicon(low)


def describe_targets(targets: Lexicon | str) -> dict:
    """What a run cloaked, for its settings: the kind of targets, how many terms, how many of them mining
    added to the lexicon, and their SHA-256 (two runs with the same description cloaked the same terms)."""
    if isinstance(targets, str):
        return {"targets": targets}
    digest = hashlib.sha256("\n".join(targets.terms).encode()).hexdigest()
    return {"targets": targets.name, "terms": len(targets.terms),
            "mined": sum(c == "mined" for c in targets.categories.values()), "terms_sha256": digest}
