"""How much of a cloak an unveiler reads back: the terms a cloak changed, found again in the unveiled text as
they were (``bench.unveil``, ``bench.unveil_c2tu``)."""
from __future__ import annotations

import difflib

from bench.common import share_interval
from cloak.edits import output_spans
from cloak.targets import Lexicon


def cloaked_terms(lexicon: Lexicon, record: dict) -> list[tuple[int, int]]:
    """The spans of the source text's terms that the cloak changed (the targets ``cloak perturb`` cloaked)."""
    edits = record["cloak"]["edits"]
    return [(s, e) for s, e in lexicon.find(record["source_text"])
            if any(s <= x["start"] and x["end"] <= e and (x["start"] < e or x["start"] == s) for x in edits)]


def cloaked_spans(lexicon: Lexicon, record: dict) -> list[tuple[int, int, str]]:
    """Each term the cloak changed (``cloaked_terms``, in their order): its span in the cloaked text, and the term."""
    source, spans = record["source_text"], output_spans(record["cloak"]["edits"])
    found = []
    for s, e in cloaked_terms(lexicon, record):
        shift_start = sum(len(x.dst) - (x.end - x.start) for x, _, _ in spans if x.end <= s and x.start < s)
        shift_end = sum(len(x.dst) - (x.end - x.start) for x, _, _ in spans if x.start < e)
        found.append((s + shift_start, e + shift_end, source[s:e]))
    return found


def read_back(source: str, unveiled: str, start: int, end: int) -> bool:
    """Whether ``source[start:end]`` stands in ``unveiled`` as it was: the alignment of the two texts keeps
    each of its characters and inserts nothing inside it."""
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, source, unveiled, autojunk=False).get_opcodes():
        if tag != "equal" and (i1 < end and start < i2 or (tag == "insert" and start < i1 < end)):
            return False
    return True


def terms_read_back(lexicon: Lexicon, cloaked: dict, unveiled: str) -> list[tuple[str, bool]]:
    """Each term the cloak changed, and whether ``unveiled`` holds it as it was."""
    source = cloaked["source_text"]
    return [(source[s:e], read_back(source, unveiled, s, e)) for s, e in cloaked_terms(lexicon, cloaked)]


def restoration(lexicon: Lexicon, cloaked: list[dict], unveiled: list[dict]) -> dict:
    """The shares of cloaked terms and of cloaked posts read back exactly, with their intervals."""
    hits, totals, whole = [], [], []
    for c, u in zip(cloaked, unveiled):
        if not c["cloak"]["edits"]:
            continue
        terms = terms_read_back(lexicon, c, u["text"])
        hits.append(sum(hit for _, hit in terms))
        totals.append(len(terms))
        whole.append(int(u["text"] == c["source_text"]))
    return {"terms": share_interval(hits, totals), "posts": share_interval(whole, [1] * len(whole)),
            "posts_cloaked": len(whole)}
