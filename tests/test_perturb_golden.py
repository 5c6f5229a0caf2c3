"""Seeded ``cloak perturb`` output with explicit options stays byte-identical.

``data/perturb_golden.jsonl`` holds what the runs below wrote, one after the other, on the first 40 posts of
``samples/cold/cold_test_300.jsonl`` of at most 40 characters (id, text and label): made once by the code at
commit 3f2b3eb (whose output an audit found byte-identical to the code before issue 35's strengths and mined
targets). A change to an op, the targets, the seeding or the record writer that moves one byte of it fails here.
Regenerate it only for a change the README announces: ``python -m tests.test_perturb_golden``.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path

from click.testing import CliRunner

from cloak.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "cold" / "cold_test_300.jsonl"
GOLDEN = Path(__file__).resolve().parent / "data" / "perturb_golden.jsonl"
POSTS, LONGEST = 40, 40

# every op with its options given explicitly (most away from their defaults), the lexicon's terms
EXPLICIT = ("abbrev:case=upper:spacing=spaced:lookalike=0.3", "emoji:share=0.8:sound=false", "english", "fullwidth",
            "homophone:tone=fuzzy:word=false:share=0.7:common_share=0.6:rare=cjk",
            "homophone:tone=exact:word=true:share=0.5:common_share=1.0", "noise:symbols=*#~:share=0.8",
            "pinyin:mode=char:spacing=spaced:case=lower:tones=numbers:lookalike=0.2",
            "radical:sound=any:reach=gb2312:share=0.7", "shuffle", "similar:top=2:share=0.7", "split:share=0.7:depth=2",
            "traditional", "variant:share=0.7", "zerowidth:share=0.5")
# all of them as one mix (each target cloaked by one, tried in random order), then each alone on all the words of
# a block of 5 posts
RUNS = ([["--ops", ",".join(EXPLICIT), "--seed", "11", "--variants", "2"],
         ["--ops", ",".join(EXPLICIT), "--targets", "all", "--rate", "0.4", "--seed", "5"]]
        + [["--ops", spec, "--targets", "all", "--rate", "0.4", "--seed", "3", "--shard", f"{k % 8}/8"]
           for k, spec in enumerate(EXPLICIT)])


def perturb_outputs(tmp: Path) -> bytes:
    """What ``cloak perturb`` writes for each of RUNS, joined in order."""
    records = (json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines())
    short = itertools.islice((r for r in records if len(r["text"]) <= LONGEST), POSTS)
    posts = tmp / "posts.jsonl"
    posts.write_text("".join(json.dumps({k: r[k] for k in ("id", "text", "label")}, ensure_ascii=False) + "\n"
                             for r in short), encoding="utf-8")
    written = []
    for k, args in enumerate(RUNS):
        out = tmp / f"out{k}.jsonl"
        result = CliRunner().invoke(main, ["perturb", "--in", str(posts), "--out", str(out), "--workers", "1", "-q",
                                           *args])
        assert result.exit_code == 0, (args, result.output)
        written.append(out.read_bytes())
    return b"".join(written)


def test_seeded_output_with_explicit_options_is_byte_identical(tmp_path):
    made, golden = perturb_outputs(tmp_path), GOLDEN.read_bytes()
    assert len(made.splitlines()) == len(golden.splitlines())
    for k, (new, old) in enumerate(zip(made.splitlines(), golden.splitlines())):
        assert new == old, f"line {k + 1} of {GOLDEN.name} differs"
    assert made == golden


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        GOLDEN.write_bytes(perturb_outputs(Path(folder)))
