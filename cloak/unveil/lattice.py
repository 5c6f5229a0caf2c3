"""The likeliest reading of a text: which of its candidates to read back together, under a character n-gram model.

Weighing each candidate in the text as written misjudges cloaks that come together: in 黑任难又 (黑人男友)
the model sees 任 beside 难又, not beside 男友, so each cloak's gain is weighed with its neighbours still
cloaked. Here the candidates within the model's reach of each other are decoded together: a beam search
over the lattice of the text as written and each candidate read back, which maximises

    log P(the text as read) - the sum of the costs of the candidates read back

where a candidate's cost is what its gain must clear (the unveiler's threshold, its reader's prior and
penalties). A lone candidate is read back exactly where its gain clears its cost, as the unveiler weighs it
alone. Hypotheses at the same place with the same last ``order - 1`` characters have the same future, so
only the best of them is kept (Viterbi), and at most ``beam`` of them a place. Two readings that score the
same (歧视 read back before 黑人 as written, or 歧视黑人 read back whole: the same text) go to the one whose
candidates cover more of the text, so that a cloaked term is read back as one.
"""
from __future__ import annotations

from collections.abc import Sequence

from .index import Candidate
from .ngram import BOS, EOS, CharNgramLM

BEAM = 8
TIE = 1e-9  # scores closer than this are equal (the same text summed in another order)


def clusters(candidates: Sequence[Candidate], reach: int) -> list[list[int]]:
    """The candidates' indices in groups whose members lie within ``reach`` characters of another of the
    group (what one reads back changes the other's context), each group ordered by start."""
    groups: list[list[int]] = []
    end = None
    for k in sorted(range(len(candidates)), key=lambda k: (candidates[k].start, candidates[k].end)):
        c = candidates[k]
        if end is None or c.start >= end + reach:
            groups.append([])
            end = c.end
        groups[-1].append(k)
        end = max(end, c.end)
    return groups


def best_reading(lm: CharNgramLM, text: str, candidates: Sequence[Candidate], costs: Sequence[float],
                 beam: int = BEAM) -> list[int]:
    """The indices of the candidates to read back (none overlapping): the reading of ``text`` whose log
    probability less the ``costs`` of the candidates it reads back is highest; where none raises it by
    more than its cost, the text as written (no index)."""
    reach = lm.order - 1
    padded = BOS + text + EOS
    chosen: list[int] = []
    for group in clusters(candidates, reach):
        chosen += _decode(lm, padded, [candidates[k] for k in group], [costs[k] for k in group], group, beam)
    return sorted(chosen)


def _decode(lm: CharNgramLM, padded: str, group: list[Candidate], costs: list[float], indices: list[int],
            beam: int) -> list[int]:
    """The best reading of one cluster: a left-to-right beam search from ``reach`` characters before its
    first candidate to ``reach`` characters after its last (in ``padded``, the text between BOS and EOS)."""
    reach = lm.order - 1
    lo, hi = group[0].start + 1, max(c.end for c in group) + 1  # in the padded text
    starting: dict[int, list[int]] = {}
    for j, c in enumerate(group):
        starting.setdefault(c.start + 1, []).append(j)
    # at each place: {the last reach characters as read: (score, characters the candidates read back cover, them)}
    places: dict[int, dict[str, tuple[float, int, tuple[int, ...]]]] = {
        lo: {padded[max(0, lo - reach):lo]: (0.0, 0, ())}}
    gram_logprob = lm.gram_logprob  # one character after a history of at most reach: one n-gram
    for at in range(lo, hi):
        hypotheses = places.pop(at, {})
        kept = sorted(hypotheses.items(), key=lambda h: (-h[1][0], -h[1][1]))[:beam]
        written = padded[at]
        for history, (score, covered, taken) in kept:
            context = history + written
            _extend(places, at + 1, reach, context, (score + gram_logprob(context), covered, taken))
            for j in starting.get(at, ()):
                c = group[j]
                context = history + c.dst
                lp = lm.span_logprob(context, len(history), len(context))  # the candidate read after history
                _extend(places, c.end + 1, reach, context,
                        (score - costs[j] + lp, covered + c.end - c.start, taken + (j,)))
    right = padded[hi:hi + reach]
    ends = [(score + _logprob(lm, history, right), covered, taken)
            for history, (score, covered, taken) in places[hi].items()]
    best = max(ends, key=lambda e: e[0])
    best = max((e for e in ends if e[0] >= best[0] - TIE), key=lambda e: (e[1], -len(e[2]), e[0]))
    return [indices[j] for j in best[2]]


def _extend(places: dict, at: int, reach: int, context: str, hypothesis: tuple[float, int, tuple[int, ...]]) -> None:
    """Add ``hypothesis`` (score, characters covered, candidates taken), whose reading so far ends in
    ``context``, at place ``at``, unless one with the same last ``reach`` characters scores better there (or
    as well, covering as much)."""
    now = context[max(0, len(context) - reach):] if reach else ""
    there = places.setdefault(at, {})
    old = there.get(now)
    if old is None or _better(hypothesis, old):
        there[now] = hypothesis


def _better(new: tuple, old: tuple) -> bool:
    """Whether hypothesis ``new`` beats ``old``: a higher score, or as high covering more."""
    return new[0] > old[0] + TIE or (new[0] >= old[0] - TIE and new[1] > old[1])


def _logprob(lm: CharNgramLM, history: str, read: str) -> float:
    """log P(``read`` | ``history``)."""
    context = history + read
    return lm.span_logprob(context, len(history), len(context))
