"""Why ``cloak unveil`` misses its goal on homophones and initials, and whether a language model this project
can run weighs its candidates better than the n-gram model does.

Run from the repository root once ``bench.unveil --tune`` has made its working folder (the mined terms, the
n-gram model fitted on COLD train, COLD dev and its cloaks)::

    .venv/bin/python -m bench.unveil_scorers --gguf $MMCLOAK_WEIGHTS/qwen/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

About 20 minutes on 2 cores (nearly all of it the causal language model). Writes
``bench/results/unveil_scorers.json``. COLD dev only, where the unveiler's settings were chosen: the test
posts are not read.

- Misses: COLD dev's homophone and abbrev cloaks (``poster`` strength, seed 1, as ``--tune`` made them) read
  back by the unveiler at its defaults; each cloaked term not read back, by whether the matching stage
  listed it at all (else the scorer turned it down) and by its length (one character, or more); and every
  cloaked term by what else its cloak may be read as (``ambiguity``: a common word as written, other terms
  listed at its place, or neither), with the share read back of each.
- Scorers: in the first ``--posts`` cloaked posts of each op (a seeded order), every candidate the matching
  stage lists, right where it is a cloaked term at its place. Each is scored by the n-gram model as fitted
  (``cloak fit-lm``'s defaults), by one keeping every n-gram (``--min-count 1``), and by
  Qwen2.5-Coder-0.5B-Instruct, the GGUF the ``llm`` victim runs (llama-cpp-python, in this process), as a
  causal language model: the log probability of the text around the candidate (``--window`` characters
  each side) read back, less as written. Figures: the ROC AUC of each score for right against wrong
  candidates, with a 95% bootstrap interval over posts; on the contested candidates (those the fitted
  model puts within ``CONTESTED`` nats of the unveiler's bar, where the scorer decides), each one's AUC less
  the fitted model's, paired the same way; the seconds each takes a candidate, and the n-gram models'
  sizes.
"""
from __future__ import annotations

import random
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, auc_difference, auc_interval, machine_info, parser, print_summary,
                          records, require, run_once, share_interval, write_result)
from bench.restoration import cloaked_spans, terms_read_back
from bench.unveil_tuning import truth
from cloak.hanzi import common_chars, common_words
from cloak.targets import Lexicon
from cloak.unveil.ngram import CharNgramLM
from cloak.unveil.unveiler import margin

OPS = ("homophone", "abbrev")
FITTED = "n-gram (fit-lm defaults)"
CONTESTED = 10.0  # nats either side of the fitted model's bar: the candidates the scorer decides
KINDS = ("a common word", "other terms there", "neither")  # what else a cloak may be read as (``ambiguity``)


def ambiguity(written: str, others: bool, words: frozenset[str]) -> str:
    """What else a cloak may be read as: itself, where it is a common word as written (其实 for 歧视: one of
    ``words`` or of the common characters); else other terms the matching stage lists at its place (zb for
    资本 or 这帮); else neither."""
    if (written in common_chars() if len(written) == 1 else written in words):
        return "a common word"
    return "other terms there" if others else "neither"


def misses(unveiler, lexicon: Lexicon, cloaked: list[dict]) -> dict:
    """The cloaked terms read back, and those missed: not listed by the matching stage, or turned down by the
    scorer; by the term's length; and both by what else the cloak may be read as (``ambiguity``, the
    unveiler's ``common`` commonest words)."""
    words = frozenset(common_words(unveiler.common))
    read, total = [], []
    by_kind = {kind: ([], []) for kind in KINDS}
    missed = {"not listed": {"one character": 0, "longer": 0}, "turned down": {"one character": 0, "longer": 0}}
    missed_by_kind = dict.fromkeys(KINDS, 0)
    for record in cloaked:
        if not record["cloak"]["edits"]:
            continue
        text = record["text"]
        terms = terms_read_back(lexicon, record, unveiler(text).text)
        candidates = unveiler.candidates(text)[2]
        kinds = [ambiguity(text[s:e], any(c.start == s and c.end == e and c.dst != term for c in candidates), words)
                 for s, e, term in cloaked_spans(lexicon, record)]
        read.append(sum(hit for _, hit in terms))
        total.append(len(terms))
        for kind, (hits, counts) in by_kind.items():
            mine = [hit for (_, hit), k in zip(terms, kinds) if k == kind]
            hits.append(sum(mine))
            counts.append(len(mine))
        listed = {c.dst for c in candidates}
        for (term, hit), kind in zip(terms, kinds):
            if not hit:
                missed["not listed" if term not in listed else "turned down"][
                    "one character" if len(term) == 1 else "longer"] += 1
                missed_by_kind[kind] += 1
    return {"read_back": share_interval(read, total),
            "read_back_by_cloak": {kind: share_interval(*v) for kind, v in by_kind.items()},
            "missed": missed, "missed_by_cloak": missed_by_kind}


class CausalLM:
    """A GGUF causal language model's log probability of a text (llama-cpp-python), remembered by text."""

    def __init__(self, gguf: Path, threads: int) -> None:
        from llama_cpp import Llama

        self.llm = Llama(str(gguf), n_ctx=256, n_threads=threads, n_threads_batch=threads, logits_all=True,
                         seed=0, verbose=False)
        # a text's first token is scored too: the model reads it after its end-of-text mark
        self.start = self.llm.tokenize(b"<|endoftext|>", add_bos=False, special=True)
        self.seen: dict[str, float] = {}

    def logprob(self, text: str) -> float:
        if text not in self.seen:
            import numpy as np

            tokens = self.start + self.llm.tokenize(text.encode(), add_bos=False)
            self.llm.reset()
            self.llm.eval(tokens)
            logits = np.asarray(self.llm.scores[:len(tokens) - 1], dtype=np.float64)
            top = logits.max(1)
            norm = top + np.log(np.exp(logits - top[:, None]).sum(1))
            self.seen[text] = float((logits[np.arange(len(tokens) - 1), tokens[1:]] - norm).sum())
        return self.seen[text]

    def gain(self, text: str, start: int, end: int, dst: str, window: int) -> float:
        left, right = text[max(0, start - window):start], text[end:end + window]
        return self.logprob(left + dst + right) - self.logprob(left + text[start:end] + right)


def scored_candidates(unveilers: dict, causal: CausalLM, lexicon: Lexicon, cloaked: list[dict], posts: int,
                      window: int) -> tuple[list[dict], dict]:
    """Every candidate of the first ``posts`` cloaked posts (a seeded order) with its label and each scorer's
    gain, and each scorer's seconds a candidate."""
    chosen = [r for r in cloaked if r["cloak"]["edits"]]
    random.Random(0).shuffle(chosen)
    rows, seconds = [], dict.fromkeys([*unveilers, "qwen2.5-coder-0.5b"], 0.0)
    fitted = unveilers[FITTED]  # the candidates are the same for every unveiler: the same terms
    for record in chosen[:posts]:
        view, normalised, found = fitted.candidates(record["text"])
        if normalised or not found:  # its places moved, or nothing to weigh
            continue
        right, _ = truth(lexicon, record)
        gains = {}
        for name, unveiler in unveilers.items():
            started = time.perf_counter()
            gains[name] = unveiler.gains(view, found)
            seconds[name] += time.perf_counter() - started
        started = time.perf_counter()
        gains["qwen2.5-coder-0.5b"] = [causal.gain(view, c.start, c.end, c.dst, window) for c in found]
        seconds["qwen2.5-coder-0.5b"] += time.perf_counter() - started
        rows += [{"post": record["id"], "right": int((c.start, c.end, c.dst) in right), "dst": c.dst,
                  "margin": margin(c, gains[FITTED][k], fitted.bar),
                  **{name: g[k] for name, g in gains.items()}} for k, c in enumerate(found)]
    return rows, {name: round(s / max(1, len(rows)), 6) for name, s in seconds.items()}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "unveil_scorers.json", work=WORK / "unveil")
    ap.add_argument("--gguf", type=Path, required=True, help="The Qwen2.5 GGUF file (`mmcloak-weights qwen DIR`).")
    ap.add_argument("--posts", type=int, default=60, help="Cloaked posts of each op whose candidates are scored.")
    ap.add_argument("--window", type=int, default=12,
                    help="Characters each side of a candidate the causal model reads.")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    from cloak.unveil import Unveiler

    started, steps = time.time(), {}
    work = args.work
    terms = require(work / "terms.tsv", "python -m bench.unveil --tune")
    fitted = require(work / "cold.lm.gz", "python -m bench.unveil --tune")
    every = run_once("fit the n-gram model, every n-gram kept", work / "cold_every.lm.gz",
                     [BIN / "cloak", "fit-lm", "--train", work / "train.jsonl", "--out", work / "cold_every.lm.gz",
                      "--min-count", 1], steps)
    lexicon = Lexicon.from_file(terms)
    models = {FITTED: fitted, "n-gram (--min-count 1)": every}
    unveilers = {name: Unveiler(lexicon=str(terms), model=str(model)).prepare() for name, model in models.items()}
    causal = CausalLM(args.gguf, args.threads)
    result = {"benchmark": "bench/unveil_scorers.py", "posts": args.posts, "window": args.window,
              "models": {name: {"ngrams": len(CharNgramLM.load(model).logprob_), "file_bytes": model.stat().st_size}
                         for name, model in models.items()},
              "ops": {}}
    for op in OPS:
        cloaked = records(require(work / f"dev_{op}.jsonl", "python -m bench.unveil --tune"))
        rows, seconds = scored_candidates(unveilers, causal, lexicon, cloaked, args.posts, args.window)
        near = [r for r in rows if abs(r["margin"]) <= CONTESTED]
        scorers = {}
        for name in seconds:
            scorers[name] = {**auc_interval([r["right"] for r in rows], [r[name] for r in rows],
                                            [r["post"] for r in rows]), "seconds_a_candidate": seconds[name]}
            if name != FITTED:
                scorers[name]["contested_against_fitted"] = auc_difference(
                    [r["right"] for r in near], [r[name] for r in near], [r[FITTED] for r in near],
                    [r["post"] for r in near])
        result["ops"][op] = {**misses(unveilers[FITTED], lexicon, cloaked), "candidates": len(rows),
                             "right": sum(r["right"] for r in rows), "contested": len(near),
                             "contested_right": sum(r["right"] for r in near), "scorers": scorers}
        print(f"{op}: {result['ops'][op]}", flush=True)
    result.update(steps=steps, seconds=round(time.time() - started, 1), machine=machine_info(["llama_cpp_python"]))
    write_result(args.out, result)
    print_summary([(f"{op}, {name}", f"ROC AUC {s['auc']}", str(s["interval"])) for op, v in result["ops"].items()
                   for name, s in v["scorers"].items()], args.out, result["seconds"])


if __name__ == "__main__":
    main()
