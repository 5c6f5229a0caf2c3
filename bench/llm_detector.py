"""The ``llm`` victim as a detector, its prompt and threshold chosen on validation under the committed protocol
(issue 56): Qwen2.5-Coder-0.5B-Instruct behind llama-cpp-python's server, a post scored by the probability of
the hateful label's first answer token (``scoring: logprob``), tested once on the fresh test posts.

Run from the repository root after ``bench.mmbert_claim``'s ``data`` step (and, for ``test``, its ``test-data``
step), on its work folder::

    .venv/bin/python -m bench.llm_detector choose --protocol bench/protocols/mmbert_claim.yaml \\
        --gguf weights/qwen/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf --work RUNS
    .venv/bin/python -m bench.llm_detector test --protocol bench/protocols/mmbert_claim.yaml --gguf ... --work RUNS

``choose``: the protocol's ``llm.validation_posts`` first validation posts, clean and cloaked by every op,
pooled; for each prompt (``appendix-b``: MMBERT's Appendix B; ``pinyin``: the post with its pinyin, after Guo
et al. 2025, arXiv:2507.07640) the threshold with the highest macro-F1 on them (``LLMVictim.fit``), then the
prompt with the higher; the chosen victim is saved into ``RUNS/llm/victim``, the figures into
``bench/results/llm_detector_validation.json``. ``test``: that victim on every fresh test post, clean and
under every op, read once (``bench/results/llm_detector_test.json``): macro-F1 and drops with their paired
bootstrap intervals. Every answer is cached (``RUNS/llm/answers``): a stopped run asks only what is left.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from bench.claim_protocol import absolute, committed, digits, load_protocol, resampled, same_protocol
from bench.common import (REPO, RESULTS, WORK, machine_info, parser, print_summary, read_json, relative, shown,
                          version, write_result)
from bench.llm_server import ALIAS, server_command, serving
from bench.mmbert_data import TEST_SETS
from cloak.common.io import read_records

OUTPUTS = {"validation": RESULTS / "llm_detector_validation.json", "test": RESULTS / "llm_detector_test.json"}


def posts(work: Path, split: str, limit: int | None = None) -> dict[str, list[dict]]:
    """Every set of ``split`` (``bench.mmbert_claim``'s files), each cut to its first ``limit`` posts."""
    out = {}
    for name in TEST_SETS:
        path = work / "data" / f"{split}_{name}.jsonl"
        if not path.exists():
            raise SystemExit(f"{path} is missing: run `python -m bench.mmbert_claim "
                             f"{'data' if split == 'validation' else 'test-data'}` on this --work first")
        out[name] = [r for _, r in read_records(str(path), labels=True)][:limit]
    return out


def victim_config(endpoint: str, prompt: str, work: Path) -> dict:
    """The victim's settings: the label's first token comes within the answer's first few (after a quote)."""
    return {"endpoint": endpoint, "model": ALIAS, "key_env": "", "language": "zh", "prompt": prompt,
            "scoring": "logprob", "temperature": 0.0, "max_tokens": 4, "concurrency": 1, "timeout": 300,
            "cache": str(work / "llm" / "answers")}


def set_figures(labels: np.ndarray, found: dict[str, np.ndarray], level: float, resamples: int) -> dict:
    """Macro-F1 on every set and the drops, with their intervals; and the posts unanswered."""
    f1 = resampled(labels, {"llm": [found]}, resamples)["llm"]
    return {**absolute(f1, level), "unanswered": {k: int((v < 0).sum()) for k, v in found.items()}}


def choose(protocol, args) -> dict:
    """Each prompt's threshold on the pooled validation posts, and the prompt with the higher macro-F1."""
    from attacks.bootstrap import macro_f1
    from attacks.victims.llm import LLMVictim

    sets = posts(args.work, "validation", protocol["llm"]["validation_posts"])
    pooled = [r for records in sets.values() for r in records]
    labels = np.array([r["label"] for r in pooled])
    rows, victims = {}, {}
    with serving(args.gguf, args.port, args.threads, args.work / "llm" / "server.log") as (endpoint, startup):
        for prompt in protocol["llm"]["prompts"]:
            victim = victims[prompt] = LLMVictim(victim_config(endpoint, prompt, args.work)).fit(pooled)
            found = {name: victim.predict([r["text"] for r in records]) for name, records in sets.items()}
            everything = np.concatenate(list(found.values()))
            pooled_f1 = macro_f1(labels, everything, 2, np.arange(len(labels))[None])[0]
            rows[prompt] = {"threshold": round(victim.threshold_, 6), "pooled_macro_f1": round(float(pooled_f1), 4),
                            **set_figures(np.array([r["label"] for r in sets["clean"]]), found,
                                          protocol["bootstrap"]["level"], protocol["bootstrap"]["resamples"])}
    chosen = max(rows, key=lambda prompt: rows[prompt]["pooled_macro_f1"])
    victims[chosen].save(str(args.work / "llm" / "victim"))
    return {"benchmark": "bench/llm_detector.py choose", "protocol": protocol.record, "rule": protocol["llm"]["choose"],
            "validation_posts": len(sets["clean"]), "prompts": rows, "chosen": chosen,
            "server_startup": round(startup, 1)}


def test(protocol, args) -> dict:
    """The chosen victim on every fresh test post, clean and under every op, once."""
    from attacks import load_victim

    commit = committed(protocol)
    if OUTPUTS["test"].exists():
        raise SystemExit(f"{relative(OUTPUTS['test'])} exists: the test is read once under a protocol")
    choice = read_json(OUTPUTS["validation"])
    same_protocol(choice["protocol"], protocol, relative(OUTPUTS["validation"]))
    sets = posts(args.work, "test")
    labels = np.array([r["label"] for r in sets["clean"]])
    with serving(args.gguf, args.port, args.threads, args.work / "llm" / "server.log") as (endpoint, startup):
        victim = load_victim(str(args.work / "llm" / "victim"))
        victim.config.endpoint = endpoint  # the same server, on this run's port
        found = {name: victim.predict([r["text"] for r in records]) for name, records in sets.items()}
    return {"benchmark": "bench/llm_detector.py test", "protocol": protocol.record, "protocol_commit": commit,
            "prompt": choice["chosen"], "threshold": victim.threshold_, "test_posts": len(labels),
            **set_figures(labels, found, protocol["bootstrap"]["level"], protocol["bootstrap"]["resamples"]),
            "labels": digits(labels), "predictions": {k: digits(v) for k, v in found.items()},
            "server_startup": round(startup, 1)}


def main() -> None:
    ap = parser(__doc__, work=WORK / "mmbert_claim")
    ap.add_argument("step", choices=("choose", "test"))
    ap.add_argument("--protocol", type=Path, default=REPO / "bench" / "protocols" / "mmbert_claim.yaml")
    ap.add_argument("--gguf", type=Path, default=REPO / "weights" / "qwen" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    ap.add_argument("--threads", type=int, default=2, help="the server's threads")
    ap.add_argument("--port", type=int, default=8765, help="the server's, on 127.0.0.1")
    args = ap.parse_args()
    if not args.gguf.is_file():
        raise SystemExit(f"{args.gguf}: no such GGUF (mmcloak-weights qwen weights)")
    protocol = load_protocol(args.protocol)
    args.work = args.work.resolve()
    started = time.perf_counter()
    result = (choose if args.step == "choose" else test)(protocol, args)
    result.update(seconds=round(time.perf_counter() - started, 1), model={
        "gguf": args.gguf.name, "alias": ALIAS, "llama_cpp_python": version("llama-cpp-python")},
        server=shown(["python", *server_command(Path("weights/qwen") / args.gguf.name, args.port, args.threads)[1:]]),
        machine=machine_info(("llama-cpp-python",)))
    write_result(OUTPUTS[args.step if args.step == "test" else "validation"], result)
    figures = result["prompts"][result["chosen"]] if args.step == "choose" else result
    rows = [(f"macro-F1 {k}", f"{v['value']:.4f}", str(v["interval"])) for k, v in figures["macro_f1"].items()]
    print_summary(rows, OUTPUTS["test" if args.step == "test" else "validation"], time.perf_counter() - started)


if __name__ == "__main__":
    main()
