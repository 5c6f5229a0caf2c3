"""The search attack: untargeted against the gold label, greedy, query-budgeted (the split of
TextAttack, Morris et al. 2020: transformation, constraints, search).

After TextAttack's ``GreedyWordSwapWIR``: the post's words (jieba's, protected spans left alone) that
some op can change are ranked by importance and visited in that order. ``importance`` says how:
``deletion`` asks the victim for the post with each word deleted (a query a word) and ranks the words
by how far that lowers p(gold); ``gradient`` ranks them by the victim's ``saliency`` (the gradient of
the loss over each word's token embeddings: one pass a post, counted as one query), for victims with
input embeddings; ``auto`` (the default) takes the gradient where the victim has one. At each
word the ops' candidates (``Op.candidates``, the most plausible first, the ops taking turns) are
scored ``chunk`` at a time, the most plausible first, until one flips the label, and the one that
lowers p(gold) most is kept if it lowers it at all. The search stops when the label flips (a
success), when the words run out (a failure), or when the next query would pass ``query_budget``
(a failure).

Queries are counted as TextAttack counts them: every text the victim scores, the deletions included
(TextAttack does not count its gradient pass; we count it as one query);
the clean prediction, which the evaluator has already made, is not counted again. A post the victim
already gets wrong is skipped (no queries). Edits are kept in the coordinates of the original post,
so the adversarial text is always ``apply_edits(original, edits)``.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Generator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from cloak import Perturber, apply_edits, available_ops, parse_ops
from cloak.edits import Edit
from cloak.params import InstanceOf, Interval, Options, validate_fields
from cloak.targets import load_stopwords

from .attack import Outcome, ReportedAs, register_attack
from .fgm import NotDifferentiable
from .victims.base import Victim


@dataclasses.dataclass
class SearchAttack:
    """Greedy word-importance search over the candidates of ``ops`` (default: every op)."""

    kind: ClassVar[str] = "search"
    # its flipped posts before the cloaks': one search, which a dozen cloak attacks would crowd out
    reported_as: ClassVar[ReportedAs] = ReportedAs(figure="counts", examples=0, varies="ops")

    ops: str = ""
    query_budget: int = 200
    max_candidates: int = 10
    chunk: int = 4
    importance: str = "auto"
    stopwords: str = "none"
    _parameter_constraints = {"query_budget": Interval(int, 1), "max_candidates": Interval(int, 1),
                              "chunk": Interval(int, 1), "importance": Options("auto", "deletion", "gradient"),
                              "stopwords": InstanceOf(str)}

    def __post_init__(self) -> None:
        validate_fields(self, "search attack")
        self.op_list = parse_ops(self.ops or ",".join(available_ops()))
        self.stopword_set = load_stopwords(self.stopwords)
        # the spans: jieba's words, protected spans dropped; prepare() loads the ops' tables and the word
        # matcher (1 s) now rather than inside the first attack
        self.words = Perturber(ops=self.op_list, targets="all", rate=1.0).prepare()

    @property
    def name(self) -> str:
        return "search" + (f":{self.ops.replace(',', '+')}" if self.ops else "")

    def settings(self) -> dict:
        return {"kind": "search", "ops": self.ops or "all", "query_budget": self.query_budget,
                "max_candidates": self.max_candidates, "chunk": self.chunk, "importance": self.importance,
                "stopwords": self.stopwords}

    def skip_reason(self, facts: dict) -> str | None:
        return None  # every victim answers queries

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> list[SearchAttack]:
        """One search with every op of ``--ops`` at once (``a+b`` counts as its ops)."""
        ops = ",".join(dict.fromkeys(o for m in (options["ops"] or "").split(",") for o in m.split("+") if o.strip()))
        return [cls(ops=ops, query_budget=options["query_budget"], max_candidates=options["max_candidates"],
                    importance=options["importance"], stopwords=options["stopwords"])]

    def importance_for(self, victim: Victim) -> str:
        """``deletion`` or ``gradient``: what ``importance`` means for this victim."""
        has_gradient = victim.differentiable  # a differentiable victim gives its saliency
        if self.importance == "gradient" and not has_gradient:
            raise NotDifferentiable(f"{victim.name} has no input embeddings, so no gradient importance for the "
                                    "search: use importance 'deletion' or 'auto'")
        if self.importance == "auto" and has_gradient and not victim.has_token_spans:
            return "deletion"  # no character offsets (a slow tokenizer) to spread the gradient over
        return "gradient" if self.importance != "deletion" and has_gradient else "deletion"

    def attack(self, victim: Victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]:
        """One outcome per record (``positions`` are not used: the search is deterministic). The posts
        are searched in lockstep: what every post asks at a step goes to the victim in one call."""
        saliency: list = [None] * len(records)
        if self.importance_for(victim) == "gradient":
            attacked = [i for i, (r, p) in enumerate(zip(records, clean)) if _attacked(r, p)]
            found = victim.saliency([records[i]["text"] for i in attacked], [records[i]["label"] for i in attacked])
            for i, chars in zip(attacked, found):
                saliency[i] = chars
        searches = [self.search(r, p, s) for r, p, s in zip(records, clean, saliency)]
        outcomes: list[Outcome] = [None] * len(records)  # type: ignore[list-item]
        asked: dict[int, list[str]] = {}

        def advance(i: int, answer: np.ndarray | None) -> None:
            try:
                asked[i] = searches[i].send(answer)
            except StopIteration as stop:
                outcomes[i] = stop.value

        for i in range(len(searches)):
            advance(i, None)
        while asked:
            step, asked = asked, {}
            probs = victim.predict_proba([t for texts in step.values() for t in texts])
            at = 0
            for i, texts in step.items():
                advance(i, probs[at:at + len(texts)])
                at += len(texts)
        return outcomes

    def search(self, record: dict, clean: np.ndarray,
               saliency: np.ndarray | None = None) -> Generator[list[str], np.ndarray, Outcome]:
        """One post's search: yields the texts it wants scored, receives their probabilities, and
        returns its outcome. With ``saliency`` (one value a character) the words are ranked by it and
        the gradient pass that made it counts as one query; without, by deletion."""
        text, label = record["text"], int(record["label"])
        ranked = "deletion" if saliency is None else "gradient"
        if not _attacked(record, clean):
            return Outcome(text, [], clean, changed=False, queries=0, details={"status": "skipped"})
        protected = [tuple(s) for s in record.get("protected") or ()]
        words = [(s, e) for s, e in self.words.target_spans(text, None, protected)  # rate 1: no random draw
                 if text[s:e] not in self.stopword_set]
        options = {span: c for span in words if (c := self.span_candidates(text, *span))}
        spans = list(options)  # a word no op can change is not worth a deletion query
        budget = self.query_budget
        queries = len(spans) if saliency is None else 1
        if not spans or budget < queries:
            return Outcome(text, [], clean, changed=False, queries=0 if saliency is None else 1,
                           details={"status": "failure", "importance": ranked})
        if saliency is None:
            deleted = yield [text[:s] + text[e:] for s, e in spans]
            order = np.argsort(deleted[:, label], kind="stable")  # the biggest drop in p(gold) first
        else:
            order = np.argsort([-saliency[s:e].sum() for s, e in spans], kind="stable")  # the largest first
        edits: list[Edit] = []
        best, probs = float(clean[label]), clean
        for i in order:
            candidates = options[spans[i]][:budget - queries]
            if not candidates:
                break  # the budget is spent
            found = None  # (p(gold), candidate, probabilities) of the span's best so far
            for at in range(0, len(candidates), self.chunk):
                chunk = candidates[at:at + self.chunk]
                scored = yield [apply_edits(text, sorted([*edits, c], key=lambda e: e.start)) for c in chunk]
                queries += len(chunk)
                gold = np.where(np.isnan(scored).any(1), np.inf, scored[:, label])
                j = int(np.argmin(gold))
                if found is None or gold[j] < found[0]:
                    found = (float(gold[j]), chunk[j], scored[j])
                if int(found[2].argmax()) != label:
                    break  # a flip: the rest of the span's candidates need not be asked
            if found[0] < best:
                edits = sorted([*edits, found[1]], key=lambda e: e.start)
                best, probs = found[0], found[2]
                if int(probs.argmax()) != label:
                    break
        status = "success" if edits and int(probs.argmax()) != label else "failure"
        return Outcome(apply_edits(text, edits), [e.to_dict() for e in edits], probs, changed=bool(edits),
                       queries=queries, details={"importance": ranked, "status": status})

    def span_candidates(self, text: str, start: int, end: int) -> list[Edit]:
        """The ops' candidates for a span, taking turns (each op's best, then each one's second, ...)."""
        lists = [op.candidates(text, start, end) for op in self.op_list]
        merged, seen = [], set()
        for c in itertools.chain.from_iterable(itertools.zip_longest(*lists)):
            if c is not None and (c.start, c.end, c.dst) not in seen:
                seen.add((c.start, c.end, c.dst))
                merged.append(c)
        return merged[:self.max_candidates]


def _attacked(record: dict, clean: np.ndarray) -> bool:
    """Whether the search attacks a post: the victim gets it right (TextAttack skips the others)."""
    return not np.isnan(clean).any() and int(clean.argmax()) == int(record["label"])


register_attack("search", SearchAttack.from_options)
