"""The search attack: a goal, constraints, a transformation and a search method (the split of TextAttack,
Morris et al., "TextAttack: A Framework for Adversarial Attacks, Data Augmentation, and Adversarial Training
in NLP", 2020: ``Attack(goal_function, constraints, transformation, search_method)``).

- the goal (:mod:`attacks.goals`): ``untargeted`` (the gold label gone; the default) or
  ``targeted:label=K`` (label K predicted: ``targeted:label=1`` makes benign posts flagged);
- the constraints (:mod:`attacks.constraints`): which words may change (``stopwords``, ``target-terms``)
  and which texts may stand (``max-edits``, ``similarity``);
- the transformation (:class:`OpCandidates`): the post's words (jieba's, protected spans left alone) and,
  at each, the ops' candidates (``Op.candidates``, the most plausible first, the ops taking turns), at
  most ``max_candidates`` a word;
- the search method (:mod:`attacks.search_methods`): ``greedy`` (TextAttack's ``GreedyWordSwapWIR``; the
  default) or ``beam:width=W``, over the words ranked by importance. ``importance`` says how:
  ``deletion`` asks the victim for the post with each word deleted (a query a word) and ranks the words by
  how far that brings the post to the goal; ``gradient`` ranks them by the victim's ``saliency`` (the
  gradient of the loss of the label the goal follows over each word's token embeddings: one pass a post,
  counted as one query), for victims with input embeddings; ``auto`` (the default) takes the gradient
  where the victim has one; ``none`` keeps the words in the post's order (no query).

Recipes (:mod:`attacks.recipes`) name common combinations. Queries are counted as TextAttack counts them:
every text the victim scores, the deletions included (TextAttack does not count its gradient pass; we count
it as one query); the clean prediction, which the evaluator has already made, is not counted again. A post
the goal already holds for is skipped (no queries). Edits are kept in the coordinates of the original post,
so the adversarial text is always ``apply_edits(original, edits)``.
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from cloak import Perturber, parse_ops
from cloak.ops import default_ops
from cloak.edits import Edit
from cloak.common.params import InstanceOf, Interval, Options, Satisfies, param, validate_fields

from .attack import Outcome, ReportedAs, register_attack
from .constraints import Constraint, Stopwords, make_constraint
from .fgm import NotDifferentiable
from .goals import DEFAULT_GOAL, Goal, make_goal
from .recipes import recipe
from .search_methods import DEFAULT_METHOD, Problem, SearchMethod, Walk, make_search_method
from .victims.base import Victim

IMPORTANCE = ("auto", "deletion", "gradient", "none")
NAMED = Satisfies(lambda v: isinstance(v, str) or hasattr(v, "spec"), "a name with its parameters, or the part")


@dataclasses.dataclass
class OpCandidates:
    """The transformation: the words a post's ops can change, and each word's candidates (every op's best,
    then each one's second, ...), at most ``max_candidates``."""

    ops: str = ""
    max_candidates: int = 10
    _parameter_constraints = {"max_candidates": Interval(int, 1)}

    def __post_init__(self) -> None:
        validate_fields(self, "search transformation")
        self.op_list = parse_ops(self.ops or ",".join(default_ops()))
        # the words: jieba's, protected spans dropped; prepare() loads the ops' tables and the word matcher
        # (1 s) now rather than inside the first attack
        self.segmenter = Perturber(ops=self.op_list, targets="all", rate=1.0).prepare()

    def words(self, text: str, protected: Sequence[tuple[int, int]] = ()) -> list[tuple[int, int]]:
        return self.segmenter.target_spans(text, None, protected)  # rate 1: no random draw

    def candidates(self, text: str, start: int, end: int) -> list[Edit]:
        lists = [op.candidates(text, start, end) for op in self.op_list]
        merged, seen = [], set()
        for c in itertools.chain.from_iterable(itertools.zip_longest(*lists)):
            if c is not None and (c.start, c.end, c.dst) not in seen:
                seen.add((c.start, c.end, c.dst))
                merged.append(c)
        return merged[:self.max_candidates]


@dataclasses.dataclass
class SearchAttack:
    """A search over the candidates of ``ops`` (default: the project's own ops, ``default_ops``) toward ``goal``,
    within ``constraints``, by ``method`` (each a part or its command-line form: ``"targeted:label=1"``,
    ``"beam:width=4"``, ``("max-edits:k=2",)``); ``stopwords`` is the ``stopwords`` constraint, kept as its own
    parameter."""

    kind: ClassVar[str] = "search"
    # its flipped posts before the cloaks': one search, which a dozen cloak attacks would crowd out
    reported_as: ClassVar[ReportedAs] = ReportedAs(figure="counts", examples=0, varies="ops")

    ops: str = ""
    query_budget: int = 200
    max_candidates: int = 10
    importance: str = "auto"
    stopwords: str = "none"
    goal: str | Goal = DEFAULT_GOAL
    method: str | SearchMethod = DEFAULT_METHOD
    constraints: Sequence[str | Constraint] = ()
    _parameter_constraints = {"query_budget": Interval(int, 1), "importance": Options(*IMPORTANCE),
                              "stopwords": InstanceOf(str), "goal": NAMED, "method": NAMED,
                              "constraints": Satisfies(lambda v: not isinstance(v, str) and all(
                                  NAMED.accepts(c) for c in v), "a list of constraints")}

    def __post_init__(self) -> None:
        validate_fields(self, "search attack")
        self.transformation = OpCandidates(self.ops, self.max_candidates)
        self.goal_ = make_goal(self.goal)
        self.method_ = make_search_method(self.method)
        self.constraints_ = [make_constraint(c) for c in self.constraints]
        # what the search checks: the stop words first (as the search always left them out), then the rest
        self.checks_ = [*([Stopwords(self.stopwords)] if self.stopwords != "none" else []), *self.constraints_]

    @classmethod
    def from_recipe(cls, name: str, **overrides: Any) -> SearchAttack:
        """The search a recipe names (:mod:`attacks.recipes`), ``overrides`` (:class:`SearchOptions`' names:
        ``search_method``, ``constraint``) laid over it."""
        options = SearchOptions(recipe=name, **overrides).with_recipe()
        return options.attack()

    @property
    def name(self) -> str:
        shown = [p for p in (self.goal_.spec(), self.method_.spec()) if p not in (DEFAULT_GOAL, DEFAULT_METHOD)]
        return "search" + (f":{self.ops.replace(',', '+')}" if self.ops else "") + "".join(f"@{p}" for p in shown)

    def settings(self) -> dict:
        return {"kind": "search", "ops": self.ops or "all", "query_budget": self.query_budget,
                "max_candidates": self.max_candidates, "importance": self.importance, "stopwords": self.stopwords,
                "goal": self.goal_.spec(), "method": self.method_.spec(),
                "constraints": [c.spec() for c in self.constraints_]}

    def skip_reason(self, facts: dict) -> str | None:
        self.goal_.check(facts)  # a goal naming a label the victim lacks is a mistake to refuse, not to skip
        return None  # every victim answers queries

    def importance_for(self, victim: Victim) -> str:
        """``deletion``, ``gradient`` or ``none``: what ``importance`` means for this victim."""
        has_gradient = victim.differentiable  # a differentiable victim gives its saliency
        if self.importance == "gradient" and not has_gradient:
            raise NotDifferentiable(f"{victim.name} has no input embeddings, so no gradient importance for the "
                                    "search: use importance 'deletion' or 'auto'")
        if self.importance in ("deletion", "none"):
            return self.importance
        if self.importance == "auto" and has_gradient and not victim.has_token_spans:
            return "deletion"  # no character offsets (a slow tokenizer) to spread the gradient over
        return "gradient" if has_gradient else "deletion"

    def attack(self, victim: Victim, records: Sequence[dict], positions: Sequence[int],
               clean: np.ndarray) -> list[Outcome]:
        """One outcome per record (``positions`` are not used: the search is deterministic). The posts
        are searched in lockstep: what every post asks at a step goes to the victim in one call."""
        ranking = self.importance_for(victim)
        saliency: list = [None] * len(records)
        if ranking == "gradient":
            labels = np.array([int(r["label"]) for r in records])
            attacked = np.flatnonzero(~self.goal_.skipped(labels, clean)) if len(records) else []
            found = victim.saliency([records[i]["text"] for i in attacked],
                                    [self.goal_.saliency_label(labels[i]) for i in attacked])
            for i, chars in zip(attacked, found):
                saliency[i] = chars
        searches = [self.search(r, p, s, ranked=ranking) for r, p, s in zip(records, clean, saliency)]
        return run_in_lockstep(victim, searches)

    def search(self, record: dict, clean: np.ndarray, saliency: np.ndarray | None = None,
               ranked: str | None = None) -> Walk:
        """One post's search: yields the texts it wants scored, receives their probabilities, and returns
        its outcome. With ``saliency`` (one value a character) the words are ranked by it and the gradient
        pass that made it counts as one query; without, by deletion (or, ``ranked="none"``, not at all)."""
        text, label = record["text"], int(record["label"])
        ranked = "gradient" if saliency is not None else ranked if ranked == "none" else "deletion"
        if self.goal_.skipped(label, clean):
            return Outcome(text, [], clean, changed=False, queries=0, details={"status": "skipped"})
        problem = self.problem(record, clean, ranked)
        spans = problem.spans
        queries = {"deletion": len(spans), "gradient": 1, "none": 0}[ranked]
        if not spans or self.query_budget < queries:
            return Outcome(text, [], clean, changed=False, queries=0 if ranked == "deletion" else queries,
                           details={"status": "failure", "importance": ranked})
        if ranked == "deletion":
            deleted = yield [text[:s] + text[e:] for s, e in spans]
            order = np.argsort(-problem.score(deleted), kind="stable")  # the closest to the goal first
        elif ranked == "gradient":
            order = np.argsort([-saliency[s:e].sum() for s, e in spans], kind="stable")  # the largest first
        else:
            order = range(len(spans))
        return (yield from self.method_.walk(problem, order, queries))

    def problem(self, record: dict, clean: np.ndarray, ranked: str) -> Problem:
        """The post as the search method sees it: the words the constraints let it edit that some op can
        change (a word no op can change is not worth a deletion query), with their candidates."""
        text = record["text"]
        words = self.transformation.words(text, [tuple(s) for s in record.get("protected") or ()])
        for constraint in self.checks_:
            words = constraint.modifiable(text, words)
        candidates = {span: c for span in words if (c := self.transformation.candidates(text, *span))}
        return Problem(text, int(record["label"]), clean, list(candidates), candidates, self.goal_,
                       self.checks_, self.query_budget, ranked)


def run_in_lockstep(victim: Victim, searches: list[Walk]) -> list[Outcome]:
    """Drive every post's search at once: what they all ask at a step goes to the victim in one call."""
    outcomes: list[Outcome] = [None] * len(searches)  # type: ignore[list-item]
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


@dataclasses.dataclass
class SearchOptions:
    """``attacks evaluate``'s options of the search (``--recipe`` fills those left at their defaults)."""

    ops: str | None = param(None, "The search uses them all at once [default: every op but those from other "
                                  "sources, which are asked for by name: `cloak ops` marks them].", metavar="OPS")
    query_budget: int = param(200, "The search: victim queries per post at most.")
    max_candidates: int = param(10, "The search: candidate substitutions scored at each word at most (the ops "
                                    "taking turns).")
    importance: str = param("auto", "The search: rank a post's words by deleting each (a query a word) or by the "
                                    "gradient (one pass a post; victims with input embeddings); auto takes the "
                                    "gradient where there is one; none keeps the post's order.")
    stopwords: str = param("none", "The search: words it neither ranks nor cloaks. zh: stopwords-iso's Chinese "
                                   "list (的, 了, 我们, ...; TextAttack's Chinese recipe uses it), or a file of one "
                                   "word a line.", metavar="none|zh|FILE")
    goal: str = param(DEFAULT_GOAL, "The search's goal: untargeted (the gold label gone), or targeted:label=K (label "
                                    "K predicted; targeted:label=1 gets benign posts flagged).", metavar="GOAL")
    search_method: str = param(DEFAULT_METHOD, "The search method: greedy[:chunk=N], or beam[:width=W].",
                               metavar="METHOD")
    constraint: tuple[str, ...] = param((), "A constraint on the search (repeat for several): max-edits:k=N, "
                                            "similarity:min=S, target-terms[:lexicon=FILE], stopwords:words=zh.",
                                        metavar="CONSTRAINT")
    recipe: str | None = param(None, "A named search (textattack-chinese, false-positive, poster, subtle, beam, "
                                     "greedy-wir): its settings for the search options left at their defaults.",
                               metavar="NAME")
    _parameter_constraints = {"query_budget": Interval(int, 1), "max_candidates": Interval(int, 1),
                              "importance": Options(*IMPORTANCE)}

    def __post_init__(self) -> None:
        validate_fields(self, "search options")

    def with_recipe(self) -> SearchOptions:
        """These options with ``recipe``'s settings where they are at their defaults."""
        if self.recipe is None:
            return self
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        chosen = recipe(self.recipe).options
        return dataclasses.replace(self, **{k: v for k, v in chosen.items() if getattr(self, k) == defaults[k]})

    def attack(self) -> SearchAttack:
        """One search with every op of ``ops`` at once (``a+b`` counts as its ops)."""
        ops = ",".join(dict.fromkeys(o for m in (self.ops or "").split(",") for o in m.split("+") if o.strip()))
        return SearchAttack(ops=ops, query_budget=self.query_budget, max_candidates=self.max_candidates,
                            importance=self.importance, stopwords=self.stopwords, goal=self.goal,
                            method=self.search_method, constraints=self.constraint)


def make_searches(options: SearchOptions, records: Sequence[dict]) -> list[SearchAttack]:
    return [options.with_recipe().attack()]


register_attack("search", make_searches, SearchOptions)
