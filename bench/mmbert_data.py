"""The COLD data of the MMBERT benchmarks: samples, cloaked copies, and their Kokoro speech.

Deterministic: the same arguments give the same files, and speech lands in content-addressed caches
under ``WORK/speech``, so a rerun (or a larger ``--train``) synthesises only what is new.

Posts: COLD posts of 8 to 32 characters (a few seconds of speech each), shuffled with ``seed`` and
stratified by label, the first N of each split.

- ``train.jsonl``: each training post followed by one cloaked copy (ops ``TRAIN_OPS``, lexicon targets).
- ``dev.jsonl``: the same for the dev posts (early stopping sees clean and cloaked text).
- ``pretrain_corpus.jsonl``: ``n_pretrain`` COLD training posts of any length, for ``mmbert pretrain``.
- ``test_clean.jsonl``, ``test_OP.jsonl`` for each op of ``TEST_OPS`` (homophone, emoji, pinyin, split): the
  test posts, clean and cloaked by one op each as ``attacks evaluate`` cloaks by default (the lexicon's terms
  and those mined from the test posts, ``poster`` strength; a post with no such term stays as it is, as in
  the wild); ``test_cloaks.json`` says how.
- ``heldout_homophone.jsonl``, ``heldout_homophone_seen.jsonl`` (``heldout_cloaks``, for ``bench.mmbert_heldout``,
  in a run's folder): the test posts cloaked by homophone on the terms its training never masked, and on the
  others.

Not a benchmark itself: ``bench.mmbert_cold`` prepares its data with it. Run alone to prepare (and
speak) the data ahead of ``python -m bench.mmbert_cold``::

    .venv/bin/python -m bench.mmbert_data --weights weights   # into WORK/mmbert, where mmbert_cold looks
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from bench.common import WORK, cold_records, parser
from cloak.common.io import dump_record, read_records, write_atomic
from cloak.targets import Lexicon

MIN_CHARS, MAX_CHARS = 8, 32
TRAIN_OPS = "homophone,similar,emoji,split,abbrev,pinyin,english"
TEST_OPS = ("homophone", "emoji", "pinyin", "split")
TEST_SETS = ("clean", *TEST_OPS)  # the test files: test_clean.jsonl, test_homophone.jsonl, ...
# The test cloaks as ``attacks evaluate`` makes them by default (the realism issue's): the lexicon's terms and
# those mined from the test posts, every character of a term, with rarer same-sound characters.
TEST_TARGETS, TEST_STRENGTH = "lexicon+mined", "poster"
VOICE = "zf_xiaobei"
DEFAULT_HOLD_OUT = 0.5  # the share of terms a held-out test holds out of a run that held out none
BLOCK = 1000


def sample(cold: Path, split: str, n: int, seed: int) -> list[dict]:
    """n posts of the split, half of each label where possible, in a seeded order.

    The order grows in blocks of ``BLOCK`` posts: a larger n appends new posts after the smaller
    sample's blocks, so (cloaks being numbered by position) the posts, cloaks and cached speech of
    a smaller run stay valid when a benchmark scales up.
    """
    posts = in_length(cold_records(cold, split))
    random.Random(f"{seed}:{split}").shuffle(posts)
    positives = [r for r in posts if r["label"] == 1]
    negatives = [r for r in posts if r["label"] == 0]
    chosen: list[dict] = []
    for block in range(-(-n // BLOCK)):
        size = min(BLOCK, n - len(chosen))
        taken_pos = len([r for r in chosen if r["label"] == 1])
        new_pos = positives[taken_pos: taken_pos + size // 2]
        taken_neg = len(chosen) - taken_pos
        new = new_pos + negatives[taken_neg: taken_neg + size - len(new_pos)]
        # Block 0 keeps the seed this benchmark always used, so earlier caches stay valid.
        random.Random(f"{seed}:{split}:order" + (f":{block}" if block else "")).shuffle(new)
        chosen.extend(new)
    return chosen


def in_length(records: list[dict]) -> list[dict]:
    """The posts of ``MIN_CHARS``-``MAX_CHARS`` characters, the length range every MMBERT sample keeps."""
    return [r for r in records if MIN_CHARS <= len(r["text"]) <= MAX_CHARS]


def validation_sample(cold: Path, n: int, training: list[dict], seed: int = 0) -> list[dict]:
    """``n`` COLD training posts sampled as the test posts are (8-32 characters, half of each label, a seeded
    order), none of them among ``training`` (by text): the split every setting is chosen on."""
    taken = {r["text"] for r in training}
    posts = [r for r in in_length(cold_records(cold, "train")) if r["text"] not in taken]
    random.Random(f"{seed}:validation").shuffle(posts)
    positives = [r for r in posts if r["label"] == 1][: n // 2]
    chosen = positives + [r for r in posts if r["label"] == 0][: n - len(positives)]
    random.Random(f"{seed}:validation:order").shuffle(chosen)
    return chosen


def fresh_test_sample(cold: Path, used: int, unseen: list[dict], seed: int = 0) -> tuple[list[dict], dict]:
    """Every COLD test post of 8-32 characters but the ``used`` posts of ``sample(cold, "test", used, seed)``
    (the earlier runs' test) and those whose text is among ``unseen`` (the training and validation posts),
    in a seeded order; and what was left out."""
    earlier = {r["id"] for r in sample(cold, "test", used, seed)}
    seen = {r["text"] for r in unseen}
    posts = in_length(cold_records(cold, "test"))
    kept = [r for r in posts if r["id"] not in earlier and r["text"] not in seen]
    random.Random(f"{seed}:fresh-test").shuffle(kept)
    repeated = sum(r["id"] not in earlier and r["text"] in seen for r in posts)
    return kept, {"posts_of_the_length": len(posts), "earlier_test_posts": len(earlier),
                  "text_seen_in_training_or_validation": repeated, "kept": len(kept),
                  "labels": {str(k): sum(r["label"] == k for r in kept) for k in (0, 1)}}


def cloaked_sets(posts: list[dict], seed: int = 0, targets: str = TEST_TARGETS,
                 strength: str = TEST_STRENGTH) -> tuple[dict[str, list[dict]], Lexicon, dict]:
    """``posts`` clean and cloaked by each op of ``TEST_OPS`` as ``attacks evaluate`` cloaks (the terms mined
    from these posts), {name: records}; the terms; and the cloaks' settings (``test_cloaks.json``'s)."""
    from cloak.mining import build_targets, describe_targets

    terms = build_targets(targets, labelled=posts)  # mined from the posts attacked, as attacks evaluate does
    sets = {"clean": posts, **{op: cloaked(posts, op, seed, terms, strength) for op in TEST_OPS}}
    return sets, terms, {"ops": list(TEST_OPS), "strength": strength, **describe_targets(terms)}


def cloaked(records: list[dict], ops: str, seed: int, targets=None, strength: str = "op") -> list[dict]:
    """One cloak of each record by ``ops`` (``targets``: a ``Lexicon``; default: the default lexicon's terms)."""
    from cloak import Perturber
    from cloak.run import cloak_record

    perturber = Perturber(ops=ops, targets=targets or "lexicon", seed=seed, strength=strength)
    out = []
    for number, record in enumerate(records):
        lines, _, _ = cloak_record(perturber, number, record, 1)
        out.extend(json.loads(line) for line in lines)
    return out


def interleaved(clean: list[dict], cloaks: list[dict]) -> list[dict]:
    """Each post followed by its cloak, so that any prefix of the file holds whole pairs."""
    return [r for pair in zip(clean, cloaks) for r in pair]


def prepare(cold: Path, work: Path, n_train: int, n_dev: int, n_test: int, n_pretrain: int = 8000,
            seed: int = 0, targets: str = TEST_TARGETS, strength: str = TEST_STRENGTH) -> dict[str, Path]:
    """Write the benchmark's record files into ``work``; returns {name: path}. The test cloaks' settings
    (ops, strength, and the terms: ``cloak.mining.describe_targets``) go to ``test_cloaks.json``."""
    work.mkdir(parents=True, exist_ok=True)
    train, dev, test = (sample(cold, s, n, seed) for s, n in (("train", n_train), ("dev", n_dev),
                                                              ("test", n_test)))
    sets, _, settings = cloaked_sets(test, seed, targets, strength)
    files = {"train": interleaved(train, cloaked(train, TRAIN_OPS, seed)),
             "dev": interleaved(dev, cloaked(dev, TRAIN_OPS, seed)), **{f"test_{k}": v for k, v in sets.items()}}
    # The corpus of the from-scratch backbone's masked-LM pre-training: COLD training posts (any length).
    corpus = cold_records(cold, "train")
    random.Random(f"{seed}:pretrain").shuffle(corpus)
    files["pretrain_corpus"] = corpus[:n_pretrain]
    return written(work, files, "test_cloaks", settings)


def written(work: Path, files: dict[str, list[dict]], about: str, settings: dict) -> dict[str, Path]:
    """``files`` written to ``work/NAME.jsonl`` and ``settings`` (how the test was cloaked) to
    ``work/ABOUT.json``; returns {name: path}, ``about`` included."""
    paths = {}
    for name, records in files.items():
        paths[name] = work / f"{name}.jsonl"
        # a temporary file of a unique name: two seeds started at once on one WORK write the same bytes
        write_atomic(paths[name], b"".join(dump_record(r) for r in records))
    paths[about] = work / f"{about}.json"
    write_atomic(paths[about], (json.dumps(settings, ensure_ascii=False) + "\n").encode())
    return paths


def heldout_cloaks(test: Path, work: Path, held_out: Lexicon, seen: Lexicon, seed: int = 0) -> dict[str, Path]:
    """The test posts (the file ``test``) cloaked by homophone at the test strength on the ``held_out``
    terms alone (``heldout_homophone.jsonl``) and on the ``seen`` terms alone (``heldout_homophone_seen.jsonl``),
    a post holding none left as it is; how, in ``heldout_cloaks.json``."""
    from cloak.mining import describe_targets

    posts = [r for _, r in read_records(str(test))]
    files = {f"heldout_{name}": cloaked(posts, "homophone", seed, terms, TEST_STRENGTH)
             for name, terms in (("homophone", held_out), ("homophone_seen", seen))}
    settings = {"ops": ["homophone"], "strength": TEST_STRENGTH, "posts": len(posts),
                "held_out": describe_targets(held_out), "seen": describe_targets(seen),
                "posts_cloaked": {name: sum(r["text"] != r["source_text"] for r in records)
                                  for name, records in files.items()}}
    work.mkdir(parents=True, exist_ok=True)
    return written(work, files, "heldout_cloaks", settings)


def split_terms(terms: Lexicon, run_share: float, asked: float | None) -> tuple[Lexicon, Lexicon]:
    """(held-out terms, masked terms) of a run's term-mask targets: at the run's own hold-out share, or (a run
    that held out none) at ``asked``; a split the run's training contradicts is refused."""
    from mmbert.train import held_out, masked_terms

    if run_share and asked is not None and asked != run_share:
        raise SystemExit(f"this run held out {run_share:g} of its terms: test those (leave out --hold-out)")
    share = run_share or (DEFAULT_HOLD_OUT if asked is None else asked)
    masked = masked_terms(terms, share)
    # a held-out term inside a masked one (女 in 女人) or holding one was masked with it: not held out
    kept = (t for t in terms.terms if held_out(t, share) and not any(t in m or m in t for m in masked.terms))
    return terms.subset(kept, f"{terms.name}: the {share:g} held out, none inside a masked term"), masked


def head(path: Path, lines: int, out: Path) -> Path:
    """The first ``lines`` lines of ``path``, written to ``out``."""
    with open(path, encoding="utf-8") as f:
        write_atomic(out, "".join(line for _, line in zip(range(lines), f)).encode())
    return out


def speak(paths: dict[str, Path], work: Path, weights: Path, limits: dict[str, int] | None = None,
          workers: int = 1) -> dict:
    """Kokoro speech and Whisper-base features for every record (the first ``limits[name]`` lines of
    a file, where given), into ``work/speech``."""
    from speech.features import WhisperEncoder
    from speech.synth import speak_file

    encoder = WhisperEncoder(str(weights / "whisper-base.pt"))
    backend = {"name": "kokoro-onnx", "model": str(weights / "kokoro" / "kokoro-v1.0.int8.onnx"), "voice": VOICE}
    counts = {}
    for name, path in paths.items():
        if limits and name in limits:
            path = head(path, limits[name], work / f"{name}.head.jsonl")
        counts[name] = speak_file(str(path), str(work / "speech"), backend, encoder=encoder, workers=workers)
        print(name, counts[name], flush=True)
    return counts


def main() -> None:
    ap = parser(__doc__, cold=True, work=WORK / "mmbert", weights=True)
    ap.add_argument("--train", type=int, default=2000)
    ap.add_argument("--dev", type=int, default=200)
    ap.add_argument("--test", type=int, default=300)
    ap.add_argument("--speak-train", type=int, default=None, metavar="N",
                    help="speak only the first N pairs of train (and of dev: N // 5)")
    ap.add_argument("--workers", type=int, default=1, help="TTS worker processes (they split the cores)")
    args = ap.parse_args()
    paths = prepare(args.cold, args.work, args.train, args.dev, args.test)
    if args.weights:
        limits = (None if args.speak_train is None
                  else {"train": 2 * args.speak_train, "dev": 2 * (args.speak_train // 5)})
        speak({k: paths[k] for k in ("test_clean", *(f"test_{op}" for op in TEST_OPS), "dev", "train")},
              args.work, args.weights, limits, args.workers)


if __name__ == "__main__":
    main()
