"""The search as goal + constraints + transformation + search method, recipes, and attacks added in one module."""
from __future__ import annotations

import dataclasses
import json
from typing import ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from attacks import make_victim
from attacks.attack import Outcome, make_attacks, register_attack
from attacks.search import SearchAttack
from cloak import Edit, apply_edits
from cloak.common.params import Interval, ParameterError, param, validate_fields

from .conftest import read_jsonl


@pytest.fixture(scope="module")
def rows(sample_path):
    return read_jsonl(sample_path)


@pytest.fixture(scope="module")
def tfidf(rows):
    return make_victim("tfidf-lr").fit(rows[:200])


@pytest.fixture(scope="module")
def posts(rows):
    return rows[200:260]


@pytest.fixture(scope="module")
def saved(tfidf, posts, tmp_path_factory):
    """The TF-IDF victim's folder and the posts' file, for the command."""
    folder = tmp_path_factory.mktemp("cli")
    tfidf.save(str(folder / "tfidf-lr"))
    data = folder / "posts.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in posts), encoding="utf-8")
    return str(folder / "tfidf-lr"), str(data)


def evaluate(saved, out, *args):
    from attacks.cli import main

    victim, data = saved
    return CliRunner().invoke(main, ["evaluate", "--victim", victim, "--data", data, "--out", str(out), "-q",
                                     *map(str, args)])


def run(attack, victim, posts):
    clean = victim.predict_proba([r["text"] for r in posts])
    return clean, attack.attack(victim, posts, range(len(posts)), clean)


def check_outcomes(victim, posts, clean, outcomes, budget):
    """What holds of every search: within budget, its text its edits, its probabilities the victim's own."""
    for row, out in zip(posts, outcomes):
        assert out.queries <= budget
        assert out.text == apply_edits(row["text"], [Edit(**e) for e in out.edits])
        if out.changed:
            np.testing.assert_allclose(victim.predict_proba([out.text])[0], out.probs, atol=1e-9)


# ---- goals ----

def test_a_targeted_search_gets_benign_posts_flagged(tfidf, posts):
    attack = SearchAttack(ops="homophone,similar,pinyin,english", goal="targeted:label=1", query_budget=300)
    clean, outcomes = run(attack, tfidf, posts)
    check_outcomes(tfidf, posts, clean, outcomes, 300)
    statuses = []
    for row, p, out in zip(posts, clean, outcomes):
        status = out.details["status"]
        statuses.append(status)
        if row["label"] == 1 or p.argmax() == 1:  # at the target already, or there by its gold label
            assert status == "skipped" and out.queries == 0
        elif status == "success":
            assert tfidf.predict_proba([out.text])[0].argmax() == 1  # a benign post the detector now flags
        else:
            assert out.probs.argmax() == 0 and out.probs[1] >= p[1]  # never further from the target
    assert statuses.count("success") >= 5 and statuses.count("skipped") >= 10
    assert attack.name == "search:homophone,similar,pinyin,english".replace(",", "+") + "@targeted:label=1"


def test_a_targeted_attack_is_counted_by_its_goal():
    """Issue 53: posts at the target already are skipped; a success is reaching the target."""
    from attacks.evaluate import figures_of
    from attacks.goals import make_goal

    labels = np.array([0, 0, 0, 1, 1, 0])
    clean = np.array([[.9, .1], [.8, .2], [.3, .7], [.4, .6], [.6, .4], [.7, .3]])
    after = np.array([[.2, .8], [.9, .1], [.3, .7], [.1, .9], [.6, .4], [.6, .4]])
    outcomes = [{"probs": p.tolist(), "changed": True, "queries": 5, "edits": []} for p in after]
    counts = figures_of(labels, clean, outcomes, make_goal("targeted:label=1"))["textattack"]
    # posts 2 (predicted 1 already), 3 and 4 (gold label 1) skipped; 0 flagged; 1 and 5 not
    assert counts == {"successes": 1, "failures": 2, "skipped": 3, "success_rate": 1 / 3,
                      "accuracy_under_attack": 2 / 6, "queries_per_example": 5.0}
    untargeted = figures_of(labels, clean, outcomes)["textattack"]  # 2 and 4 wrong already; 0 flipped
    assert (untargeted["successes"], untargeted["failures"], untargeted["skipped"]) == (1, 3, 2)


def test_a_goal_on_a_label_the_victim_lacks_and_bad_goals_are_refused(tfidf):
    attack = SearchAttack(goal="targeted:label=2")
    with pytest.raises(ValueError, match="goal targeted:label=2: tfidf knows labels 0 to 1, not 2"):
        attack.skip_reason({**tfidf.facts, "name": "tfidf"})
    assert SearchAttack(goal="targeted:label=1").skip_reason(tfidf.facts) is None
    with pytest.raises(ParameterError, match="unknown goal 'targetted'; did you mean 'targeted'"):
        SearchAttack(goal="targetted")
    with pytest.raises(ParameterError, match="goal targeted: 'label' must be an integer, got 'x'"):
        SearchAttack(goal="targeted:label=x")


# ---- search methods ----

class LookupVictim:
    """A victim that knows the probability of label 0 of a few texts (0.95 for any other)."""

    def __init__(self, table):
        self.table = table

    def predict_proba(self, texts):
        return np.array([[self.table.get(t, 0.95), 1 - self.table.get(t, 0.95)] for t in texts])


def test_beam_search_finds_what_the_greedy_one_misses():
    """The greedy search keeps word 1's best swap (A1), after which word 2 cannot flip the post; a beam of two
    also keeps A2, with which it can."""
    from attacks.goals import make_goal
    from attacks.search import run_in_lockstep
    from attacks.search_methods import Problem, make_search_method

    a1, a2, b = Edit("x", 0, 1, "a", "1"), Edit("x", 0, 1, "a", "2"), Edit("x", 1, 2, "b", "B")
    victim = LookupVictim({"ab": 0.9, "1b": 0.7, "2b": 0.8, "1B": 0.75, "2B": 0.3, "aB": 0.85})
    clean = victim.predict_proba(["ab"])[0]

    def walk(method):
        problem = Problem("ab", 0, clean, [(0, 1), (1, 2)], {(0, 1): [a1, a2], (1, 2): [b]}, make_goal("untargeted"),
                          [], 100, "none")
        return run_in_lockstep(victim, [make_search_method(method).walk(problem, [0, 1], 0)])[0]

    greedy, beam = walk("greedy"), walk("beam:width=2")
    assert (greedy.text, greedy.details["status"], greedy.queries) == ("1b", "failure", 3)
    assert (beam.text, beam.details["status"], beam.queries) == ("2B", "success", 4)
    assert walk("beam:width=1").text == "1b"  # a beam of one is as greedy


def test_beam_search_on_a_real_victim(tfidf, posts):
    attack = SearchAttack(ops="homophone,similar", method="beam:width=3", query_budget=80)
    clean, outcomes = run(attack, tfidf, posts)
    check_outcomes(tfidf, posts, clean, outcomes, 80)
    assert attack.name == "search:homophone+similar@beam:width=3"
    for row, p, out in zip(posts, clean, outcomes):
        if out.details["status"] != "skipped":
            assert out.probs[row["label"]] <= p[row["label"]]  # the best of the beam: never worse than the post
            assert (out.probs.argmax() != row["label"]) == (out.details["status"] == "success")
    assert sum(o.details["status"] == "success" for o in outcomes) > 10
    with pytest.raises(ParameterError, match="unknown search method 'beem'; did you mean 'beam'"):
        SearchAttack(method="beem")


# ---- constraints ----

@pytest.mark.parametrize("k", [1, 2])
def test_max_edits(tfidf, posts, k):
    clean, outcomes = run(SearchAttack(ops="homophone,similar", constraints=[f"max-edits:k={k}"]), tfidf, posts)
    check_outcomes(tfidf, posts, clean, outcomes, 200)
    assert max(len(o.edits) for o in outcomes) == k
    free = run(SearchAttack(ops="homophone,similar"), tfidf, posts)[1]
    assert max(len(o.edits) for o in free) > 2  # the constraint is what holds the search back


def test_only_target_terms(tfidf, posts):
    from cloak.targets import default_lexicon

    attack = SearchAttack(ops="homophone,similar,pinyin", constraints=["target-terms"])
    clean, outcomes = run(attack, tfidf, posts)
    check_outcomes(tfidf, posts, clean, outcomes, 200)
    words = attack.transformation.words
    edited = 0
    for row, out in zip(posts, outcomes):
        terms = default_lexicon().find(row["text"])
        for e in out.edits:  # the word each edit falls in holds a lexicon term
            (word,) = [(s, t) for s, t in words(row["text"]) if s <= e["start"] < t]
            assert any(word[0] < te and ts < word[1] for ts, te in terms), (row["text"], e)
            edited += 1
        if not terms:
            assert out.details["status"] in ("skipped", "failure") and out.queries == 0  # no word to try
    assert edited > 5


def test_a_similarity_floor(tfidf, posts):
    from attacks.constraints import similarity

    floor = 0.9
    clean, outcomes = run(SearchAttack(ops="homophone,similar,pinyin", constraints=[f"similarity:min={floor}"]),
                          tfidf, posts)
    check_outcomes(tfidf, posts, clean, outcomes, 200)
    assert all(similarity(r["text"], o.text) >= floor for r, o in zip(posts, outcomes))
    free = run(SearchAttack(ops="homophone,similar,pinyin"), tfidf, posts)[1]
    assert any(similarity(r["text"], o.text) < floor for r, o in zip(posts, free))
    assert sum(o.changed for o in outcomes) > 5
    assert similarity("白人都是垃圾", "拜仁都是垃圾") == pytest.approx(2 * 4 / 12)
    with pytest.raises(ParameterError, match="constraint similarity: 'min' must be a number in \\[0, 1\\], got 2.0"):
        SearchAttack(constraints=["similarity:min=2"])


# ---- from the command line and the Python API ----

def test_targeted_and_beam_searches_from_the_command_line(saved, tmp_path):
    result = evaluate(saved, tmp_path / "fp", "--attacks", "search", "--ops", "homophone,similar", "--goal",
                      "targeted:label=1", "--search-method", "beam:width=2", "--constraint", "max-edits:k=3",
                      "--query-budget", "60")
    assert result.exit_code == 0, result.output
    name = "search:homophone+similar@targeted:label=1@beam:width=2"
    summary = json.loads((tmp_path / "fp" / "summary.json").read_text())
    assert {k: v for k, v in summary["attacks"][name].items() if k != "reported_as"} == {
        "kind": "search", "ops": "homophone,similar", "query_budget": 60, "max_candidates": 10, "importance": "auto",
        "stopwords": "none", "goal": "targeted:label=1", "method": "beam:width=2", "constraints": ["max-edits:k=3"]}
    figures = summary["victims"]["tfidf-lr"]["attacks"][name]
    assert figures["textattack_by_label"]["1"]["skipped"] == sum(r["label"] == 1 for r in read_jsonl(saved[1]))
    assert figures["textattack"]["successes"] > 0
    lines = read_jsonl(tmp_path / "fp" / "tfidf-lr" / "search-homophone+similar@targeted-label=1@beam-width=2.jsonl")
    assert all(len(o["edits"]) <= 3 and o["queries"] <= 60 for o in lines)
    # the same by recipe: false-positive's goal, beam's method would be a second recipe; an option given wins
    again = evaluate(saved, tmp_path / "recipe", "--attacks", "search", "--ops", "homophone,similar", "--recipe",
                     "false-positive", "--search-method", "beam:width=2", "--constraint", "max-edits:k=3",
                     "--query-budget", "60")
    assert again.exit_code == 0, again.output
    assert read_jsonl(tmp_path / "recipe" / "tfidf-lr" / "search-homophone+similar@targeted-label=1@beam-width=2.jsonl") \
        == lines


@pytest.mark.parametrize("args,message", [
    (["--goal", "targetted"], "unknown goal 'targetted'; did you mean 'targeted'?"),
    (["--search-method", "beam:widht=2"], "search method beam: unknown parameter 'widht'; did you mean 'width'?"),
    (["--constraint", "max-edit:k=2"], "unknown constraint 'max-edit'; did you mean 'max-edits'?"),
    (["--recipe", "false-positives"], "--recipe: unknown recipe 'false-positives'; did you mean 'false-positive'?"),
    (["--constraint", "max-edits:k"], "constraint max-edits: parameter 'k' needs a value: k=VALUE"),
])
def test_bad_parts_are_named(saved, tmp_path, args, message):
    result = evaluate(saved, tmp_path / "bad", "--attacks", "search", *args)
    assert result.exit_code == 1 and f"attacks: error: {message}" in result.output, result.output
    assert not (tmp_path / "bad").exists()


def test_the_python_api_builds_the_same_searches(tfidf, posts):
    from attacks.recipes import RECIPES

    by_options = make_attacks("search", {"goal": "targeted:label=1", "search_method": "beam:width=2"})
    by_recipe = SearchAttack.from_recipe("false-positive", search_method="beam:width=2")
    direct = SearchAttack(goal="targeted:label=1", method="beam:width=2")
    assert [a.settings() for a in by_options] == [by_recipe.settings()] == [direct.settings()]
    for name in RECIPES:  # every recipe makes a search
        assert SearchAttack.from_recipe(name).kind == "search"
    with pytest.raises(ParameterError, match="search options: unknown parameter 'gaol'; did you mean 'goal'"):
        make_attacks("search", {"gaol": "targeted"})


# ---- an attack of your own, with an option of its own, in one module (here, this file) ----

@dataclasses.dataclass
class ReverseOptions:
    reverse_share: float = param(0.5, "reverse: the share of each post reversed, from its start.")
    _parameter_constraints = {"reverse_share": Interval(float, 0, 1, closed="right")}

    def __post_init__(self) -> None:
        validate_fields(self, "reverse options")


@dataclasses.dataclass
class ReverseAttack:
    """Each post with its first ``share`` of characters reversed."""

    kind: ClassVar[str] = "reverse"
    share: float = 0.5

    @property
    def name(self) -> str:
        return f"reverse@{self.share:g}"

    def settings(self) -> dict:
        return {"kind": self.kind, "share": self.share}

    def skip_reason(self, facts) -> str | None:
        return None

    def attack(self, victim, records, positions, clean) -> list[Outcome]:
        edits = []
        for r in records:
            end = max(1, round(len(r["text"]) * self.share))
            edits.append(Edit("reverse", 0, end, r["text"][:end], r["text"][:end][::-1]))
        texts = [apply_edits(r["text"], [e]) for r, e in zip(records, edits)]
        return [Outcome(t, [e._asdict()], p, changed=t != r["text"], queries=1)
                for r, t, e, p in zip(records, texts, edits, victim.predict_proba(texts))]


@pytest.fixture
def reverse(monkeypatch):
    import attacks.attack as registry

    monkeypatch.setattr(registry, "_KINDS", dict(registry._KINDS))  # registered for this test only
    register_attack("reverse", lambda options, records: [ReverseAttack(options.reverse_share)], ReverseOptions)


def test_an_attack_of_your_own_with_its_own_option(reverse, saved, tmp_path):
    from attacks.cli import main

    assert "--reverse-share FLOAT RANGE" in CliRunner().invoke(main, ["evaluate", "--help"]).output
    result = evaluate(saved, tmp_path / "rev", "--attacks", "reverse,cloak", "--ops", "homophone",
                      "--reverse-share", "0.25")
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "rev" / "summary.json").read_text())
    assert summary["attacks"]["reverse@0.25"]["share"] == 0.25
    (line, *_) = read_jsonl(tmp_path / "rev" / "tfidf-lr" / "reverse@0.25.jsonl")
    post = read_jsonl(saved[1])[0]["text"]
    end = round(len(post) * 0.25)
    assert line["text"] == post[:end][::-1] + post[end:] and line["queries"] == 1
    assert summary["victims"]["tfidf-lr"]["attacks"]["reverse@0.25"]["textattack"]["skipped"] >= 0
    bad = evaluate(saved, tmp_path / "bad", "--attacks", "reverse", "--reverse-share", "2")
    assert bad.exit_code == 2 and "--reverse-share" in bad.output  # click's range, from the declaration
    assert [a.share for a in make_attacks("reverse", {"reverse_share": 0.3})] == [0.3]


def test_ctrl_c_names_the_folder_the_outcomes_are_kept_in(saved, tmp_path, monkeypatch):
    import attacks.evaluate as evaluator

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(evaluator, "evaluate", interrupted)
    result = evaluate(saved, tmp_path / "eval", "--attacks", "cloak", "--ops", "homophone")
    assert result.exit_code == 130
    assert f"attacks: interrupted; finished outcomes are kept in {tmp_path / 'eval'}: rerun" in result.output
