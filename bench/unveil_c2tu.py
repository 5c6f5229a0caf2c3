"""C²TU beside ``cloak unveil`` on the same homophone cloaks of COLD test (issue 52, part 4).

C²TU: Ma et al. 2025, "Breaking the Cloak! Unveiling Chinese Cloaked Toxicity with Homophone Graph and Toxic
Lexicon" (arXiv 2505.22184); training-free, homophones only. Its filtering step weighs each candidate with
bert-base-chinese or an LLM from the Hugging Face hub; where neither can be had (this machine reaches no
model hub) its model-free part runs as published, imported from a clone of its repository (``--c2tu DIR``:
``git clone https://github.com/XDxc-cuber/C2TU-Chinese-cloaked-toxicity-unveiling``): its detector
(``models/lexicon_detector.py``: every substring whose characters are each a neighbour of a term's in the
homophone graph) and its ``naive`` read-back (every candidate replaced, ``DenoiseModel.naive_denoise``). The
graph is built as its notebook builds one (``homoGraphs/COLD_homoGraph/generate_graph.ipynb``: pypinyin's
toneless readings, every heteronym, and the confusions n/l, zh/z, ch/c, sh/s, ng/n) over the characters of
the posts read and the terms, since the graph files of the repository are kept out of git.

Run from the repository root: ``.venv/bin/python -m bench.unveil_c2tu --cold DIR --c2tu DIR`` (about 15
minutes on 2 cores). Writes ``bench/results/unveil_c2tu.json``; every step is skipped when its output is
there, so a rerun continues.

On the same posts, four read-backs:

- ``c2tu naive, our terms``: C²TU's detector with the terms the cloaks hid (the lexicon's and those mined from
  COLD train, as ``bench.unveil`` takes them);
- ``c2tu naive, its lexicon``: with C²TU's own COLD lexicon (``homoGraphs/COLD_homoGraph/lexicons.json``);
- ``unveil, no context``: ``cloak unveil --families sound`` with every candidate free (``--threshold=-1000``):
  our matching stage read back as naively (where candidates overlap, the likeliest reading is the one
  reading back the most of them);
- ``unveil``: ``cloak unveil`` as a user runs it (every family, the n-gram model fitted on COLD train, the
  threshold chosen on COLD dev).

Each read-back runs in this process, post by post, its CPU time counted from the first post to the last:
C²TU's graph and detector, and our terms and n-gram model, are loaded before the clock starts (``cloak
unveil`` on a file gives the same texts).

Cloaks: COLD test by homophone alone at ``poster`` strength (seed 0), of rare characters only
(``common_share=0``) and on fuzzy tones. Figures, each with a 95% bootstrap interval over posts: the share of
cloaked terms read back and of cloaked posts read back whole (``bench.restoration``), the share of COLD test
posts, as they are, left unchanged; posts a CPU-second.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bench.common import (BIN, RESULTS, WORK, cold_work, file_tag, machine_info, mined_terms, ngram_model, parser,
                          print_summary, records, run_once, share_interval, write_result)
from bench.restoration import restoration
from cloak.common.io import write_records
from cloak.targets import Lexicon
from cloak.unveil import Unveiler

STYLES = ("homophone", "homophone:common_share=0", "homophone:tone=fuzzy")
# C²TU's confusions, as its notebook lists them
CONFUSIONS = (("n", "l"), ("zh", "z"), ("ch", "c"), ("sh", "s"), ("ng", "n"))
# every family at the defaults, and the sound family with a threshold below any gain: every candidate the
# matching stage finds read back
OURS = {"unveil, no context": {"families": "sound", "threshold": -1000.0}, "unveil": {}}


def homophone_graph(out: Path, texts: list[str], terms: list[str]) -> Path:
    """C²TU's homophone graph over the characters of ``texts`` and ``terms`` (its Han terms the lexicon), in
    the files its ``HomoGraph`` reads; built as its notebook builds it, its quirks kept (a confusion replaces
    every occurrence in a syllable: nan -> lal)."""
    import numpy as np
    from pypinyin import Style, pinyin

    terms = [t for t in terms if all("\u4e00" <= ch <= "\u9fff" for ch in t)]
    chars: set[str] = set()
    by_sound: dict[str, set[str]] = {}
    for text in [*texts, *terms]:
        for ch in text:
            if ch in chars:
                continue
            readings = pinyin(ch, style=Style.NORMAL, heteronym=True)[0]
            if not readings or readings[0] == ch:
                continue
            chars.add(ch)
            for syllable in readings:
                by_sound.setdefault(syllable, set()).add(ch)
    id2char = sorted(chars)
    char2id = {ch: i for i, ch in enumerate(id2char)}
    graph = np.eye(len(id2char), dtype=bool)
    for syllable, same in by_sound.items():
        near = set(same)
        for a, b in CONFUSIONS:
            for x, y in ((a, b), (b, a)):
                if x in syllable:
                    near |= by_sound.get(syllable.replace(x, y), set())
        ids = [char2id[ch] for ch in near]
        graph[np.ix_(ids, ids)] = True
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "homoGraphA.npy", graph)
    (out / "char2id.json").write_text(json.dumps(char2id, ensure_ascii=False), encoding="utf-8")
    (out / "id2char.json").write_text(json.dumps(id2char, ensure_ascii=False), encoding="utf-8")
    (out / "lexicons.json").write_text(json.dumps(terms, ensure_ascii=False), encoding="utf-8")
    return out


def c2tu_naive(c2tu: Path, graph: Path):
    """C²TU's detector and naive read-back, from its clone: text -> text."""
    if str(c2tu) not in sys.path:  # once, though both lexicons ask
        sys.path.insert(0, str(c2tu))
    from models.denoiseModel import DenoiseModel
    from models.lexicon_detector import DetectorModel

    detector = DetectorModel(str(graph))
    return lambda text: DenoiseModel.naive_denoise(None, text, detector.detectLexicons(text))


def commit_of(clone: Path) -> str | None:
    """The commit a clone is at (None where it is no git checkout)."""
    found = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or None


def read_all(name: str, out: Path, read, posts: list[dict], timings: dict) -> list[dict]:
    """``read(text)`` of every post into ``out`` (reused when there), its CPU time kept in ``timings`` (and
    beside ``out``, for a rerun)."""
    cpu_file = out.with_suffix(".cpu.json")
    if not out.exists():
        cpu = time.process_time()
        write_records(str(out), ({**p, "text": read(p["text"])} for p in posts))
        cpu_file.write_text(json.dumps({"posts": len(posts), "cpu_s": round(time.process_time() - cpu, 2)}))
    timings[name] = json.loads(cpu_file.read_text())
    return records(out)


def figures(lexicon: Lexicon, cloaked: dict[str, list[dict]], clean: list[dict], read: dict[str, list[dict]]) -> dict:
    """One read-back's restoration per style and the share of clean posts it leaves unchanged."""
    unchanged = [int(a["text"] == b["text"]) for a, b in zip(clean, read["clean"])]
    return {"styles": {style: restoration(lexicon, posts, read[style]) for style, posts in cloaked.items()},
            "clean_unchanged": share_interval(unchanged, [1] * len(unchanged))}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "unveil_c2tu.json", cold=True, work=WORK / "unveil_c2tu")
    ap.add_argument("--c2tu", type=Path, required=True,
                    help="a clone of github.com/XDxc-cuber/C2TU-Chinese-cloaked-toxicity-unveiling")
    args = ap.parse_args()
    if not (args.c2tu / "models" / "lexicon_detector.py").exists():
        ap.error(f"--c2tu {args.c2tu}: no models/lexicon_detector.py there (a clone of C2TU's repository)")
    started = time.perf_counter()
    work, steps = cold_work(args, ("train", "test"))
    terms, model = mined_terms(work, steps), ngram_model(work, steps)
    files = {style: run_once(f"cloak {style}", work / f"test_{file_tag(style)}.jsonl", [
        BIN / "cloak", "perturb", "--in", work / "test.jsonl", "--out", work / f"test_{file_tag(style)}.jsonl",
        "--ops", style, "--lexicon", terms, "--strength", "poster", "--seed", 0, "-q"], steps) for style in STYLES}
    cloaked = {style: records(path) for style, path in files.items()}
    clean = records(work / "test.jsonl")
    inputs = {**files, "clean": work / "test.jsonl"}
    texts = [p["text"] for posts in [*cloaked.values(), clean] for p in posts]
    lexicon, timings, results = Lexicon.from_file(terms), {}, {}
    theirs = json.loads((args.c2tu / "homoGraphs" / "COLD_homoGraph" / "lexicons.json").read_text(encoding="utf-8"))
    for name, words in (("c2tu naive, our terms", lexicon.terms), ("c2tu naive, its lexicon", theirs)):
        tag = file_tag(name)
        read = c2tu_naive(args.c2tu, homophone_graph(work / f"graph_{tag}", texts, list(words)))
        results[name] = figures(lexicon, cloaked, clean, {k: read_all(
            f"{name}: {k}", work / f"{tag}_{file_tag(k)}.jsonl", read, cloaked.get(k) or clean, timings) for k in inputs})
    specs = {}
    for name, settings in OURS.items():
        specs[name], read = Unveiler(lexicon="terms.tsv", model="cold.lm.gz", **settings).spec(), {}
        for k in inputs:  # a fresh unveiler a file, as `cloak unveil` runs: none remembers another file's posts
            unveiler = Unveiler(lexicon=str(terms), model=str(model), **settings).prepare()
            read[k] = read_all(f"{name}: {k}", work / f"{file_tag(name)}_{file_tag(k)}.jsonl",
                               lambda text: unveiler(text).text, cloaked.get(k) or clean, timings)
        results[name] = figures(lexicon, cloaked, clean, read)
    write_result(args.out, {"benchmark": "bench/unveil_c2tu.py", "machine": machine_info(("pypinyin",)),
                            "c2tu": {"repository": "XDxc-cuber/C2TU-Chinese-cloaked-toxicity-unveiling",
                                     "commit": commit_of(args.c2tu),
                                     "mode": "naive (its filtering needs bert-base-chinese or an LLM from the hub)",
                                     "its_lexicon_terms": len(theirs)},
                            "unveilers": specs, "posts": len(clean), "results": results, "cpu": timings, "steps": steps,
                            "seconds": round(time.perf_counter() - started, 1)})
    rows = [(f"{name}: {style}", f"{r['styles'][style]['terms']['share']}", "terms read back")
            for name, r in results.items() for style in STYLES[:1]]
    rows += [(f"{name}: clean", f"{r['clean_unchanged']['share']}", "posts unchanged") for name, r in results.items()]
    print_summary(rows, args.out, time.perf_counter() - started)


if __name__ == "__main__":
    main()
