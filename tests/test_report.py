"""The robustness report: what it shows, that it is safe with hostile posts, and that it renders in a browser."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import dataclasses

import numpy as np

from attacks import make_victim
from attacks.victims.base import Settings, Victim, register_victim

from .conftest import read_jsonl

# A post carrying markup: the report must show it as text and never run it.
SEARCH = "search:homophone+similar+pinyin+english"  # named ops: a test elsewhere registers one that lists none
HOSTILE = "<script>document.body.setAttribute('data-pwned','1')</script>\"><img src=x onerror=\"alert(2)\">"


@pytest.fixture(scope="module")
def results(sample_path, backbone, tmp_path_factory):
    """An `attacks evaluate` folder: a TF-IDF victim and a tiny BERT, cloak, search, FGM and PGD attacks, on
    real posts with the hostile markup in front of each (minutes of training and searching: every test that
    reads it is marked slow)."""
    from attacks.cloaking import CloakAttack
    from attacks.evaluate import evaluate
    from attacks.fgm import EmbeddingAttack
    from attacks.search import SearchAttack

    rows = read_jsonl(sample_path)
    bert = make_victim("bert", {"backbone": backbone, "max_length": 48},
                       {"epochs": 2, "lr": 1e-3, "batch_size": 16, "patience": 2, "regularizer": "ear"}).fit(
        rows[:120], rows[120:160], progress=False)
    victims = {"tfidf-lr": make_victim("tfidf-lr").fit(rows[:200]), "bert": bert}
    data = [{**r, "text": HOSTILE + r["text"]} for r in rows[200:260]]
    attacks = [CloakAttack(ops="homophone"), CloakAttack(ops="pinyin", variants=2),
               SearchAttack(ops="homophone,similar,pinyin,english", query_budget=40),
               EmbeddingAttack(eps=0.5), EmbeddingAttack(eps=1.0), EmbeddingAttack(eps=1.0, steps=3)]
    out = tmp_path_factory.mktemp("eval") / "eval"
    evaluate(victims, data, attacks, str(out), data={"path": "posts.jsonl"}, progress=False)
    return out


CURVE = {"victim": "tfidf-lr", "test_records": 60, "seed": 0, "repeats": 2, "sizes": [50, 100], "runs": [],
         "by_size": [{"size": 50, "mean_macro_f1": 0.6, "min_macro_f1": 0.55, "max_macro_f1": 0.65},
                     {"size": 100, "mean_macro_f1": 0.7, "min_macro_f1": 0.68, "max_macro_f1": 0.72}]}
ROUTING = {"experts": ["text", "speech", "vision"], "layers": 2,
           "groups": {"clean": {"n": 3, "weights": [[0.4, 0.3, 0.3], [0.5, 0.25, 0.25]]},
                      "homophone": {"n": 2, "weights": [[0.3, 0.4, 0.3], [0.4, 0.35, 0.25]]}}}


@pytest.fixture(scope="module")
def extras(tmp_path_factory):
    """An `attacks curve` folder and an `mmbert routing` folder, as those commands write them."""
    root = tmp_path_factory.mktemp("extras")
    for name, table in (("curve", CURVE), ("routing", ROUTING)):
        (root / name).mkdir()
        (root / name / f"{name}.json").write_text(json.dumps(table))
    return str(root / "curve"), str(root / "routing")


@pytest.fixture(scope="module")
def report_dir(results, extras, tmp_path_factory):
    from attacks.report import build_report, load_results, write_report

    out = tmp_path_factory.mktemp("report")
    write_report(build_report([load_results(str(results))], curves=[extras[0]], routing=[extras[1]]), str(out))
    return out


@pytest.mark.slow
def test_the_report_holds_every_number_of_the_summary(results, report_dir):
    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    assert report["results"][0]["summary"] == summary
    assert [r["row"] for r in report["matrix"]] == ["tfidf-lr", "bert"]
    tfidf = report["matrix"][0]
    assert tfidf["cells"]["fgm@0.5"] == {"skipped": "tfidf-lr is not differentiable: no input embeddings to perturb"}
    homophone = summary["victims"]["tfidf-lr"]["attacks"]["cloak:homophone"]
    assert tfidf["cells"]["cloak:homophone"]["drop"] == homophone["drop"]["f1"]
    # cloak attacks first, the most damaging first; then the search; then FGM / PGD by eps
    cloaks = [a for a in report["attacks"] if a.startswith("cloak:")]
    assert report["attacks"][:2] == cloaks and report["attacks"][2] == SEARCH
    assert report["attacks"][3:] == ["fgm@0.5", "fgm@1", "pgd@1"]
    means = [sum(r["cells"][a]["drop"] for r in report["matrix"]) for a in cloaks]
    assert means == sorted(means, reverse=True)
    curves = {(c["row"], c["kind"]): c["points"] for c in report["budget"]}
    assert set(curves) == {("bert", "fgm"), ("bert", "pgd")}  # the TF-IDF victim has no embeddings
    assert curves[("bert", "fgm")][0] == [0.0, summary["victims"]["bert"]["clean"]["accuracy"]]
    search = next(s for s in report["search"] if s["row"] == "tfidf-lr")
    figures = summary["victims"]["tfidf-lr"]["attacks"][SEARCH]
    assert search["success_rate"] == figures["textattack"]["success_rate"]
    # per gold label: the counts add up to the whole, and the report shows each label's rate
    by_label = figures["textattack_by_label"]
    assert set(by_label) == {"0", "1"}
    for key in ("successes", "failures", "skipped"):
        assert sum(c[key] for c in by_label.values()) == figures["textattack"][key]
    assert search["by_label"] == {k: {"right": c["successes"] + c["failures"], "flipped": c["successes"],
                                      "rate": c["success_rate"]} for k, c in by_label.items()}
    md = (report_dir / "report.md").read_text(encoding="utf-8")
    offensive = by_label["1"]
    assert (f"| {offensive['successes']} / {offensive['successes'] + offensive['failures']} "
            f"({offensive['success_rate']:.1%}) |") in md


@pytest.mark.slow
def test_examples_are_flipped_posts_with_their_edits_marked(report_dir):
    from cloak import apply_edits

    report = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    examples = [e for row in report["examples"].values() for e in row]
    assert examples, "the search flips some posts: there are examples to show"
    for example in examples:
        original = "".join(s["text"] for s in example["original"])
        adversarial = "".join(s["text"] for s in example["adversarial"])
        assert apply_edits(original, example["edits"]) == adversarial
        assert {s["op"] for s in example["adversarial"] if s["op"]} == {e["op"] for e in example["edits"]}
        assert example["clean_p"] > 0.5 > example["attacked_p"]  # right before, wrong after (two classes)


@pytest.mark.slow
def test_examples_show_the_search_before_the_cloak_ops_crowd_it_out(results):
    """The search is the most damaging attack: with one slot, a victim the search and a cloak op both
    flipped shows the search's post."""
    from attacks.report import attack_order, examples_of, load_results

    result = load_results(str(results))
    attacks = attack_order([result])
    cloaks = [a for a in attacks if a.startswith("cloak:")]
    both = [v for v in result.summary["victims"]
            if examples_of(result, v, cloaks, 1) and examples_of(result, v, [SEARCH], 1)]
    assert both, "a victim that a cloak op and the search both flipped"
    for victim in both:
        assert [e["attack"] for e in examples_of(result, victim, attacks, 1)] == [SEARCH]


class _Page(HTMLParser):
    """Every tag and attribute of a page, and the victims of the matrix (a column each)."""

    def __init__(self):
        super().__init__()
        self.tags, self.attributes, self.matrix_victims, self._table = [], [], 0, None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, k, v) for k, v in attrs]
        if tag == "table":
            self._table = dict(attrs).get("id")
        if tag == "th" and self._table == "matrix" and "victim" in (dict(attrs).get("class") or ""):
            self.matrix_victims += 1


@pytest.mark.slow
def test_the_html_runs_nothing_and_fetches_nothing(report_dir):
    text = (report_dir / "report.html").read_text(encoding="utf-8")
    page = _Page()
    page.feed(text)
    assert "script" not in page.tags and "img" not in page.tags
    assert not [a for a in page.attributes if a[1].lower().startswith("on")], "no inline event handlers"
    links = [v for _, k, v in page.attributes if k.lower() in ("src", "href", "xlink:href", "action")]
    assert all(v.startswith("#") for v in links), links  # only links inside the page (SVG glyph uses)
    assert "&lt;script&gt;document.body.setAttribute" in text  # the hostile post is shown, as text
    assert page.matrix_victims == 2


@pytest.mark.slow
def test_the_header_says_what_each_victim_is(report_dir):
    html, md = (report_dir / "report.html").read_text(), (report_dir / "report.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("- `bert`: "))
    assert line.startswith("- `bert`: bert, backbone ") and "regularizer ear" in line and "epochs 2" in line
    assert "trained on not recorded" in line  # fitted in Python and never saved: nothing to say of its data
    assert "<dt>bert</dt><dd>bert, backbone " in html and "<dt>tfidf-lr</dt><dd>conventional, " in html


@pytest.mark.slow
def test_the_markdown_has_a_row_per_victim_and_no_live_markup(report_dir):
    md = (report_dir / "report.md").read_text(encoding="utf-8")
    for victim in ("tfidf-lr", "bert"):  # the tiny victims score below 0.5 on these posts: flagged so
        assert re.search(rf"^\| {victim}( \(useless as trained\))? \| 0\.\d{{3}} \|", md, re.M)
    assert "<script>" not in md and "\\<script\\>" in md


@pytest.mark.slow
def test_folders_compare_side_by_side(results, tmp_path):
    from attacks.report import build_report, load_results, markdown

    twice = build_report([load_results(str(results), "before"), load_results(str(results), "after")])
    assert [r["row"] for r in twice["matrix"]] == ["before / tfidf-lr", "before / bert", "after / tfidf-lr",
                                                   "after / bert"]
    assert sum(line.startswith("- `bert`: ") for line in markdown(twice).splitlines()) == 1  # in both: said once
    with pytest.raises(ValueError, match="share the label"):
        build_report([load_results(str(results)), load_results(str(results))])


@pytest.mark.slow
def test_the_report_command(results, tmp_path, sample_path):
    from click.testing import CliRunner

    from attacks.cli import main

    runner = CliRunner()
    result = runner.invoke(main, ["report", str(results), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[-1] == f"report: {tmp_path / 'r' / 'report.html'} (and report.md, report.json)"
    assert re.match(r"clean macro-F1 +0\.\d{3} +0\.\d{3}$", lines[2]) and any(
        line.startswith(SEARCH + " ") for line in lines)
    for args, message in (([str(tmp_path)], "no summary.json"),
                          ([str(results), "--label", "a", "--label", "b"], "--label: 2 given for 1"),
                          ([str(results), "--curve", str(tmp_path)], "no curve.json")):
        result = runner.invoke(main, ["report", *args, "--out", str(tmp_path / "bad")])
        assert result.exit_code == 1 and message in result.output, result.output


def _chromium() -> str | None:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if found is None and os.environ.get("CI"):
        pytest.fail("CI needs chromium for the report's browser test (.ci/run installs it)")
    return found


@pytest.mark.slow
def test_the_report_renders_in_a_browser_and_the_hostile_post_stays_text(report_dir, tmp_path):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium on this machine")
    page = (report_dir / "report.html").as_uri()
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
             "--v=0", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not [line for line in dom.stderr.splitlines() if ":CONSOLE" in line], dom.stderr  # no console errors
    assert "data-pwned" not in dom.stdout.split("<body", 1)[1].split(">", 1)[0]  # the script did not run
    assert "&lt;script&gt;document.body.setAttribute('data-pwned','1')&lt;/script&gt;" in dom.stdout
    rendered = _Page()
    rendered.feed(dom.stdout)
    assert rendered.matrix_victims == 2 and "img" not in rendered.tags and "image" not in rendered.tags
    assert "MMBERT routing" in dom.stdout  # the routing heat map, which once was a bitmap the policy blocked
    shot = tmp_path / "report.png"
    run = subprocess.run([*flags, "--window-size=1200,1600", f"--screenshot={shot}", page], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and shot.stat().st_size > 20_000, run.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as image:
        assert len(image.convert("L").getcolors(maxcolors=1 << 16) or range(1 << 16)) > 16  # not a blank page


@pytest.mark.slow
def test_curves_and_routing_are_drawn_inline_as_shapes(report_dir):
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "Training-size curve: tfidf-lr" in page and "MMBERT routing" in page
    assert page.count("<svg") == 4  # per-op bars, accuracy against eps, the curve and the routing, all inline
    assert "<image" not in page and "data:" not in page  # a bitmap in an SVG is an image the page's policy blocks


@pytest.mark.slow
def test_the_plots_read_without_hovering(results, monkeypatch):
    """The bars start at zero; the routing's colour bar is labelled with its range; each matrix cell shows
    the macro-F1 under the attack, not only on hover."""
    import matplotlib.pyplot as plt

    import attacks.report.plots as plots
    from attacks.report import build_report, html, load_results, op_bars_svg
    from mmbert.routing import plot_routing

    saved = []
    monkeypatch.setattr(plots, "save", lambda fig, path: (saved.append(fig), plt.close(fig),
                                                                   open(path, "w").write("<svg></svg>")))
    report = build_report([load_results(str(results))])
    op_bars_svg(report)
    assert saved[0].axes[0].get_xlim() == (0.0, 1.0)
    legend, = saved[0].legends  # below the bars, at the text's size: it hides no bar and reads in print
    assert legend.get_texts() and all(t.get_text().split(" (")[0] in {r["row"] for r in report["matrix"]}
                                      for t in legend.get_texts())
    assert all(t.get_fontsize() >= 10 for t in legend.get_texts()) and not saved[0].axes[0].get_legend()
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: saved.append(fig))
    plot_routing(ROUTING, "routing.svg")
    bar = saved[-1].axes[-1]
    assert [t.get_text() for t in bar.get_yticklabels()] == ["0.250", "0.375", "0.500"]
    page = html(report)
    cell = report["matrix"][0]["cells"]["cloak:homophone"]
    assert f'<span class="attacked">{cell["f1"]:.3f}</span>' in page


@dataclasses.dataclass
class Terms(Settings):
    terms: str = ""


@register_victim
class KeywordFilter(Victim):
    """A keyword filter: offensive if the post holds one of its terms (none: it flags nothing)."""

    kind = "test-keyword-filter"
    Config = Terms

    @property
    def name(self) -> str:
        return f"filter:{len(self.config.terms.split(',')) if self.config.terms else 0}"

    def fit(self, train, dev=None, **_):
        self.num_labels_ = 2
        return self

    def predict_proba(self, texts):
        terms = [t for t in self.config.terms.split(",") if t]
        return np.array([[0.1, 0.9] if any(t in text for t in terms) else [0.9, 0.1] for text in texts])


@pytest.fixture(scope="module")
def filters(sample_path, tmp_path_factory):
    """Keyword filters attacked by two cloak ops: every lexicon term, a fifth of them, and none (a filter
    that flags nothing: it loses nothing to any attack, and detects nothing)."""
    from attacks.cloaking import CloakAttack
    from attacks.evaluate import evaluate
    from cloak.targets import default_lexicon

    terms = sorted(default_lexicon().terms)
    victims = {"every-term": KeywordFilter({"terms": ",".join(terms)}).fit([]),
               "fifth": KeywordFilter({"terms": ",".join(terms[::5])}).fit([]),
               "flags-nothing": KeywordFilter({"terms": ""}).fit([])}
    out = tmp_path_factory.mktemp("filters") / "eval"
    evaluate(victims, read_jsonl(sample_path), [CloakAttack(ops="homophone"), CloakAttack(ops="pinyin"),
                                                CloakAttack(ops="fullwidth")], str(out), progress=False)
    return out


def test_holds_up_best_ranks_by_macro_f1_under_attack_and_leaves_out_a_useless_victim(filters):
    from attacks.report import build_report, load_results

    report = build_report([load_results(str(filters))])
    rows = {r["row"]: r for r in report["matrix"]}
    assert rows["flags-nothing"]["useless"] == "it calls every one of the 300 clean posts non-offensive"
    assert all(c["drop"] == 0 for c in rows["flags-nothing"]["cells"].values())  # the old rule's winner
    group, = report["ranking"]
    ranked = group["rows"]
    counted = ["cloak:homophone", "cloak:pinyin"]  # fullwidth changes 0.3% of the posts: barely applied
    assert all(rows[r]["cells"]["cloak:fullwidth"]["barely"] for r in rows)
    assert [e["row"] for e in ranked] == sorted(("every-term", "fifth"), key=lambda r: -np.mean(
        [rows[r]["cells"][a]["f1"] for a in counted]))
    best, second = ranked
    assert best["attacks"] == second["attacks"] == counted
    assert best["mean_f1"] >= second["mean_f1"] and best["worst_f1"] == min(rows[best["row"]]["cells"][a]["f1"]
                                                                           for a in counted)
    lead = second["lead"]
    assert lead["value"] == pytest.approx(best["mean_f1"] - second["mean_f1"])
    assert lead["interval"][0] <= lead["value"] <= lead["interval"][1]
    said = " ".join(report["headlines"])
    assert f"Holds up best under cloaking: {best['row']}, macro-F1 {best['mean_f1']:.3f}" in said
    assert "flags-nothing is useless as trained" in said and "Holds up best under cloaking: flags-nothing" not in said
    assert "on average over 2 cloak attacks; barely applied, left out: fullwidth" in said
    verdict = "within the noise" if lead["noise"] else "95% interval"
    assert f"over the 2 attacks both are judged by, {best['row']} leads by {lead['value']:.3f}, {verdict}" in said


def test_every_drop_carries_a_paired_interval_and_noise_is_said_to_be_so(filters):
    summary = json.loads((filters / "summary.json").read_text(encoding="utf-8"))
    for entry in summary["victims"].values():
        for figures in entry["attacks"].values():
            low, high = figures["drop_interval"]["f1"]
            assert low <= figures["drop"]["f1"] <= high
    constant = summary["victims"]["flags-nothing"]["attacks"]["cloak:homophone"]
    assert constant["drop_interval"] == {"f1": [0.0, 0.0], "accuracy": [0.0, 0.0]}  # the same predictions: no noise
    from attacks.report import build_report, load_results, markdown, terminal_matrix

    report = build_report([load_results(str(filters))])
    cell = report["matrix"][0]["cells"]["cloak:homophone"]
    assert cell["noise"] == (cell["interval"][0] <= 0 <= cell["interval"][1])
    assert "~: within the noise" in terminal_matrix(report) and "~0.000 [+0.000, +0.000]" in markdown(report)


def test_the_paired_bootstrap_is_scikit_learns_macro_f1_resampled():
    from sklearn.metrics import f1_score

    from attacks.bootstrap import macro_f1, paired_intervals

    rng = np.random.default_rng(0)
    for num_labels in (2, 3):
        labels, predictions = rng.integers(0, num_labels, 50), rng.integers(-1, num_labels, 50)
        draws = rng.integers(0, 50, (5, 50))
        expected = [f1_score(labels[d], predictions[d], labels=range(num_labels), average="macro", zero_division=0)
                    for d in draws]
        assert macro_f1(labels, predictions, num_labels, draws) == pytest.approx(expected)
    labels = rng.integers(0, 2, 300)
    right, half = labels.copy(), np.where(rng.random(300) < 0.5, labels, 1 - labels)
    low, high = paired_intervals(labels, right, half, 2)["f1"]
    assert 0.3 < low < 0.5 < high < 0.7 and paired_intervals(labels, right, half, 2)["f1"] == [low, high]


def test_labels_are_named_never_bare(filters, tmp_path):
    from attacks.report import build_report, html, load_results

    page = html(build_report([load_results(str(filters))]))
    assert "label 1" not in page and "label 0" not in page
    renamed = build_report([load_results(str(filters))], label_names={0: "safe", 1: "hateful"})
    assert renamed["label_names"] == {"0": "safe", "1": "hateful"}
    assert "p(hateful)" in html(renamed) or not any(renamed["examples"].values())


def _trained_on_homophones(sample_path, tmp_path) -> tuple[list[dict], list[dict], Path, Path]:
    """tfidf-lr trained on 200 posts and their homophone cloaks, saved in ``tmp_path/augmented``: the posts,
    their cloaks, the training file and the test file (the other 100 posts)."""
    from click.testing import CliRunner

    from attacks.cli import main
    from cloak import Perturber
    from cloak.run import cloak_record

    posts = read_jsonl(sample_path)
    perturber = Perturber(ops="homophone", seed=0)
    cloaked = [json.loads(cloak_record(perturber, i, r, 1)[0][0]) for i, r in enumerate(posts[:200])]
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in posts[:200] + cloaked), encoding="utf-8")
    test.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in posts[200:]), encoding="utf-8")
    assert CliRunner().invoke(main, ["train", "--model", "tfidf-lr", "--train", str(train), "--out",
                                     str(tmp_path / "augmented")]).exit_code == 0
    return posts, cloaked, train, test


def test_the_defences_view_leaves_out_the_attacks_seen_in_training_as_the_ranking_does(sample_path, tmp_path):
    """The defences view's mean drop is over the attacks the ranking judges by: a detector trained on homophone
    cloaks is not averaged over the homophone attack, with or without unveil in front, nor behind unveil over
    the pinyin attack its tables read back; and the page says so."""
    from click.testing import CliRunner

    from attacks.cli import main
    from attacks.report import build_report, html, load_results, markdown

    _, _, _, test = _trained_on_homophones(sample_path, tmp_path)
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(tmp_path / "augmented"), "--data", str(test),
                                       "--ops", "homophone,pinyin,zhuyin", "--defence", "unveil", "--out",
                                       str(tmp_path / "eval"), "-q"])
    assert result.exit_code == 0, result.output
    report = build_report([load_results(str(tmp_path / "eval"))])
    assert [row["cells"]["cloak:homophone"]["seen"] for row in report["matrix"]] == [True, True]
    view = report["defences"]
    assert view["attacks"] == ["cloak:zhuyin"] == report["ranking"][0]["attacks"]
    zhuyin = [row["cells"]["cloak:zhuyin"]["drop"] for row in report["matrix"]]
    assert [e["mean_drop"] for e in view["rows"]] == pytest.approx(zhuyin)
    for page in (markdown(report), " ".join(html(report).split())):
        assert "the 1 cloak attack every row here is judged by: zhuyin" in page
        assert ("an attack whose op a row saw in training, that a row's defence reads back with the tables that made "
                "it (only attacks by foreign ops, from other sources, judge a detector behind unveil), or that changed "
                "under 5% of the posts, is left out") in page


def test_a_defended_detector_is_judged_by_cloaks_from_other_sources_than_its_tables(sample_path, tmp_path):
    """Behind cloak unveil, a cloak attack by the project's own ops is read back by the tables that made it: the
    summary prints the attacks by foreign ops apart, and the report marks the others as its defence's tables'
    (for the defended row only), leaves them out of its averages and ranks the defences by the foreign ones."""
    from click.testing import CliRunner

    from attacks.cli import main
    from attacks.report import build_report, html, load_results, markdown

    _, _, _, test = _trained_on_homophones(sample_path, tmp_path)
    result = CliRunner().invoke(main, ["evaluate", "--victim", str(tmp_path / "augmented"), "--data", str(test),
                                       "--ops", "pinyin,zhuyin", "--defence", "unveil", "--out",
                                       str(tmp_path / "eval"), "-q"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    apart = [i for i, line in enumerate(lines) if line.strip().startswith("from other sources")]
    assert len(apart) == 1  # for the defended victim alone
    assert "+unveil" in lines[apart[0] - 1] and "cloak:pinyin" in lines[apart[0] - 1]
    assert "+unveil" in lines[apart[0] + 1] and "cloak:zhuyin" in lines[apart[0] + 1]

    report = build_report([load_results(str(tmp_path / "eval"))])
    own = {bool(row["facts"].get("defence")): (row["cells"]["cloak:pinyin"]["own_tables"],
                                               row["cells"]["cloak:zhuyin"]["own_tables"]) for row in report["matrix"]}
    assert own == {False: (False, False), True: (True, False)}
    assert report["defences"]["attacks"] == ["cloak:zhuyin"] == report["ranking"][0]["attacks"]
    assert sum("1 attack made by its defence's own tables left out" in line for line in report["headlines"]) == 1
    assert markdown(report).count("(its defence's tables)") == 2  # the matrix's cell and the coverage table's
    assert len(re.findall(r'<td class="[^"]*\bown\b', html(report))) == 1


def test_attacks_seen_in_training_are_marked_and_left_out_of_the_ranking(sample_path, tmp_path):
    """A detector trained on homophone cloaks and attacked by homophones is tested in distribution: the
    report marks that attack seen, and judges the detector by the attacks it did not see."""
    from click.testing import CliRunner

    from attacks.cli import main
    from attacks.report import build_report, html, load_results, markdown

    posts, cloaked, train, test = _trained_on_homophones(sample_path, tmp_path)
    runner = CliRunner()
    saved = json.loads((tmp_path / "augmented" / "victim.json").read_text())
    assert set(saved["trained_on"]["train"]["cloaked"]["ops"]) == {"homophone"}
    assert saved["trained_on"]["train"]["cloaked"]["records"] == sum(bool(r["cloak"]["edits"]) for r in cloaked)
    result = runner.invoke(main, ["evaluate", "--victim", str(tmp_path / "augmented"), "--data", str(test), "--ops",
                                  "homophone,pinyin", "--out", str(tmp_path / "eval"), "-q"])
    assert result.exit_code == 0, result.output
    report = build_report([load_results(str(tmp_path / "eval"))])
    cells = report["matrix"][0]["cells"]
    assert cells["cloak:homophone"]["seen"] and not cells["cloak:pinyin"]["seen"]
    if report["ranking"]:
        assert report["ranking"][0]["attacks"] == ["cloak:pinyin"]
    said = " ".join(report["headlines"])
    assert "1 attack whose op it saw in training left out" in said
    assert "(seen)" in markdown(report)
    # what the victim is: its training file, that file's SHA-256 and size, its labels by name
    trained = saved["trained_on"]["train"]
    counts = ", ".join(f"{n:,} {name}" for name, n in zip(("non-offensive", "offensive"), trained["labels"].values()))
    for page in (markdown(report), html(report)):
        assert f"sha256 {trained['sha256'][:12]}, {trained['bytes'] / 1000:,.0f} kB, {len(posts[:200] + cloaked):,} " \
               f"posts: {counts}" in page
        assert str(train) in page.replace("\\", "") and "label 0" not in page and "label 1" not in page


def test_the_styles_of_the_training_cloaks_are_recorded_and_shown(sample_path, tmp_path):
    """victim.json records, per op of the training data's cloaks, the styles its edits show (pinyin spelled whole,
    spaced, upper case; homophones among rare characters), and the report's line on the victim names them."""
    from click.testing import CliRunner

    from attacks.cli import main
    from attacks.report import build_report, load_results, markdown
    from cloak import Perturber
    from cloak.run import cloak_record

    posts = read_jsonl(sample_path)[:200]
    cloaked = [json.loads(line) for ops in ("pinyin:mode=word:spacing=spaced:case=upper:tones=none:lookalike=0",
                                            "homophone:word=false:common_share=0")
               for i, r in enumerate(posts) for line in cloak_record(Perturber(ops=ops, seed=0), i, r, 1)[0]]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in posts + cloaked), encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["train", "--model", "tfidf-lr", "--train", str(train), "--out",
                                str(tmp_path / "v")]).exit_code == 0
    seen = json.loads((tmp_path / "v" / "victim.json").read_text())["trained_on"]["train"]["cloaked"]
    by_op = {op: sum(1 for r in cloaked if op in r["cloak"]["ops"]) for op in ("pinyin", "homophone")}
    assert seen["ops"] == by_op
    multi = sum(any(len(e["src"]) > 1 for e in r["cloak"]["edits"]) for r in cloaked if "pinyin" in r["cloak"]["ops"])
    assert seen["styles"]["pinyin"]["upper"] == by_op["pinyin"] and seen["styles"]["pinyin"]["spaced"] == multi
    assert "tone marks" not in seen["styles"]["pinyin"] and "capital" not in seen["styles"]["pinyin"]
    assert seen["styles"]["homophone"] == {"characters": by_op["homophone"], "rare characters": by_op["homophone"]}
    test = tmp_path / "test.jsonl"
    test.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in read_jsonl(sample_path)[200:]),
                    encoding="utf-8")
    assert runner.invoke(main, ["evaluate", "--victim", str(tmp_path / "v"), "--data", str(test), "--ops", "pinyin",
                                "--out", str(tmp_path / "e"), "-q"]).exit_code == 0
    page = markdown(build_report([load_results(str(tmp_path / "e"))]))
    assert f"pinyin {by_op['pinyin']:,} (upper {by_op['pinyin']:,}, spaced {multi:,}, whole word" in page
    assert f"homophone {by_op['homophone']:,} (characters {by_op['homophone']:,}, rare characters" in page


# --- runs that hold different attacks, attacks the report knows only by what they declare -------------------

@pytest.fixture(scope="module")
def other_ops(sample_path, tmp_path_factory):
    """The keyword filters of ``filters`` attacked with other ``--ops``: a mix and one op they share."""
    from attacks.cloaking import CloakAttack
    from attacks.evaluate import evaluate
    from cloak.targets import default_lexicon

    terms = sorted(default_lexicon().terms)
    victims = {"every-term": KeywordFilter({"terms": ",".join(terms)}).fit([]),
               "fifth": KeywordFilter({"terms": ",".join(terms[::5])}).fit([])}
    out = tmp_path_factory.mktemp("other_ops") / "eval"
    evaluate(victims, read_jsonl(sample_path), [CloakAttack(ops="homophone,emoji"), CloakAttack(ops="pinyin")],
             str(out), progress=False)
    return out


@pytest.mark.slow
def test_runs_holding_different_attacks_compare_with_a_blank_where_a_run_lacks_one(results, filters, other_ops,
                                                                                  tmp_path):
    """Comparing two --ops choices: every attack any run has, a blank where a run lacks it, and the page says
    which run lacks which (issue 53, 1)."""
    from click.testing import CliRunner

    from attacks.cli import main
    from attacks.report import build_report, html, load_results, markdown

    folders = [load_results(str(results), "tiny"), load_results(str(filters), "demo"),
               load_results(str(other_ops), "mine")]
    report = build_report(folders)
    every = {a for r in folders for a in r.summary["attacks"]}
    assert set(report["attacks"]) == every
    rows = {r["row"]: r for r in report["matrix"]}
    assert "cloak:homophone+emoji" not in rows["demo / every-term"]["cells"]
    assert "cloak:fullwidth" not in rows["mine / every-term"]["cells"] and SEARCH not in rows["mine / fifth"]["cells"]
    mine = json.loads((other_ops / "summary.json").read_text(encoding="utf-8"))["attacks"]
    assert report["missing"]["mine"] == [a for a in report["attacks"] if a not in mine]
    md, page = markdown(report), html(report)
    for text in (md, page):
        assert "`mine` did not run" in text.replace("<code>", "`").replace("</code>", "`")
    coverage = {c["attack"]: c for c in report["coverage"]}
    columns = [x["row"] for x in coverage["cloak:fullwidth"]["rows"]]
    assert [x["row"] for x in coverage["cloak:pinyin"]["rows"]] == columns
    assert coverage["cloak:fullwidth"]["rows"][-1]["drop"] is None  # mine has no fullwidth: a blank
    out = CliRunner().invoke(main, ["report", str(filters), str(other_ops), "--label", "demo", "--label", "mine",
                                    "--out", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output


@pytest.mark.slow
def test_the_header_shows_each_attack_s_settings_as_it_declares_them(report_dir):
    """No `alpha None` (issue 53, 6): FGM takes one step of eps, PGD's step says what it is when left unset."""
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    attacks = page.split("<dt>attacks</dt><dd>", 1)[1].split("</dd>", 1)[0]
    assert "None" not in attacks
    fgm, pgd = (next(line for line in attacks.split("<br>") if line.startswith(kind)) for kind in ("fgm", "pgd"))
    assert fgm == "fgm (eps 0.5, 1)" and pgd == "pgd (eps 1), steps 3, alpha 2.5 eps / steps"


@pytest.mark.slow
def test_the_summary_records_what_each_attack_declares_and_old_folders_read_alike(results, tmp_path):
    """evaluate writes each attack's declaration into its summary entry; a folder written before it has none,
    and reads as the built-in kinds declared then."""
    from attacks.attack import ReportedAs
    from attacks.report import build_report, load_results, markdown

    summary = json.loads((results / "summary.json").read_text(encoding="utf-8"))
    declared = {a: ReportedAs.from_dict(s["reported_as"]) for a, s in summary["attacks"].items()}
    assert [declared[a].figure for a in ("cloak:homophone", SEARCH, "fgm@0.5", "pgd@1")] == \
        ["ranked", "counts", "curve", "curve"]
    old = tmp_path / "old"
    shutil.copytree(results, old)
    for entry in summary["attacks"].values():
        del entry["reported_as"]
    (old / "summary.json").write_text(json.dumps(summary, ensure_ascii=False), encoding="utf-8")
    new, before = build_report([load_results(str(results), "r")]), build_report([load_results(str(old), "r")])
    assert markdown(new).split("\n", 3)[3] == markdown(before).split("\n", 3)[3]  # all but the folder's own line
    assert {k: v for k, v in new.items() if k not in ("generated", "results")} == \
        {k: v for k, v in before.items() if k not in ("generated", "results")}


@dataclasses.dataclass
class PlannedAttack:
    """A test double of an attack of a kind the report has never heard of: per victim (by its name) it
    breaks the share of the posts its plan gives (the same posts every run), so that one detector resists
    it and another does not; what it declares is all the report knows of it."""

    kind: str
    ops: str
    broken: dict
    reported_as: object
    queries: int | None = None  # a budget, for an attack drawn as a curve over it

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.ops}" + ("" if self.queries is None else f"@{self.queries}")

    def settings(self) -> dict:
        return {"kind": self.kind, "ops": self.ops, **({} if self.queries is None else {"queries": self.queries})}

    def skip_reason(self, facts) -> None:
        return None

    def attack(self, victim, records, positions, clean):
        from attacks.attack import Outcome

        outcomes = []
        for record, position, probs in zip(records, positions, clean):
            hit = (position * 37 + len(self.name)) % 100 < self.broken[victim.name] * 100
            wrong = np.eye(2)[1 - int(record["label"])] * 0.8 + 0.1
            outcomes.append(Outcome(record["text"] + "!" * hit, [], wrong if hit else probs, changed=hit, queries=1))
        return outcomes


@pytest.fixture(scope="module")
def planned(sample_path, tmp_path_factory):
    """Two keyword filters, one trained on homophone cloaks (so it meets that attack in distribution), under
    planned cloaks and a planned search: the one that holds up best under the cloaks it did not see is the
    one the search breaks most."""
    from attacks.attack import ReportedAs
    from attacks.evaluate import evaluate
    from cloak.targets import default_lexicon

    terms = sorted(default_lexicon().terms)
    augmented = KeywordFilter({"terms": ",".join(terms)}).fit([])
    plain = KeywordFilter({"terms": ",".join(terms[::5])}).fit([])
    augmented.trained_on = {"train": {"records": 400, "labels": {"0": 200, "1": 200},
                                      "cloaked": {"records": 200, "ops": {"homophone": 200}}}}
    cloaks = ReportedAs(figure="ranked", trained_ops=True, prefix="veil:", varies="ops")
    plan = {"homophone": (0.1, 0.5), "pinyin": (0.1, 0.4), "emoji": (0.1, 0.4)}
    attacks = [PlannedAttack("veil", op, {augmented.name: a, plain.name: p}, cloaks) for op, (a, p) in plan.items()]
    attacks.append(PlannedAttack("probe", "all", {augmented.name: 0.9, plain.name: 0.1},
                                 ReportedAs(figure="counts", examples=0, varies="ops")))
    budget = ReportedAs(figure="curve", axis="queries", axis_text="queries a post", examples=None, varies="queries")
    attacks += [PlannedAttack("spend", "all", {augmented.name: share, plain.name: share}, budget, queries)
                for queries, share in ((50, 0.6), (10, 0.2))]
    out = tmp_path_factory.mktemp("planned") / "eval"
    evaluate({"augmented": augmented, "plain": plain}, read_jsonl(sample_path), attacks, str(out), progress=False)
    return out


def test_holds_up_best_compares_every_detector_on_the_same_attacks(planned):
    """The plain detector is judged by three cloaks, the augmented one by the two it did not see: both are
    ranked on those two, and the table says which (issue 53, 7)."""
    from attacks.report import build_report, html, load_results, markdown

    report = build_report([load_results(str(planned))])
    group, = report["ranking"]
    assert group["attacks"] == ["veil:emoji", "veil:pinyin"]
    rows = {r["row"]: r for r in report["matrix"]}
    for entry in group["rows"]:
        cells = rows[entry["row"]]["cells"]
        assert entry["mean_f1"] == pytest.approx(np.mean([cells[a]["f1"] for a in group["attacks"]]))
    best, second = group["rows"]
    assert best["row"] == "augmented" and second["lead"]["value"] == pytest.approx(best["mean_f1"] - second["mean_f1"])
    for page in (markdown(report), html(report)):
        assert "the 2 cloak attacks every row here is judged by: emoji, pinyin" in page


def test_an_attack_drawn_as_a_curve_over_its_own_axis(planned):
    """An attack of a kind the report has never heard of, declared a curve over queries, is one."""
    from attacks.report import build_report, html, load_results, markdown

    report = build_report([load_results(str(planned))])
    assert report["attacks"][-2:] == ["spend:all@10", "spend:all@50"]  # after the rest, by their budget
    curve = next(c for c in report["budget"] if c["row"] == "plain")
    rows = {r["row"]: r for r in report["matrix"]}
    assert curve["axis"] == "queries" and [x for x, _ in curve["points"]] == [0.0, 10.0, 50.0]
    assert curve["points"][0][1] == rows["plain"]["clean_accuracy"]
    page = markdown(report)
    assert "## Accuracy under SPEND" in page and "| victim | attack | queries 0 | queries 10 | queries 50 |" in page
    assert "Accuracy against queries (SPEND)" in html(report)


def test_the_best_under_cloaking_is_not_called_best_without_the_attack_that_hurts_it_more(planned):
    """The augmented detector holds up best under the cloaks, but the search breaks it far more than the
    plain one: the verdict says so, with the figures (issue 53, 7)."""
    from attacks.report import build_report, load_results, markdown

    report = build_report([load_results(str(planned))])
    rows = {r["row"]: r for r in report["matrix"]}
    under = {r: rows[r]["cells"]["probe:all"]["f1"] for r in rows}
    assert under["augmented"] < under["plain"]
    said = " ".join(report["headlines"])
    assert (f"but probe:all hurts augmented more than plain (macro-F1 {under['augmented']:.3f} under it against "
            f"{under['plain']:.3f}") in said
    assert "worse under probe:all" in markdown(report)


def _widths(chromium: str, page: str, tmp_path) -> list[dict]:
    """Each table's width and its container's, as Chromium lays the page out 1280 px wide (a copy of the
    page with a script that measures them, the page's own policy lifted for it)."""
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probe = ("<script>document.body.setAttribute('data-widths', JSON.stringify([...document.querySelectorAll("
             "'table')].map(t => ({id: t.id, table: t.getBoundingClientRect().width, box: t.parentElement."
             "clientWidth, page: document.documentElement.scrollWidth}))))</script>")
    copy = tmp_path / "measured.html"
    copy.write_text(text.replace("</body>", probe + "</body>"), encoding="utf-8")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                          f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1280,900", "--dump-dom",
                          copy.as_uri()], capture_output=True, text=True, timeout=120)
    found = re.search(r'data-widths="([^"]*)"', dom.stdout)
    assert found, dom.stderr[-2000:]
    import html as html_module

    return json.loads(html_module.unescape(found.group(1)))


@pytest.mark.slow
def test_no_table_is_cut_at_1280_pixels(report_dir, results, filters, other_ops, tmp_path):
    """At a 1280 px wide window every table fits its container and the page does not scroll sideways
    (issue 53, 7: the matrix and the search table cut their last columns)."""
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium on this machine")
    from attacks.report import build_report, html, load_results

    wide = build_report([load_results(str(results), "tiny"), load_results(str(filters), "demo"),
                         load_results(str(other_ops), "mine")])
    for page in ((report_dir / "report.html").read_text(encoding="utf-8"), html(wide)):
        widths = _widths(chromium, page, tmp_path)
        assert {"matrix", "search"} <= {w["id"] for w in widths}
        assert all(w["table"] <= w["box"] + 0.5 and w["page"] <= 1280 for w in widths), widths


def test_a_row_that_loses_nothing_to_the_cloaks_is_not_said_to_lose_most_to_one():
    from attacks.report.ranking import row_parts

    def cell(drop):
        return {"figure": "ranked", "drop": drop, "interval": [drop, drop], "seen": False, "barely": False}

    attacks = ["cloak:homophone", "cloak:pinyin"]
    headings = {a: a.removeprefix("cloak:") for a in attacks}
    unhurt = {"row": "d+unveil", "cells": {"cloak:homophone": cell(0.0), "cloak:pinyin": cell(-0.0002)}}
    assert row_parts(unhurt, [], {}, attacks, headings) == ["loses nothing to any of 2 cloak attacks (0.000 on average)"]
    hurt = {"row": "d", "cells": {"cloak:homophone": cell(0.1), "cloak:pinyin": cell(0.02)}}
    said, = row_parts(hurt, [], {}, attacks, headings)
    assert said.startswith("loses most to homophone (-0.100 macro-F1") and said.endswith("-0.060 on average over "
                                                                                          "2 cloak attacks")
