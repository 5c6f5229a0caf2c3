"""The ``llm`` victim against a real model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) behind
llama-cpp-python's OpenAI-compatible server on 127.0.0.1, asked with MMBERT's Appendix B prompt, under
every cloak attack on the first 300 COLD test posts.

Run from the repository root (``pip install 'llama-cpp-python[server]'`` in the venv; the attacks guide
says how to build it on a CPU whose AMX llama.cpp mishandles)::

    mmcloak-weights qwen weights
    .venv/bin/python -m bench.llm_victim --gguf weights/qwen/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf

The script starts the server (``python -m llama_cpp.server``, ``--threads`` threads, ``--port``),
waits until it answers, saves the victim (``attacks train --model llm``: endpoint, model alias,
temperature 0, 10 answer tokens, one request at a time: the server keeps the prompt's shared prefix
evaluated between requests), runs ``attacks evaluate --attacks cloak`` (every op, keyword mode, one
variant, seed 0) on the first ``--posts`` COLD test posts, and stops the server, whatever happens.
Figures into ``bench/results/llm_victim.json``: per attack the share of posts unanswered (an answer
naming neither label), macro-F1 clean and attacked, the drop, coverage, and the seconds. Resumable:
``attacks evaluate`` resumes its outcomes and every answer is cached by (model, prompt, text), so a
rerun asks the server only what it has not answered.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from bench.common import (
    BIN,
    REPO,
    RESULTS,
    WORK,
    cold_records,
    folder,
    machine_info,
    parser,
    print_summary,
    shown,
    version,
    write_result,
)
from bench.llm_server import ALIAS, server_command, serving
from cloak.common.io import write_records


def attacks_command(*args) -> float:
    started = time.time()
    command = [str(BIN / "attacks"), *map(str, args)]
    print(shown(command[1:]), flush=True)
    subprocess.run(command, check=True)
    return time.time() - started


def figures(summary: dict) -> dict:
    """Per attack: unanswered share, macro-F1 clean / attacked / drop, coverage; and the clean figures."""
    victim = next(iter(summary["victims"].values()))
    clean = victim["clean"]
    out = {"clean": {"macro_f1": clean["f1"], "accuracy": clean["accuracy"], "unanswered": clean["unanswered"],
                     "unanswered_share": clean["unanswered"] / clean["n"], "n": clean["n"]}, "attacks": {}}
    for name, attack in victim["attacks"].items():
        attacked = attack["all"]
        out["attacks"][name] = {
            "macro_f1": attacked["f1"], "drop_macro_f1": attack["drop"]["f1"],
            "unanswered": attacked["unanswered"], "unanswered_share": attacked["unanswered"] / attacked["n"],
            "changed": attack["changed"], "coverage": attack["changed"] / attacked["n"],
            "drop_macro_f1_on_changed": attack["on_changed"]["drop"]["f1"] if attack["changed"] else None,
            "success_rate": attack["textattack"]["success_rate"]}
    return out


def with_server(args, work: Path, data: Path) -> dict:
    """Start the server, save the victim and attack it, stop the server whatever happens: the seconds."""
    with serving(args.gguf, args.port, args.threads, work / "server.log") as (endpoint, startup):
        settings = work / "llm.yaml"
        settings.write_text(json.dumps({"config": {
            "endpoint": endpoint, "model": ALIAS, "key_env": "", "language": "zh", "max_tokens": 10,
            "temperature": 0.0, "concurrency": 1, "timeout": 300, "cache": str(work / "answers")}}))
        victim = work / "qwen"
        train = attacks_command("train", "--model", "llm", "--config", settings, "--train", data,
                                "--out", victim, "--overwrite", "-q")
        evaluate = attacks_command("evaluate", "--victim", victim, "--data", data, "--attacks", "cloak",
                                   "--mode", "keyword", "--variants", 1, "--seed", 0, "--out", work / "eval", "-q")
    return {"server_startup": round(startup, 1), "train": round(train, 1), "evaluate": round(evaluate, 1)}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "llm_victim.json", cold=True, work=WORK / "llm")
    ap.add_argument("--gguf", type=Path, default=REPO / "weights" / "qwen" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--posts", type=int, default=300, help="the first N COLD test posts")
    ap.add_argument("--threads", type=int, default=2, help="the server's threads")
    ap.add_argument("--port", type=int, default=8765, help="the server's; the victim saved names it, so a "
                    "rerun (which resumes) uses the same")
    args = ap.parse_args()
    if not args.gguf.is_file():
        raise SystemExit(f"{args.gguf}: no such GGUF (mmcloak-weights qwen weights)")
    started = time.time()
    work = folder(args.work.resolve())
    data = work / f"cold_test_{args.posts}.jsonl"
    if not data.exists():
        write_records(data, cold_records(args.cold, "test")[:args.posts])
    seconds = with_server(args, work, data)
    summary = json.loads((work / "eval" / "summary.json").read_text())
    with open(work / "answers" / "answers.jsonl", encoding="utf-8") as f:
        answers = [json.loads(line)["answer"] for line in f if line.strip()]
    result = {
        "benchmark": "bench/llm_victim.py",
        "what": "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (llama-cpp-python server) asked with MMBERT's Appendix B "
                "prompt (zh), every cloak op in keyword mode (attacks evaluate's default targets and strength), "
                "1 variant, seed 0",
        "model": {"gguf": args.gguf.name, "alias": ALIAS, "llama_cpp_python": version("llama-cpp-python")},
        "server": shown(server_command(args.gguf, args.port, args.threads)),
        "data": {"cold_test_first": args.posts, "sha256": summary["data"]["sha256"]},
        "figures": figures(summary),
        "answers": {"asked": len(answers), "distinct": sorted(set(answers))[:20]},
        "seconds": seconds,
        "machine": machine_info(("llama-cpp-python", "torch")),
    }
    write_result(args.out, result)
    f = result["figures"]
    rows = [("clean", f"{f['clean']['macro_f1']:.4f}", f"macro-F1; unanswered {f['clean']['unanswered_share']:.1%}")]
    rows += [(name, f"{a['macro_f1']:.4f}", f"drop {a['drop_macro_f1']:+.4f}; unanswered {a['unanswered_share']:.1%}; "
              f"changed {a['coverage']:.0%}") for name, a in f["attacks"].items()]
    print_summary(rows, args.out, time.time() - started, value_width=8)


if __name__ == "__main__":
    main()
