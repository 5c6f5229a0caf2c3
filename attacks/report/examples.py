"""The posts shown as examples: a few a victim, each one an attack flipped, with its edits marked."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np

from cloak.edits import invert_edits, output_spans

from ..evaluate import outcome_file
from .results import Results, declared

MIN_EXAMPLE_CHARS, MAX_EXAMPLE_CHARS = 15, 160  # the posts shown as examples, when there are such


def examples_of(result: Results, victim: str, attacks: Sequence[str], limit: int) -> list[dict]:
    """Up to ``limit`` posts the victim got right and an attack flipped, one per attack, in the order the
    attacks declare (the searches first: the most damaging attack, which the cloak ops would otherwise crowd
    out; then the cloak attacks, the most damaging first; none of an attack that edits no text), and no
    post twice, each the shortest of at least ``MIN_EXAMPLE_CHARS`` characters: the original and the
    adversarial text as segments, the edited ones marked with their op."""
    entry = result.summary["victims"][victim]
    if not os.path.isfile(os.path.join(result.path, victim, "clean.jsonl")):
        return []
    clean = result.outcomes(victim, "clean.jsonl")
    order = {a: declared(result.summary["attacks"][a]).examples for a in attacks if a in result.summary["attacks"]}
    chosen: list[dict] = []
    seen: set = set()
    for attack in sorted((a for a, place in order.items() if place is not None), key=order.get):
        if len(chosen) >= limit:
            break
        path = os.path.join(result.path, victim, outcome_file(attack))
        if "skipped" in entry["attacks"].get(attack, {"skipped": ""}) or not os.path.isfile(path):
            continue
        best = _shortest_flipped(path, clean, seen)
        if best:
            original, outcome, before = best
            seen.add(outcome["id"])
            label = outcome["label"]
            chosen.append({"attack": attack, "id": outcome["id"], "label": label,
                           "clean_p": before["probs"][label], "attacked_p": outcome["probs"][label],
                           "queries": outcome.get("queries"), "edits": outcome["edits"],
                           "original": source_segments(original, outcome["edits"]),
                           "adversarial": output_segments(outcome["text"], outcome["edits"])})
    return chosen


def _shortest_flipped(path: str, clean: list[dict], seen: set) -> tuple[str, dict, dict] | None:
    """(original text, outcome, clean outcome) of the post of an outcome file best shown: edited, flipped,
    not shown yet, not too long, the shortest of those long enough."""
    best = None
    with open(path, encoding="utf-8") as f:
        for line, before in zip(f, clean):
            outcome = json.loads(line)
            if not outcome["edits"] or not _flipped(outcome["label"], before["probs"], outcome["probs"]):
                continue
            original = invert_edits(outcome["text"], outcome["edits"])
            if outcome["id"] in seen or len(original) > MAX_EXAMPLE_CHARS:
                continue
            if best is None or _example_rank(original) < _example_rank(best[0]):
                best = (original, outcome, before)
    return best


def _example_rank(text: str) -> tuple:
    """Short posts read fastest, but a post of a few characters shows little of how posters write."""
    return (len(text) < MIN_EXAMPLE_CHARS, len(text))


def _flipped(label: int, before: list, after: list | None) -> bool:
    if after is None or any(p is None for p in after):
        return False
    return int(np.argmax(before)) == label and int(np.argmax(after)) != label


def source_segments(text: str, edits: Sequence[dict]) -> list[dict]:
    """The original text cut into plain and edited pieces ({"text", "op"}; op None where untouched)."""
    return _segments(text, [(e["start"], e["end"], e["op"]) for e in edits])


def output_segments(text: str, edits: Sequence[dict]) -> list[dict]:
    return _segments(text, [(start, end, edit.op) for edit, start, end in output_spans(edits)])


def _segments(text: str, spans: Sequence[tuple[int, int, str]]) -> list[dict]:
    pieces, at = [], 0
    for start, end, op in sorted(spans):
        if start > at:
            pieces.append({"text": text[at:start], "op": None})
        pieces.append({"text": text[start:end], "op": op})
        at = end
    if at < len(text):
        pieces.append({"text": text[at:], "op": None})
    return pieces

