"""The same inputs give the same bytes, torch victims included: two identical `attacks evaluate` runs over
a BERT victim wrote outcome files that differed (bert/cloak-emoji.jsonl in 4 rows, a probability by 7.8e-5
for the same text, another worst variant chosen, another summary).

The cause: BERT's normaliser drops the tag characters of the flags of England, Scotland and Wales, so the
emoji added to the tokenizer as normalised tokens 🏴 and those three flags all read "🏴", and the Rust
tokenizer took one of the four ids at random at each load (its hash map's order): the same post was a
different input from one load to the next. Neither the batch a text is scored in nor the thread count
moved a figure between runs (a text scored alone and in a batch differs by at most 6e-8, the same in every
run)."""
from __future__ import annotations

import json

import pytest

from .conftest import read_jsonl

ENGLAND = "🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F"


def test_every_text_reads_as_one_id_at_every_load(tmp_path):
    from transformers import BertTokenizer

    from mmbert.tokenization import build_tokenizer, bundled_vocab, emoji_tokens, load_tokenizer

    old = BertTokenizer(vocab=bundled_vocab())  # as build_tokenizer made them: every emoji a normalised token
    old.add_tokens(emoji_tokens())
    old.save_pretrained(tmp_path / "old")
    build_tokenizer().save_pretrained(tmp_path / "new")
    for made in (build_tokenizer, lambda: load_tokenizer(str(tmp_path / "old")),
                 lambda: load_tokenizer(str(tmp_path / "new"))):
        read = {tuple(made()(f"黑🏴 {ENGLAND} ❤ ❤️", add_special_tokens=False)["input_ids"]) for _ in range(12)}
        assert len(read) == 1, read
    tokenizer = build_tokenizer()
    plain, england, *_ = read.pop()[1:]
    assert tokenizer.convert_ids_to_tokens(plain) == "🏴" and england != plain  # each flag its own id
    assert plain == min(i for i, t in tokenizer.added_tokens_decoder.items() if t.content.startswith("🏴"))


@pytest.fixture(scope="module")
def bert_victim(backbone, sample_path, tmp_path_factory):
    from attacks import make_victim

    rows = read_jsonl(sample_path)
    folder = tmp_path_factory.mktemp("victims") / "bert"
    make_victim("bert", {"backbone": backbone, "max_length": 48}, {"epochs": 1, "lr": 1e-3, "batch_size": 16}).fit(
        rows[:120], rows[120:160], out_dir=str(folder), progress=False)
    return folder


def test_two_identical_evaluations_of_a_torch_victim_write_the_same_bytes(bert_victim, sample_path, tmp_path):
    from attacks.cloaking import CloakAttack
    from attacks.evaluate import evaluate
    from attacks.fgm import EmbeddingAttack

    rows = [r for r in read_jsonl(sample_path)[200:] if len(r["text"]) < 40][:24]
    for i, r in enumerate(rows[:8]):  # posts that carry the flags, as cloaked posts do
        r["text"] += "🏴" if i % 2 else ENGLAND
    runs = []
    for run in range(3):  # each run loads the victim afresh, as a new process does
        out = tmp_path / f"eval{run}"
        evaluate({"bert": str(bert_victim)}, rows, [CloakAttack(ops="emoji,homophone", variants=2, seed=1),
                                                    EmbeddingAttack(eps=0.5)], str(out), progress=False)
        runs.append({p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*.json*"))})
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) == 5  # run.json, summary.json and the three outcome files
    assert json.loads(runs[0][next(p for p in runs[0] if p.name == "summary.json")])["victims"]["bert"]["attacks"]
