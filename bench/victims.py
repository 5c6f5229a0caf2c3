"""Benchmark of the detectors (``attacks`` victims) on COLD: trained on COLD train, scored on COLD test.

Run from the repository root: ``.venv/bin/python bench/victims.py`` (the conventional victims and the
training-size curve); ``--neural bert,chinesebert`` trains those on the shared ``small`` backbone
from ``bench/backbone.py``. Writes ``bench/results/victims.json`` after every victim (a rerun skips the
victims already there; ``--force`` redoes them) and the curve to ``bench/results/curve_tfidf_lr/``.

- Data: COLD train (25,726 posts) to train, COLD test (5,323) to score; COLD dev (6,431) picks the
  torch victims' best epoch.
- Conventional victims with their default hyperparameters (``--grid`` for paper 001's grids), timed
  in this process: training seconds, and prediction seconds over the whole test set.
- ``emb-*`` read word vectors trained here with gensim's word2vec (skip-gram, 100 dimensions, window
  5, min count 3, 5 epochs, seed 0, one thread) on jieba's words of the backbone's corpus (COLD train
  + SWSR): no pretrained Chinese vectors are reachable on these machines.
- Figures (``attacks.metrics``): macro-F1, accuracy, macro precision / recall, AUC and average
  precision of p(offensive), FPR at 5% FNR and FNR at 5% FPR.
- The curve: ``attacks curve --model tfidf-lr`` on COLD train / test, sizes 500 to 10,000, five
  repeats, run as a user runs it (a subprocess), its wall time recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.backbone import corpus, training_log  # noqa: E402
from bench.machine import machine_info  # noqa: E402
from bench.summary import print_summary  # noqa: E402
from cloak.convert import read_dataset  # noqa: E402
from cloak.io import write_atomic  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
CURVE_SIZES = "500,1000,2000,5000,10000"


def word_vectors(texts: list[str], path: Path) -> dict:
    """Train word2vec on jieba's words of ``texts`` and write it in word2vec text format."""
    from gensim.models import Word2Vec

    from attacks.conventional import jieba_words

    started = time.perf_counter()
    sentences = [jieba_words(t) for t in texts]
    model = Word2Vec(sentences, vector_size=100, window=5, min_count=3, sg=1, epochs=5, seed=0, workers=1)
    model.wv.save_word2vec_format(str(path), binary=False)
    return {"words": len(model.wv), "dimensions": 100, "seconds": round(time.perf_counter() - started, 1)}


def score(victim, test: list[dict]) -> dict:
    from attacks.metrics import detection_metrics

    texts = [r["text"] for r in test]
    started = time.perf_counter()
    probs = victim.predict_proba(texts)
    seconds = time.perf_counter() - started
    figures = detection_metrics([r["label"] for r in test], probs)
    return {"macro_f1": figures.pop("f1"), **figures, "predict_seconds": round(seconds, 2),
            "predict_posts_per_second": round(len(texts) / seconds, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cold", type=Path, default=SHARED / "cold")
    ap.add_argument("--swsr", type=Path, default=SHARED / "swsr")
    ap.add_argument("--work", type=Path, default=REPO / "bench" / "work")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "victims.json")
    ap.add_argument("--only", default=None, metavar="NAMES", help="comma-separated victims (default: all conventional)")
    ap.add_argument("--grid", action="store_true", help="paper 001's grids for the conventional victims")
    ap.add_argument("--neural", default="", metavar="NAMES",
                    help="bert and / or chinesebert on the bench's backbone (two processes may train one each)")
    ap.add_argument("--backbone", type=Path, default=REPO / "bench" / "work" / "backbone")
    ap.add_argument("--no-curve", action="store_true")
    ap.add_argument("--force", action="store_true", help="redo victims already in the results")
    args = ap.parse_args()
    started = time.perf_counter()

    from attacks import conventional_names, make_victim
    from attacks.conventional import ConventionalVictim

    train = list(read_dataset("cold", str(args.cold / "train.csv")))
    dev = list(read_dataset("cold", str(args.cold / "dev.csv")))
    test = list(read_dataset("cold", str(args.cold / "test.csv")))
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    result.update({"benchmark": "bench/victims.py", "machine": machine_info(("scikit-learn", "lightgbm", "torch")),
                   "data": {"train": len(train), "dev": len(dev), "test": len(test)}})
    victims = result.setdefault("victims", {})

    def record(name: str, entry: dict) -> None:
        victims[name] = entry
        if args.out.exists():  # another process may have added its victims meanwhile
            victims.update({k: v for k, v in json.loads(args.out.read_text())["victims"].items() if k != name})
        write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())
        print(name, {k: v for k, v in entry.items() if k != "grid"}, flush=True)

    vectors = args.work / "word2vec_cold_swsr.txt"
    names = args.only.split(",") if args.only else [] if args.neural else conventional_names()
    if any(n.startswith("emb") for n in names) and not vectors.exists():
        args.work.mkdir(parents=True, exist_ok=True)
        result["word_vectors"] = word_vectors(corpus(args.cold, args.swsr, 0), vectors)
    for name in names:
        if name in victims and not args.force:
            continue
        victim = make_victim(name, {"vectors": str(vectors)} if name.startswith("emb") else {}, {"grid": args.grid})
        t0 = time.perf_counter()
        victim.fit(train, progress=False)
        entry = {"train_seconds": round(time.perf_counter() - t0, 1), **score(victim, test),
                 "params": victim.config.params, "grid": getattr(victim, "grid_results", None)}
        assert isinstance(victim, ConventionalVictim)
        record(name, entry)

    if args.neural:
        if not (args.backbone / "config.json").exists():
            raise SystemExit(f"no backbone in {args.backbone}: run bench/backbone.py first")
        # from the backbone's own log: bench/results/backbone.json describes whichever backbone that run made
        _, best = training_log(args.backbone)
        for name in args.neural.split(","):
            if name in victims and not args.force:
                continue
            training = {"epochs": 2, "lr": 1e-4, "batch_size": 32, "patience": 2}  # lr: a small from-scratch backbone
            victim = make_victim(name, {"backbone": str(args.backbone), "max_length": 128}, training)
            t0 = time.perf_counter()
            victim.fit(train, dev, out_dir=str(args.work / "victims" / name), progress=False)
            record(name, {"train_seconds": round(time.perf_counter() - t0, 1), **score(victim, test),
                          "training": training, "best_epoch": victim.log["best_epoch"],
                          "dev": [{k: e[k] for k in ("epoch", "dev_f1", "seconds")} for e in victim.log["log"]],
                          "backbone": {"path": str(args.backbone.relative_to(REPO)),
                                       "best_dev_mlm_loss": best["dev_mlm_loss"], "epochs": best["epoch"]}})

    if not args.no_curve:
        data = args.work / "cold"
        data.mkdir(parents=True, exist_ok=True)
        for split, rows in (("train", train), ("test", test)):
            path = data / f"{split}.jsonl"
            if not path.exists():
                write_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode())
        out = REPO / "bench" / "results" / "curve_tfidf_lr"
        command = [str(Path(sys.executable).parent / "attacks"), "curve", "--model", "tfidf-lr", "--train",
                   str(data / "train.jsonl"), "--test", str(data / "test.jsonl"), "--sizes", CURVE_SIZES,
                   "--repeats", "5", "--out", str(out)]
        if (out / "runs.jsonl").exists() and args.force:
            os.remove(out / "runs.jsonl")
        t0 = time.perf_counter()
        subprocess.run(command, check=True)
        curve = json.loads((out / "curve.json").read_text())
        result["curve_tfidf_lr"] = {"command": "attacks curve --model tfidf-lr --train cold_train.jsonl --test "
                                    f"cold_test.jsonl --sizes {CURVE_SIZES} --repeats 5 --out curve/",
                                    "seconds": round(time.perf_counter() - t0, 1), "by_size": curve["by_size"]}
        write_atomic(args.out, (json.dumps(result, indent=1, ensure_ascii=False) + "\n").encode())

    rows = [(name, f"{v['macro_f1']:.4f} / {v['auc']:.4f}", f"train {v['train_seconds']} s, "
             f"predict {v['predict_posts_per_second']} posts/s") for name, v in victims.items()]
    for r in result.get("curve_tfidf_lr", {}).get("by_size", []):
        rows.append((f"curve tfidf-lr {r['size']}", f"{r['mean_macro_f1']:.4f}",
                     f"[{r['min_macro_f1']:.4f}, {r['max_macro_f1']:.4f}]"))
    print_summary(rows, args.out, time.perf_counter() - started, value_width=18)


if __name__ == "__main__":
    main()
