"""The attacks on victims: embedding-space FGM / PGD, and the figures every attack is scored by."""
from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from attacks import make_victim
from attacks.metrics import detection_metrics, drops
from cloak.common.params import ParameterError

from .conftest import cli_in_fresh_python, interrupted_after, read_jsonl


@pytest.fixture(scope="module")
def posts(sample_path):
    rows = read_jsonl(sample_path)
    return rows[:160], rows[160:200], rows[200:260]


@pytest.fixture(scope="module")
def tiny_bert(posts, backbone):
    """A tiny BERT victim trained for two epochs: it fits its training posts, so there is something to attack."""
    train, dev, _ = posts
    victim = make_victim("bert", {"backbone": backbone, "max_length": 48},
                         {"epochs": 2, "lr": 1e-3, "batch_size": 16, "patience": 2})
    return victim.fit(train, dev, progress=False)


def texts_labels(rows):
    return [r["text"] for r in rows], np.array([r["label"] for r in rows])


# ---- metrics ----

def test_detection_metrics_give_every_figure():
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    p1 = np.array([0.1, 0.2, 0.3, 0.6, 0.4, 0.7, 0.8, 0.9])
    figures = detection_metrics(labels, np.stack([1 - p1, p1], 1))
    assert figures["accuracy"] == 0.75 and figures["f1"] == pytest.approx(0.75)
    assert figures["auc"] == pytest.approx(15 / 16)  # 15 of the 16 (clean, offensive) pairs ranked right
    # letting through no more than 5% of 4 offensive posts means catching all: threshold 0.4 flags 1 clean
    assert figures["fpr_at_5_fnr"] == pytest.approx(0.25)
    # flagging no more than 5% of 4 clean posts means none: a threshold above 0.6 misses 0.4, 1 of 4
    assert figures["fnr_at_5_fpr"] == pytest.approx(0.25)
    worse = detection_metrics(labels, np.stack([p1, 1 - p1], 1))
    moved = drops(figures, worse)
    assert moved["f1"] > 0 and moved["auc"] > 0 and moved["fpr_at_5_fnr"] > 0


def test_unanswered_rows_count_as_wrong_and_leave_the_ranking():
    labels = np.array([0, 1, 0, 1])
    probs = np.array([[0.9, 0.1], [0.2, 0.8], [np.nan, np.nan], [0.7, 0.3]])
    figures = detection_metrics(labels, probs)
    assert figures["unanswered"] == 1 and figures["accuracy"] == 0.5
    assert figures["auc"] == pytest.approx(1.0)  # over the three answered rows
    with pytest.raises(ValueError, match="probs must be"):
        detection_metrics(labels, probs[:3])


# ---- FGM / PGD ----

def test_fgm_at_eps_zero_is_the_clean_prediction(tiny_bert, posts):
    from attacks.fgm import fgm, pgd

    texts, labels = texts_labels(posts[2])
    clean = tiny_bert.predict_proba(texts)
    np.testing.assert_allclose(fgm(tiny_bert, texts, labels, eps=0), clean, atol=1e-6)
    np.testing.assert_allclose(pgd(tiny_bert, texts, labels, eps=0), clean, atol=1e-6)


@pytest.mark.slow
def test_accuracy_falls_with_eps_and_pgd_is_at_least_as_strong(tiny_bert, posts):
    from attacks.fgm import fgm, pgd

    texts, labels = texts_labels(posts[0])  # posts it fits, so the clean accuracy is high
    accuracy = {}
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0):
        under_fgm, under_pgd = fgm(tiny_bert, texts, labels, eps), pgd(tiny_bert, texts, labels, eps, steps=5)
        accuracy[eps] = ((under_fgm.argmax(1) == labels).mean(), (under_pgd.argmax(1) == labels).mean())
        gold_fgm, gold_pgd = under_fgm[np.arange(len(labels)), labels], under_pgd[np.arange(len(labels)), labels]
        assert accuracy[eps][1] <= accuracy[eps][0]
        assert (gold_pgd <= gold_fgm + 1e-6).mean() > 0.9  # PGD's strongest iterate, from the FGM point
    fgm_accuracy = [a for a, _ in accuracy.values()]
    assert all(b <= a for a, b in zip(fgm_accuracy, fgm_accuracy[1:])), accuracy
    assert fgm_accuracy[-1] < fgm_accuracy[0] - 0.2, accuracy  # the attack bites


def test_each_example_gets_its_own_bounded_delta(tiny_bert, posts, monkeypatch):
    import torch

    from attacks.fgm import EmbeddingAttack

    texts, labels = texts_labels(posts[2][:6])
    seen = []
    original = type(tiny_bert).logits

    def spy(self, embedded):
        seen.append(embedded)
        return original(self, embedded)

    monkeypatch.setattr(type(tiny_bert), "logits", spy)
    EmbeddingAttack(eps=0.3, steps=4).probabilities(tiny_bert, texts, labels)
    clean = seen[0].embeds.detach()
    for embedded in seen[1:]:
        delta = (embedded.embeds.detach() - clean)
        norms = delta.flatten(1).norm(dim=1)
        assert (norms <= 0.3 + 1e-5).all() and (norms > 0).all()
        assert torch.equal(delta[embedded.mask == 0], torch.zeros_like(delta[embedded.mask == 0]))  # padding


def test_embedding_attacks_refuse_what_they_cannot_do(tiny_bert, posts):
    from attacks.fgm import EmbeddingAttack, NotDifferentiable

    texts, labels = texts_labels(posts[2])
    victim = make_victim("tfidf-lr").fit(posts[0])
    with pytest.raises(NotDifferentiable, match="tfidf-lr has no input embeddings"):
        EmbeddingAttack(eps=1).probabilities(victim, texts, labels)
    with pytest.raises(ParameterError, match="'eps' must be"):
        EmbeddingAttack(eps=-1)
    with pytest.raises(ValueError, match="60 texts but 3 labels"):
        EmbeddingAttack(eps=1).probabilities(tiny_bert, texts, labels[:3])


# ---- cloak attacks and the evaluator ----

@pytest.fixture(scope="module")
def tfidf(posts):
    return make_victim("tfidf-lr").fit(posts[0])


def test_a_cloak_attack_keeps_the_worst_variant_and_its_edits(tfidf, posts):
    from attacks.cloaking import CloakAttack
    from cloak import Edit, Perturber, apply_edits

    rows = posts[2]
    clean = tfidf.predict_proba([r["text"] for r in rows])
    attack = CloakAttack(ops="homophone,emoji", variants=3, seed=4)
    outcomes = attack.attack(tfidf, rows, range(len(rows)), clean)
    perturber = Perturber(ops="homophone,emoji", seed=4, strength="poster")  # the attack's default strength
    assert any(o.changed for o in outcomes) and not all(o.changed for o in outcomes)
    for i, (row, out) in enumerate(zip(rows, outcomes)):
        if not out.changed:  # no lexicon term: the clean prediction, no query
            assert out.text == row["text"] and out.queries == 0 and (out.probs == clean[i]).all()
            continue
        assert out.text == apply_edits(row["text"], [Edit(**e) for e in out.edits])
        variants = [perturber(row["text"], key=i, variant=k).text for k in range(3)]
        assert out.text == variants[out.details["variant"]]  # what `cloak perturb --seed 4 --strength poster` makes
        gold = [p[row["label"]] for p in tfidf.predict_proba(variants)]
        assert out.probs[row["label"]] == pytest.approx(min(gold))


def attack_list():
    from attacks.cloaking import CloakAttack
    from attacks.fgm import EmbeddingAttack

    return [EmbeddingAttack(eps=0.0), EmbeddingAttack(eps=0.5), EmbeddingAttack(eps=0.5, steps=3),
            CloakAttack(ops="homophone"), CloakAttack(ops="emoji", mode="full", rate=0.5, variants=2)]


@pytest.mark.slow
def test_evaluate_scores_every_pair_and_skips_what_cannot_run(tfidf, tiny_bert, posts, tmp_path):
    from attacks.evaluate import evaluate

    rows = posts[2]
    summary = evaluate({"tfidf": tfidf, "bert": tiny_bert}, rows, attack_list(), str(tmp_path), progress=False)
    assert json.loads((tmp_path / "summary.json").read_text()) == json.loads(json.dumps(summary))
    tf, bert = summary["victims"]["tfidf"], summary["victims"]["bert"]
    assert tf["attacks"]["fgm@0.5"] == {"skipped": "tfidf-lr is not differentiable: no input embeddings to perturb"}
    assert bert["attacks"]["fgm@0"]["all"]["f1"] == pytest.approx(bert["clean"]["f1"])  # eps 0: nothing moves
    assert bert["attacks"]["pgd@0.5"]["all"]["accuracy"] <= bert["attacks"]["fgm@0.5"]["all"]["accuracy"]
    for victim in (tf, bert):
        figures = victim["attacks"]["cloak:homophone"]
        counts = figures["textattack"]
        right = counts["successes"] + counts["failures"]
        assert right + counts["skipped"] == len(rows)
        # failures / all: an attack may also put right a post the victim got wrong, which TextAttack skips
        assert counts["accuracy_under_attack"] <= figures["all"]["accuracy"] + 1e-12
        assert figures["drop"]["f1"] == pytest.approx(victim["clean"]["f1"] - figures["all"]["f1"])
        assert 0 < figures["changed"] < len(rows) and "on_changed" in figures
    lines = (tmp_path / "tfidf" / "cloak-emoji@full0.5.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(rows) and json.loads(lines[0])["id"] == rows[0]["id"]


@pytest.mark.slow
def test_a_killed_evaluate_resumes_to_the_same_summary(tfidf, tiny_bert, posts, tmp_path, monkeypatch):
    import attacks.evaluate as evaluator

    rows, attacks = posts[2], attack_list()
    whole = evaluator.evaluate({"tfidf": tfidf, "bert": tiny_bert}, rows, attacks, str(tmp_path / "a"),
                               batch_size=16, progress=False)
    real = evaluator.run_attack
    monkeypatch.setattr(evaluator, "run_attack", interrupted_after(5, real))  # Ctrl-C on the fifth batch
    with pytest.raises(KeyboardInterrupt):
        evaluator.evaluate({"tfidf": tfidf, "bert": tiny_bert}, rows, attacks, str(tmp_path / "b"), batch_size=16,
                           progress=False)
    half = tmp_path / "b" / "tfidf" / "cloak-emoji@full0.5.jsonl"
    assert not half.exists() or len(half.read_text().splitlines()) < len(rows)
    monkeypatch.setattr(evaluator, "run_attack", real)
    with (tmp_path / "b" / "tfidf" / "cloak-homophone.jsonl").open("ab") as f:
        f.write(b'{"id": "half a line')  # what a kill in the middle of a write leaves
    again = evaluator.evaluate({"tfidf": tfidf, "bert": tiny_bert}, rows, attacks, str(tmp_path / "b"),
                               batch_size=16, progress=False)
    assert again == whole
    assert (tmp_path / "a" / "summary.json").read_bytes() == (tmp_path / "b" / "summary.json").read_bytes()


def test_the_evaluate_command(sample_path, tmp_path):
    from click.testing import CliRunner

    from attacks.cli import main

    rows = read_jsonl(sample_path)
    train, data = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[:200]), encoding="utf-8")
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows[200:]), encoding="utf-8")
    runner = CliRunner()
    victim = str(tmp_path / "tfidf-lr")
    assert runner.invoke(main, ["train", "--model", "tfidf-lr", "--train", str(train), "--out", victim]).exit_code == 0
    args = ["evaluate", "--victim", victim, "--data", str(data), "--attacks", "fgm,cloak", "--ops",
            "homophone,homophone+emoji", "--eps", "0.5", "--limit", "50", "--out", str(tmp_path / "eval"), "-q"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "cloak:homophone+emoji" in result.output and "skipped: tfidf-lr is not differentiable" in result.output
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["data"]["records"] == 50 and len(summary["data"]["sha256"]) == 64
    assert set(summary["victims"]["tfidf-lr"]["attacks"]) == {"fgm@0.5", "cloak:homophone", "cloak:homophone+emoji"}
    for bad, message in ((["--attacks", "fgsm"], "unknown attack 'fgsm'"), (["--eps", "a"], "--eps must be numbers"),
                         (["--ops", "homofone"], "unknown op 'homofone'")):
        result = runner.invoke(main, [*args[:-3], *bad, "--out", str(tmp_path / "bad")])
        assert result.exit_code == 1 and message in result.output, result.output


def test_help_and_a_missing_input_answer_before_any_model_library_loads(tmp_path):
    """`attacks --help` took 1.1 s while scikit-learn loaded for the conventional victims; it and a
    command whose input is missing import neither torch nor scikit-learn."""
    missing = str(tmp_path / "missing.jsonl")
    for args in (["--help"], ["evaluate", "--help"], ["train", "--model", "tfidf-lr", "--train", missing, "--out", "o"],
                 ["evaluate", "--victim", str(tmp_path / "v"), "--data", missing, "--out", "o"]):
        code, imported, stderr = cli_in_fresh_python("attacks.cli", args, ("torch", "sklearn"))
        assert imported == [False, False], (args, imported)
        assert code == (0 if "--help" in args else 1) and ("--help" in args or "input file not found" in stderr)


@pytest.mark.parametrize("budget", [3, 40, 400])
@pytest.mark.parametrize("victim_name,ranked", [("tfidf", "deletion"),
                                                pytest.param("tiny_bert", "gradient", marks=pytest.mark.slow)])
def test_the_search_stays_in_budget_and_its_text_is_its_edits(victim_name, ranked, posts, budget, request):
    from attacks.search import SearchAttack
    from cloak import Edit, apply_edits

    victim, rows = request.getfixturevalue(victim_name), posts[2]
    clean = victim.predict_proba([r["text"] for r in rows])
    outcomes = SearchAttack(ops="similar,homophone", query_budget=budget).attack(victim, rows, range(len(rows)), clean)
    statuses = [o.details["status"] for o in outcomes]
    for row, p, out in zip(rows, clean, outcomes):
        assert out.queries <= budget and out.details.get("importance", ranked) == ranked
        assert out.text == apply_edits(row["text"], [Edit(**e) for e in out.edits])
        assert {e["op"] for e in out.edits} <= {"similar", "homophone"}
        if out.details["status"] == "skipped":  # already wrong: left alone, no query
            assert p.argmax() != row["label"] and out.queries == 0 and out.text == row["text"]
            assert "importance" not in out.details  # nothing was ranked
        else:
            assert out.details["importance"] == ranked
            again = victim.predict_proba([out.text])[0]
            tolerance = 1e-9 if victim_name == "tfidf" else 1e-6  # float32 sums vary with the batch
            np.testing.assert_allclose(again, out.probs, atol=tolerance)  # what the victim says of that text
            assert (again.argmax() != row["label"]) == (out.details["status"] == "success")
            assert again[row["label"]] <= p[row["label"]] + tolerance  # never worse for the attacker
    if budget == 400 and victim_name == "tfidf":
        assert statuses.count("success") > statuses.count("failure")  # a linear model on words gives way
    if budget == 3:
        assert "success" not in statuses or all(len(o.edits) <= 1 for o in outcomes)


def test_the_search_ranks_words_by_the_gradient_where_the_victim_has_one(tfidf, tiny_bert, posts):
    from attacks.fgm import NotDifferentiable
    from attacks.search import SearchAttack

    assert SearchAttack().importance_for(tiny_bert) == "gradient"
    assert SearchAttack().importance_for(tfidf) == "deletion"
    assert SearchAttack(importance="deletion").importance_for(tiny_bert) == "deletion"
    with pytest.raises(NotDifferentiable, match="no gradient importance"):
        SearchAttack(importance="gradient").attack(tfidf, posts[2], range(60), tfidf.predict_proba(["x"] * 60))
    with pytest.raises(ParameterError, match="importance"):
        SearchAttack(importance="random")
    # the words are visited in the saliency's order: all of it on the last word, that word is tried first
    search = SearchAttack(ops="homophone", method="greedy:chunk=1")
    words, candidates = search.transformation.words, search.transformation.candidates
    row = next(r for r in posts[2] if len([w for w in words(r["text"]) if candidates(r["text"], *w)]) >= 3)
    text = row["text"]
    start, end = [w for w in words(text) if candidates(text, *w)][-1]
    saliency = np.zeros(len(text))
    saliency[start:end] = 1.0
    clean = np.eye(2)[int(row["label"])]  # the victim gets it right: it is searched
    (first,) = next(search.search(row, clean, saliency))
    assert first != text and first.startswith(text[:start]) and first.endswith(text[end:])


def test_a_targeted_search_follows_the_gradient_of_its_target(tiny_bert, posts, monkeypatch):
    from attacks.search import SearchAttack

    rows, asked = posts[2], []
    clean = tiny_bert.predict_proba([r["text"] for r in rows])
    real = tiny_bert.saliency
    monkeypatch.setattr(tiny_bert, "saliency", lambda texts, labels: asked.append(list(labels)) or real(texts, labels))
    outcomes = SearchAttack(ops="similar,homophone", goal="targeted:label=1", query_budget=40).attack(
        tiny_bert, rows, range(len(rows)), clean)
    at_target = [r["label"] == 1 or p.argmax() == 1 for r, p in zip(rows, clean)]
    assert asked == [[1] * at_target.count(False)]  # the target's loss, for the posts attacked only
    for skip, out in zip(at_target, outcomes):
        assert (out.details["status"] == "skipped") == skip
        assert skip or (out.details["importance"] == "gradient" and out.queries <= 40)


def test_the_search_leaves_stop_words_alone_when_asked(tfidf, posts, tmp_path):
    from attacks.search import SearchAttack
    from cloak.targets import load_stopwords

    rows = posts[2]
    clean = tfidf.predict_proba([r["text"] for r in rows])
    stopwords = load_stopwords("zh")
    assert {"的", "了", "我们"} <= stopwords and "黑人" not in stopwords
    free, held = (SearchAttack(ops="similar,homophone", stopwords=s).attack(tfidf, rows, range(len(rows)), clean)
                  for s in ("none", "zh"))
    words_of = SearchAttack(ops="similar,homophone").transformation.words

    def cloaked(outcomes):  # the words the edits fall in
        return [r["text"][s:e] for r, o in zip(rows, outcomes) for s, e in words_of(r["text"])
                for edit in o.edits if s <= edit["start"] < e]

    assert any(w in stopwords for w in cloaked(free))  # without the constraint the search does cloak them
    assert cloaked(held) and not any(w in stopwords for w in cloaked(held))
    # nor is a stop word ranked: the deletion pass asks about the other words only
    row = rows[0]
    words = words_of(row["text"])
    n_stop = sum(row["text"][s:e] in stopwords for s, e in words)
    clean_row = np.eye(2)[int(row["label"])]
    deletions = [next(SearchAttack(ops="similar,homophone", stopwords=s).search(row, clean_row)) for s in ("none", "zh")]
    assert n_stop and len(deletions[1]) < len(deletions[0])
    mine = tmp_path / "stop.txt"
    mine.write_text("的\n\n 了 \n", encoding="utf-8")
    assert load_stopwords(str(mine)) == {"的", "了"}
    with pytest.raises(ValueError, match="'none', 'zh' or a file"):
        SearchAttack(stopwords=str(tmp_path / "missing.txt"))

def test_saliency_covers_exactly_the_characters_the_model_reads(tiny_bert, posts):
    import unicodedata

    rows = posts[2]
    long = "".join(r["text"] for r in rows)[:400]  # over max_length (48 tokens): its middle is not read
    texts = [rows[0]["text"], "白人 真是 垃圾", long]
    spans, batch = tiny_bert.token_spans(texts), tiny_bert.batch(texts)
    saliency = tiny_bert.saliency(texts, [1, 1, 0])
    for text, token_spans, ids, mask, chars in zip(texts, spans, batch["input_ids"], batch["attention_mask"], saliency):
        assert len(token_spans) == int(mask.sum()) and token_spans[0] is None and token_spans[-1] is None
        for span, i in zip(token_spans[1:-1], ids[1:]):  # each token is the characters it says it covers
            token = tiny_bert.tokenizer_.convert_ids_to_tokens(int(i))
            if token != tiny_bert.tokenizer_.unk_token:
                plain = unicodedata.normalize("NFD", text[span[0]:span[1]].lower())
                assert token.removeprefix("##") == "".join(c for c in plain if not unicodedata.combining(c))
        read = np.zeros(len(text), bool)
        for span in token_spans[1:-1]:
            read[span[0]:span[1]] = True
        assert chars.shape == (len(text),) and (chars[~read] == 0).all() and (chars[read] > 0).all()
    assert read[0] and read[-1] and not read.all()  # the long post: head and tail read, the middle not


def test_evaluate_will_not_resume_into_a_run_of_other_settings_or_data(tfidf, posts, tmp_path):
    from attacks.evaluate import evaluate
    from attacks.search import SearchAttack

    rows, out = posts[2][:20], str(tmp_path / "eval")
    evaluate({"tfidf": tfidf}, rows, [SearchAttack(ops="similar", query_budget=20)], out, progress=False)
    with pytest.raises(ValueError, match="search:similar run with other settings \\(query_budget was 20, now 30\\)"):
        evaluate({"tfidf": tfidf}, rows, [SearchAttack(ops="similar", query_budget=30)], out, progress=False)
    with pytest.raises(ValueError, match="other data \\(records was 20, now 10\\)"):
        evaluate({"tfidf": tfidf}, rows[:10], [SearchAttack(ops="similar", query_budget=20)], out, progress=False)
    again = evaluate({"tfidf": tfidf}, rows, [SearchAttack(ops="similar", query_budget=20)], out, progress=False)
    assert again["victims"]["tfidf"]["attacks"]["search:similar"]["textattack"]["queries_per_example"] <= 20


def test_the_search_command(sample_path, tmp_path, tfidf):
    from click.testing import CliRunner

    from attacks.cli import main

    rows = read_jsonl(sample_path)[200:240]
    data = tmp_path / "test.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    tfidf.save(str(tmp_path / "tfidf-lr"))
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(tmp_path / "tfidf-lr"), "--data", str(data),
                                       "--attacks", "search", "--ops", "similar+homophone", "--query-budget", "50",
                                       "--max-candidates", "3", "--out", str(tmp_path / "eval"), "-q"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["attacks"]["search:similar+homophone"]["max_candidates"] == 3
    figures = summary["victims"]["tfidf-lr"]["attacks"]
    counts = figures["search:similar+homophone"]["textattack"]
    assert counts["successes"] + counts["failures"] + counts["skipped"] == 40
    assert 0 < counts["queries_per_example"] <= 50


@pytest.mark.slow
def test_shards_merge_into_the_unsharded_run(tfidf, tiny_bert, posts, tmp_path):
    from attacks.evaluate import evaluate, merge

    rows, attacks = posts[2], attack_list()
    victims = {"tfidf": tfidf, "bert": tiny_bert}
    whole = evaluate(victims, rows, attacks, str(tmp_path / "whole"), batch_size=16, progress=False)
    for i in range(3):
        evaluate(victims, rows, attacks, str(tmp_path / f"part{i}"), shard=(i, 3), batch_size=16, progress=False)
    with pytest.raises(ValueError, match="shards must be 0/3 to 2/3 once each"):
        merge([str(tmp_path / "part0"), str(tmp_path / "part2")], str(tmp_path / "joined"))
    joined = merge([str(tmp_path / f"part{i}") for i in (2, 0, 1)], str(tmp_path / "joined"))
    assert joined == whole
    assert (tmp_path / "joined" / "tfidf/cloak-emoji@full0.5.jsonl").read_bytes() == \
        (tmp_path / "whole" / "tfidf/cloak-emoji@full0.5.jsonl").read_bytes()
    # A torch victim's probabilities depend on the padding of the batch a post falls in (a shard's batches
    # differ) in the last float bits: equal to 1e-5, every other field exactly.
    for name in ("bert/clean.jsonl", "bert/pgd@0.5.jsonl", "bert/cloak-emoji@full0.5.jsonl"):
        joined_lines, whole_lines = (read_jsonl(tmp_path / run / name) for run in ("joined", "whole"))
        assert len(joined_lines) == len(whole_lines) == len(rows)
        for a, b in zip(joined_lines, whole_lines):
            assert a.pop("probs") == pytest.approx(b.pop("probs"), abs=1e-5)
            assert a == b


def test_the_search_tries_each_ops_best_substitution_before_any_seconds():
    from attacks.search import SearchAttack

    text, start, end = "白人都是垃圾", 0, 2
    search = SearchAttack(max_candidates=6).transformation
    per_op = [op.candidates(text, start, end) for op in search.op_list]
    keys = [[(c.start, c.end, c.dst) for c in found] for found in per_op if found]
    assert len(keys) > 6  # more ops can change the word than the cap lets in
    merged = [(c.start, c.end, c.dst) for c in search.candidates(text, start, end)]
    assert len(merged) == len(set(merged)) == 6
    assert merged == list(dict.fromkeys(k[0] for k in keys))[:6]  # one from each op in turn, the best of each

    def capped(n):
        found = SearchAttack(max_candidates=n).transformation.candidates(text, start, end)
        return [(c.start, c.end, c.dst) for c in found]

    assert capped(4) == merged[:4]
    everything = capped(1000)
    assert set(everything) == {k for found in keys for k in found}


# ---- the commands as a new user meets them: nothing stale, nothing half-written, nothing overwritten ----

def _write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _invoke(*args):
    from click.testing import CliRunner

    from attacks.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def split_files(sample_path, tmp_path):
    rows = read_jsonl(sample_path)
    return _write(tmp_path / "train.jsonl", rows[:200]), _write(tmp_path / "test.jsonl", rows[200:260])


def test_a_victim_retrained_into_its_folder_is_not_judged_by_the_old_outcomes(split_files, tmp_path):
    """Retrained into the same folder, a victim once kept its old figures (0.7363 -> 0.6753 printed for a
    model that scores 0.7091 -> 0.6829); outcomes are now kept by the victim's fingerprint."""
    train, test = split_files
    victim, out = tmp_path / "tfidf-lr", tmp_path / "eval"
    evaluate = ["evaluate", "--victim", victim, "--data", test, "--ops", "homophone", "--out", out, "-q"]
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", victim).exit_code == 0
    assert _invoke(*evaluate).exit_code == 0
    before = (out / "summary.json").read_bytes()
    smaller = _write(tmp_path / "small.jsonl", read_jsonl(train)[:60])
    assert _invoke("train", "--model", "tfidf-lr", "--train", smaller, "--out", victim, "--overwrite").exit_code == 0
    result = _invoke(*evaluate)
    assert result.exit_code == 1 and f"{out} holds outcomes of another victim named tfidf-lr" in result.output
    assert f"delete {out / 'tfidf-lr'} to attack it afresh" in result.output
    assert (out / "summary.json").read_bytes() == before
    shutil.rmtree(out / "tfidf-lr")
    assert _invoke(*evaluate).exit_code == 0
    fresh = out.parent / "fresh"
    assert _invoke(*evaluate[:-3], "--out", fresh, "-q").exit_code == 0
    figures = json.loads((out / "summary.json").read_text())["victims"]["tfidf-lr"]
    assert figures == json.loads((fresh / "summary.json").read_text())["victims"]["tfidf-lr"]
    assert figures["facts"]["trained_on"]["train"]["records"] == 60


def test_a_label_the_victim_does_not_know_is_named_and_nothing_is_written(split_files, tmp_path):
    train, test = split_files
    rows = read_jsonl(test)
    rows[2]["label"] = 2
    bad = _write(tmp_path / "three.jsonl", rows)
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "v").exit_code == 0
    result = _invoke("evaluate", "--victim", tmp_path / "v", "--data", bad, "--out", tmp_path / "eval")
    assert result.exit_code == 1
    assert result.output == f"attacks: error: {bad}, line 3: field 'label': 2, but victim v knows labels 0, 1\n"
    assert not (tmp_path / "eval").exists()


def test_a_refused_victim_leaves_no_half_written_folder(split_files, tmp_path):
    train, test = split_files
    for name in ("good", "tampered"):
        assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / name).exit_code == 0
    weights = next(p for p in (tmp_path / "tampered").iterdir() if p.suffix == ".skops")
    weights.write_bytes(weights.read_bytes() + b"\0")
    result = _invoke("evaluate", "--victim", tmp_path / "good", "--victim", tmp_path / "tampered", "--data", test,
                     "--out", tmp_path / "eval")
    assert result.exit_code == 1 and "changed after the victim was saved" in result.output
    assert not (tmp_path / "eval").exists()


def test_train_replaces_a_saved_victim_only_when_told(split_files, tmp_path):
    train, _ = split_files
    victim = tmp_path / "victim"
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", victim).exit_code == 0
    saved = (victim / "victim.json").read_bytes()
    result = _invoke("train", "--model", "bow-lr", "--train", train, "--out", victim)
    assert result.exit_code == 1
    assert f"--out {victim}: holds a saved tfidf-lr victim; pass --overwrite to replace it" in result.output
    assert (victim / "victim.json").read_bytes() == saved
    assert _invoke("train", "--model", "bow-lr", "--train", train, "--out", victim, "--overwrite").exit_code == 0
    assert json.loads((victim / "victim.json").read_text())["name"] == "bow-lr"
    afile = tmp_path / "afile"
    afile.write_text("")
    result = _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", afile)
    assert result.output == f"attacks: error: --out {afile}: is a file, not a folder\n"  # no model-hub hint


def test_training_warns_of_a_detector_that_says_one_label_for_everything(sample_path, tmp_path):
    rows = read_jsonl(sample_path)
    lopsided = [r for r in rows if r["label"] == 0][:150] + [r for r in rows if r["label"] == 1][:2]
    train, dev = _write(tmp_path / "train.jsonl", lopsided), _write(tmp_path / "dev.jsonl", rows[200:260])
    result = _invoke("train", "--model", "tfidf-lr", "--train", train, "--dev", dev, "--out", tmp_path / "v")
    assert result.exit_code == 0
    assert "attacks: warning: tfidf-lr is useless as trained: it calls every one of the 60 dev posts non-offensive" \
        in result.output
    assert "calls every one of the 60 dev posts non-offensive" in \
        json.loads((tmp_path / "v" / "training.json").read_text())["warning"]


def test_the_command_line_says_what_it_means(split_files, tmp_path):
    train, test = split_files
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "v").exit_code == 0
    result = _invoke("evaluate", "--victim", tmp_path / "v", "--data", test, "--attacks", "fgsm", "--out", tmp_path / "e")
    assert result.exit_code == 1 and "--attacks: unknown attack 'fgsm'; did you mean 'fgm'?" in result.output
    result = _invoke("evaluate", "--victim", tmp_path / "v", "--data", test, "--ops", "homophone", "--limit", "5",
                     "--out", f"{tmp_path / 'e'}/")
    assert result.exit_code == 0 and f"evaluate: {tmp_path / 'e' / 'summary.json'}\n" in result.output
    help_text = _invoke("--help").output
    assert re.search(r"--adv adaptive \\\n +--train train\.jsonl", help_text)  # two lines, as a shell reads them
    for command in ("train", "evaluate", "predict", "curve", "report", "merge", "pretrain-habertor"):
        from attacks.cli import main

        for option in main.commands[command].params:
            if getattr(option, "hidden", False) or option.name == "help" or not option.param_type_name == "option":
                continue
            assert option.help, f"attacks {command} {option.opts[0]} has no help text"


def test_predict_says_nothing_with_q_as_the_other_commands(split_files, tmp_path):
    train, test = split_files
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "v", "-q").exit_code == 0
    said = _invoke("predict", "--victim", tmp_path / "v", "--in", test, "--out", tmp_path / "said.jsonl")
    quiet = _invoke("predict", "--victim", tmp_path / "v", "--in", test, "--out", tmp_path / "quiet.jsonl", "-q")
    assert said.stderr.count("\n") == 2 and (quiet.exit_code, quiet.stderr) == (0, "")
    assert (tmp_path / "said.jsonl").read_bytes() == (tmp_path / "quiet.jsonl").read_bytes()


def test_the_evaluate_table_keeps_its_columns_whatever_the_names(capsys):
    """A search with its goal and method (search@targeted:label=1@beam:width=2) pushed its row's figures right of
    the header's columns, and every row's figures stood 4 characters left of their column's header."""
    from attacks.cli import _print_summary

    figures = {"textattack": {"success_rate": 0.25}, "drop_interval": {"f1": [0.01, 0.05]}, "drop": {"f1": 0.03},
               "all": {"f1": 0.7}, "coverage": {"changed": 120, "posts": 300, "share": 0.4, "offensive_changed": 100,
                                                "offensive_posts": 150, "offensive_share": 0.667}}
    attacks = {"cloak:emoji": figures, "search@targeted:label=1@beam:width=2": figures}
    _print_summary({"victims": {"tfidf-lr": {"clean": {"f1": 0.73}, "attacks": attacks}}}, "eval")
    header, *rows, _ = capsys.readouterr().err.splitlines()
    ends = [header.index(column) + len(column) for column in ("attacked", "interval", "success")]
    for row in rows:
        assert [row.index(" -> ") + 10, row.index("]") + 1, row.index("%") + 1] == ends, (header, row)
    assert header.index("attack ") == rows[0].index("cloak") and header.index("posts") == rows[1].index("120")


def test_an_interrupted_evaluation_finishes_on_a_rerun_with_resume_or_not(split_files, tmp_path, monkeypatch):
    """`attacks evaluate` resumes on a rerun; --resume, which cloak and mmbert ask for, was refused as unknown."""
    import attacks.evaluate as evaluator

    train, test = split_files
    assert _invoke("train", "--model", "tfidf-lr", "--train", train, "--out", tmp_path / "v").exit_code == 0
    args = ["evaluate", "--victim", tmp_path / "v", "--data", test, "--ops", "homophone,emoji", "--batch-size", 16,
            "-q", "--out"]
    assert _invoke(*args, tmp_path / "whole").exit_code == 0
    real = evaluator.run_attack
    monkeypatch.setattr(evaluator, "run_attack", interrupted_after(3, real))  # Ctrl-C on the third batch
    cut = _invoke(*args, tmp_path / "cut")
    assert (cut.exit_code, cut.stderr) == (130, f"attacks: interrupted; finished outcomes are kept in "
                                                f"{tmp_path / 'cut'}: rerun the same command (--resume or not) to "
                                                "finish\n")
    monkeypatch.setattr(evaluator, "run_attack", real)
    resumed = _invoke(*args, tmp_path / "cut", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert (tmp_path / "cut" / "summary.json").read_bytes() == (tmp_path / "whole" / "summary.json").read_bytes()


def test_an_interrupted_training_says_what_it_kept_and_where(sample_path, backbone, tmp_path, monkeypatch):
    """Ctrl-C in `attacks train` spoke of "a torch victim's last checkpoint" in "OUT/checkpoint" whatever the victim:
    a placeholder, and for a conventional victim a checkpoint that never was."""
    from attacks.victims.conventional import ConventionalVictim
    from mmbert.checkpoint import Checkpointer

    rows = read_jsonl(sample_path)  # few posts, of both labels: a quick run
    rows = [r for r in rows if r["label"]][:20] + [r for r in rows if not r["label"]][:20]
    train = _write(tmp_path / "train.jsonl", rows)
    monkeypatch.setattr(ConventionalVictim, "fit", lambda *args, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt))
    result = _invoke("train", "--model", "tfidf-lr", "--defence", "unveil", "--train", train, "--out", tmp_path / "v")
    assert (result.exit_code, result.stderr) == (130, f"attacks: interrupted; no checkpoint was kept in "
                                                       f"{tmp_path / 'v'}, nothing to resume from: rerun the same "
                                                       "command to start over\n")
    real = Checkpointer.save

    def save_then_stop(self, state):
        real(self, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(Checkpointer, "save", save_then_stop)
    args = ["train", "--model", "bert", "--backbone", backbone, "--defence", "unveil", "--train", train, "-q",
            "--out", tmp_path / "b"]
    result = _invoke(*args)
    kept = tmp_path / "b" / "detector" / "checkpoint"  # behind a defence, the detector's own folder
    assert (result.exit_code, result.stderr) == (130, f"attacks: interrupted; the last checkpoint (after epoch 1) is "
                                                       f"kept in {kept}: rerun with --resume to continue\n")


def test_the_report_of_an_unfinished_evaluation_says_to_finish_it(tfidf, posts, tmp_path, monkeypatch):
    import attacks.evaluate as evaluator

    monkeypatch.setattr(evaluator, "summarize", lambda out_dir: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        evaluator.evaluate({"tfidf": tfidf}, posts[2][:10], [], str(tmp_path / "eval"), progress=False)
    result = _invoke("report", tmp_path / "eval", "--out", tmp_path / "report")
    assert result.output == (f"attacks: error: {tmp_path / 'eval'}: unfinished (`attacks evaluate` stopped before it "
                             "wrote summary.json): rerun the same command to finish it\n")
