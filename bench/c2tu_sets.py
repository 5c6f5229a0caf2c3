"""``cloak unveil`` on C²TU's published test sets, beside every published method, by C²TU's own metric.

Run from the repository root: ``.venv/bin/python -m bench.c2tu_sets`` with ``MMCLOAK_C2TU`` (or ``--c2tu``)
naming the folder of C²TU's sets and ``MMCLOAK_COLD`` COLD's (docs/guide/data.md); writes
``bench/results/c2tu_sets.json`` in about five minutes. For ToxiCloakCN (4,586 posts) and C²TU's COLD set
(10,415 of COLD's dev and test posts): ``cloak unveil`` run as a user runs it, as it ships, with the set's
lexicon (``--lexicon``), and with the settings chosen on the COLD set's dev posts; it and every published
output (``outputs/SET__METHOD.json``) scored by sentence-level correction (``cloak.unveil.correction``), each
F1 with a 95% bootstrap interval over posts, the share of clean posts left as they are, our posts a second.

The choice (``CHOICE``, made once into ``bench/results/c2tu_sets_choice.json``; delete it to choose again),
on the COLD set's posts that are COLD dev posts alone, never its COLD test posts nor ToxiCloakCN: the
threshold and the confusion penalty over a grid, with the set's lexicon, the best F1 whose clean COLD dev
posts stay unchanged at ``CLEAN`` or more (what to pass with a lexicon like C²TU's); and the default
confusion penalty at the default threshold, the best F1 whose clean COLD dev posts stay so with the default
lexicon and lose at most ``CLEAN_LOSS`` against the former penalty with mined terms too. The COLD set's
figures are given on its test posts too, which the choice never saw.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np

from bench.c2tu_data import cold_parts, read_set
from bench.common import (BIN, RESULTS, WORK, cold_jsonl, folder, machine_info, parser, print_summary, read_json,
                          relative, run, write_result)
from cloak.common.io import write_records
from cloak.unveil import Unveiler
from cloak.unveil.correction import Correction, outcome

SETS = {"toxicloakcn": "ToxiCloakCN", "cold": "COLD (dev + test)"}
# The published methods as C²TU's README and its paper's tables name them; an output file not named here
# is scored under its file name
PUBLISHED = {
    "dn_baichuan13_llm-m": "C²TU, LLM filter (Baichuan2-13B), iterated",
    "dn_baichuan13_llm": "C²TU, LLM filter (Baichuan2-13B)",
    "dn_baichuan7_llm-m": "C²TU, LLM filter (Baichuan2-7B), iterated",
    "dn_qwen14_llm-m": "C²TU, LLM filter (Qwen-14B), iterated",
    "dn_qwen14_llm": "C²TU, LLM filter (Qwen-14B)",
    "dn_qwen_llm-m": "C²TU, LLM filter (Qwen-7B), iterated",
    "dn_qwen_llm": "C²TU, LLM filter (Qwen-7B)",
    "dn_llama_llm-m": "C²TU, LLM filter (Llama), iterated",
    "dn_bert-m": "C²TU, BERT filter, iterated",
    "dn_bert": "C²TU, BERT filter",
    "dn_naive": "lexicon matching alone",
    "csc_simple_csc": "Simple-CSC",
    "csc_simple_csc_7B": "Simple-CSC (7B)",
    "deepseek-v3": "DeepSeek-V3, prompted",
    "ft_scope_preds_Toxic": "SCOPE, fine-tuned",
}
# Our read-backs: a name, and the options `cloak unveil` gets beside --in and --out ("{lexicon}": the set's;
# "{chosen}": the settings chosen on the COLD set's dev posts)
OURS = {"cloak unveil (as it ships)": [], "cloak unveil --lexicon (the set's)": ["--lexicon", "{lexicon}"],
        "cloak unveil --lexicon, chosen on COLD dev": ["--lexicon", "{lexicon}", "{chosen}"]}
# The choice's grid and rule (committed before the test posts were read with it)
CHOICE = {"threshold": (0.0, 1.0, 2.0, 3.0, 4.0, 5.5), "fuzzy": (0.0, 1.0, 2.0, 4.0, 8.0, 12.0)}
CLEAN = 0.97
# The default penalty keeps the project's own benchmark's clean posts (lexicon + mined terms, bench.unveil)
# within about its interval of what the penalty shipped before kept
FORMER_FUZZY, CLEAN_LOSS = 12.0, 0.005


def figures(outcomes: list[tuple[str, bool]]) -> dict:
    """Sentence-level correction of posts' outcomes, F1 with its 95% bootstrap interval (posts drawn with
    replacement, ``attacks.bootstrap``'s draws)."""
    from attacks.bootstrap import interval, resamples

    kinds = np.array([k for k, _ in outcomes])
    changed = np.array([c for _, c in outcomes], dtype=float)
    tp, fn = (kinds == "tp").astype(float), (kinds == "fn").astype(float)
    draws = []
    for rows in resamples(len(kinds)):
        t, f, c = tp[rows].sum(1), fn[rows].sum(1), changed[rows].sum(1)
        p, r = np.divide(t, c, out=np.zeros_like(t), where=c > 0), t / np.maximum(1, t + f)
        draws.append(np.divide(2 * p * r, p + r, out=np.zeros_like(t), where=p + r > 0))
    counts = Correction.of(outcomes)
    return {"f1": round(counts.f1, 4), "f1_interval": [round(x, 4) for x in interval(np.concatenate(draws))],
            "precision": round(counts.precision, 4), "recall": round(counts.recall, 4),
            "clean_kept": None if counts.clean_kept is None else round(counts.clean_kept, 4),
            "counts": dataclasses.asdict(counts)}


def scored(cloaked: list[str], predictions: list[str], gold: list[str]) -> dict:
    if len(predictions) != len(cloaked):
        raise SystemExit(f"an output of {len(predictions)} posts for a set of {len(cloaked)}")
    return figures([outcome(s, p, g) for s, p, g in zip(cloaked, predictions, gold)])


def unveiled(work: Path, name: str, records: list[dict], options: list[str], steps: dict,
             step_name: str) -> tuple[list[str], dict]:
    """``cloak unveil`` on the set's posts with ``options``, as a whole command: the texts, and the step."""
    posts = work / f"{name}.jsonl"
    write_records(str(posts), records)
    out = work / f"{name}.unveiled.{len(steps)}.jsonl"
    step = run([BIN / "cloak", "unveil", "--in", posts, "--out", out, "-q", *options], steps, step_name)
    texts = [json.loads(line)["text"] for line in out.read_text(encoding="utf-8").splitlines()]
    step["posts_per_second"] = round(len(records) / step["seconds"], 1)
    return texts, step


def unchanged(unveiler, texts: list[str]) -> float:
    """The share of ``texts`` the unveiler leaves as they are."""
    return sum(u.text == t for u, t in zip(unveiler.unveil_batch(texts), texts)) / len(texts)


def choose(cloaked: list[str], gold: list[str], lexicon: Path, train: Path) -> dict:
    """On the dev posts given (``cloaked``, ``gold``; their clean posts ``gold`` as written): the threshold and
    confusion penalty of ``CHOICE``'s grid with the best F1 with the set's lexicon whose clean posts stay
    unchanged at ``CLEAN`` or more (of equals, the higher threshold: fewer posts changed); and the default
    confusion penalty, the best F1 at the default threshold whose clean posts stay unchanged at ``CLEAN`` or
    more read with the default lexicon, and lose at most ``CLEAN_LOSS`` against ``FORMER_FUZZY`` read with
    the lexicon's and the terms mined from COLD train (``train``), as the project's own benchmark reads."""
    from cloak.unveil.unveiler import THRESHOLD

    tried = []
    for threshold in CHOICE["threshold"]:
        for fuzzy in CHOICE["fuzzy"]:
            unveiler = Unveiler(lexicon=str(lexicon), threshold=threshold, fuzzy=fuzzy)
            read = [u.text for u in unveiler.unveil_batch(cloaked)]
            tried.append({"threshold": threshold, "fuzzy": fuzzy, "f1": round(scored(cloaked, read, gold)["f1"], 4),
                          "clean_unchanged": round(unchanged(unveiler, gold), 4)})
            if threshold == THRESHOLD:
                tried[-1]["clean_unchanged_default_lexicon"] = round(unchanged(Unveiler(fuzzy=fuzzy), gold), 4)
                tried[-1]["clean_unchanged_mined"] = round(unchanged(Unveiler(
                    fuzzy=fuzzy, targets="lexicon+mined", mine_from=str(train)), gold), 4)
            print(f"choice: {tried[-1]}", flush=True)
    chosen = max((t for t in tried if t["clean_unchanged"] >= CLEAN), key=lambda t: (t["f1"], t["threshold"]))
    former = next(t for t in tried if t["threshold"] == THRESHOLD and t["fuzzy"] == FORMER_FUZZY)
    default = max((t for t in tried if t.get("clean_unchanged_default_lexicon", 0) >= CLEAN
                   and t["clean_unchanged_mined"] >= former["clean_unchanged_mined"] - CLEAN_LOSS),
                  key=lambda t: (t["f1"], t["fuzzy"]))
    single_terms = [t for t in lexicon.read_text(encoding="utf-8").split() if len(t) == 1]
    return {"rule": f"the best F1 on the dev posts whose clean COLD dev posts stay unchanged at {CLEAN} or more; "
                    "of equals the higher threshold",
            "default_rule": f"at the default threshold ({THRESHOLD:g}), the best F1 on the dev posts whose clean COLD "
                            f"dev posts read with the default lexicon stay unchanged at {CLEAN} or more, and read with "
                            f"the lexicon's and the terms mined from COLD train lose at most {CLEAN_LOSS} against the "
                            f"penalty shipped before ({FORMER_FUZZY:g}); of equals the higher penalty",
            "grid": CHOICE, "dev_posts": len(cloaked),
            "single": f"not chosen: the COLD set's lexicon has {len(single_terms)} one-character terms",
            "chosen": chosen, "default_fuzzy": default, "tried": tried}


def misses(unveiler, cloaked: list[str], gold: list[str]) -> dict[str, int]:
    """Why the cloaked posts of the same length as their gold text are not read back whole, post by post (as
    ``bench.unveil_scorers`` counts them): ``no candidate`` where a changed character lies in no candidate
    of the gold reading (the matching stage never listed it), ``wrong reading`` where an edit reads a span
    otherwise than the gold text, ``turned down`` where the scorer left a listed gold reading unread."""
    causes = dict.fromkeys(("read back", "no candidate", "wrong reading", "turned down"), 0)
    for source, truth in zip(cloaked, gold):
        if source == truth or len(source) != len(truth):
            continue
        read = unveiler(source)
        if read.text == truth:
            causes["read back"] += 1
        elif any(truth[e.start:e.end] != e.dst for e in read.edits):
            causes["wrong reading"] += 1
        else:
            _, _, found = unveiler.candidates(source)
            listed = {k for c in found if truth[c.start:c.end] == c.dst for k in range(c.start, c.end)}
            changed = [k for k in range(len(source)) if source[k] != truth[k]]
            causes["turned down" if all(k in listed for k in changed) else "no candidate"] += 1
    return causes


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "c2tu_sets.json", c2tu=True, cold=True, work=WORK / "c2tu_sets")
    ap.add_argument("--choice", type=Path, default=RESULTS / "c2tu_sets_choice.json",
                    help="the settings chosen on the COLD set's dev posts (made once)")
    ap.add_argument("--choose-only", action="store_true", help="make the choice, and read no test post")
    args = ap.parse_args()
    started = time.perf_counter()
    work, steps, sets, rows = folder(args.work), {}, {}, []
    data = {name: {part: [p["text"] for p in read_set(args.c2tu, name, part)] for part in ("cloaked", "gold")}
            for name in SETS}
    lexicons = {}
    for name in SETS:
        lexicons[name] = work / f"{name}_lexicon.txt"
        lexicons[name].write_text("".join(f"{t}\n" for t in read_set(args.c2tu, name, "lexicon")), encoding="utf-8")
    parts = cold_parts(args.cold, data["cold"]["gold"])
    if args.choose_only and args.choice.exists():
        raise SystemExit(f"{relative(args.choice)} is there: the choice is made once (delete it to choose again)")
    dev_cloaked, dev_gold = ([data["cold"][kind][i] for i in parts["dev"]] for kind in ("cloaked", "gold"))
    if not args.choice.exists():
        train = cold_jsonl(args.cold, "train", work / "train.jsonl", steps)
        choice = choose(dev_cloaked, dev_gold, lexicons["cold"], train)
        write_result(args.choice, {"benchmark": "bench/c2tu_sets.py", "machine": machine_info(), **choice})
    if args.choose_only:
        return
    chosen = read_json(args.choice)["chosen"]
    causes = {setting: misses(Unveiler(lexicon=str(lexicons["cold"]), **options), dev_cloaked, dev_gold)
              for setting, options in {"defaults": {}, "chosen": {"threshold": chosen["threshold"],
                                                                   "fuzzy": chosen["fuzzy"]}}.items()}
    settings = ["--threshold", chosen["threshold"], "--fuzzy", chosen["fuzzy"]]
    for name, title in SETS.items():
        cloaked, gold = data[name]["cloaked"], data[name]["gold"]
        records = [{"id": f"{name}-{i}", "text": t} for i, t in enumerate(cloaked)]
        outputs = {}
        for ours, options in OURS.items():
            flags = [x for o in options for x in (settings if o == "{chosen}" else [o.format(lexicon=lexicons[name])])]
            texts, step = unveiled(work, name, records, flags, steps, f"{name}: {ours}")
            outputs[ours] = (texts, {"ours": True, "command": step["command"], "seconds": step["seconds"],
                                     "cpu_s": step["cpu_s"], "posts_per_second": step["posts_per_second"]})
        for path in sorted((args.c2tu / "outputs").glob(f"{name}__*.json")):
            method = path.stem.split("__", 1)[1]
            predictions = [p["text"] for p in json.loads(path.read_text(encoding="utf-8"))]
            outputs[PUBLISHED.get(method, method)] = (predictions, {"file": path.name})
        posts = {"all": range(len(cloaked)), **({"test": parts["test"]} if name == "cold" else {})}
        methods = {method: {**about, **{part: scored([cloaked[i] for i in rows_], [texts[i] for i in rows_],
                                                     [gold[i] for i in rows_]) for part, rows_ in posts.items()}}
                   for method, (texts, about) in outputs.items()}
        sets[name] = {"title": title, "posts": {part: len(r) for part, r in posts.items()},
                      "cloaked_posts": sum(s != g for s, g in zip(cloaked, gold)),
                      "lexicon_terms": len(read_set(args.c2tu, name, "lexicon")), "methods": methods}
        rows += [(f"{name}: {m}", f"{r['all']['f1']:.3f}",
                  f"[{r['all']['f1_interval'][0]:.3f}, {r['all']['f1_interval'][1]:.3f}]"
                  + (f"  test posts {r['test']['f1']:.3f}" if "test" in r else "")) for m, r in methods.items()]
    write_result(args.out, {"benchmark": "bench/c2tu_sets.py", "machine": machine_info(), "steps": steps,
                            "metric": "sentence-level correction (Ma et al. 2025), cloak.unveil.correction",
                            "choice": {"file": args.choice.name, "chosen": chosen},
                            "dev_misses": {"posts": "the COLD set's COLD dev posts cloaked, read with its lexicon",
                                           **causes}, "sets": sets})
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
