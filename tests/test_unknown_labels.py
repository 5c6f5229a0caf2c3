"""A record labelled with a label the model does not know is refused in one line naming the file, the line
and the label, before the model loads and before anything is written: `mmbert evaluate` scored a post
labelled 2 on a two-label model as a third class (macro-F1 averaged over three), `mmbert train` stopped only
after loading the model with "the model has 2 labels, the data 3", and `attacks predict` passed it by.
`attacks evaluate` always refused it (test_attacks)."""
from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from .conftest import read_jsonl


def with_label_two(rows: list[dict], path) -> str:
    rows = [dict(r) for r in rows]
    rows[2]["label"] = 2
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def refused(main, args: list, bad: str, who: str) -> None:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 1, result.output
    assert result.stderr.endswith(f"{bad}, line 3: field 'label': 2, but {who} knows labels 0, 1\n"), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_mmbert_evaluate_and_train_refuse_a_label_the_model_does_not_know(stages, data, tmp_path, tiny_whisper):
    from mmbert.cli import main

    bad = with_label_two(read_jsonl(data / "dev.jsonl"), tmp_path / "three.jsonl")
    refused(main, ["evaluate", "--model", stages[3], "--data", bad, "--out", tmp_path / "eval.json", "-q"], bad,
            f"the model in {stages[3]}")
    assert not (tmp_path / "eval.json").exists()
    # stage 2 continues stage 1's two-label model: a third label in its training or dev records is refused
    for train, dev in ((bad, data / "dev.jsonl"), (data / "train.jsonl", bad)):
        refused(main, ["train", "--stage", 2, "--config", "tiny", "--train", train, "--dev", dev, "--from", stages[1],
                       "--out", tmp_path / "s2", "--whisper", tiny_whisper, "-q"], bad, f"the model in {stages[1]}")
        assert not (tmp_path / "s2").exists()


def test_attacks_predict_refuses_a_label_the_victim_does_not_know(sample_path, tmp_path):
    from attacks import make_victim
    from attacks.cli import main

    rows = read_jsonl(sample_path)
    make_victim("tfidf-lr").fit(rows[:200]).save(str(tmp_path / "v"))
    bad = with_label_two(rows[200:], tmp_path / "three.jsonl")
    refused(main, ["predict", "--victim", tmp_path / "v", "--in", bad, "--out", tmp_path / "scored.jsonl"], bad,
            "victim tfidf-lr")
    assert not os.path.exists(tmp_path / "scored.jsonl")
    unlabelled = tmp_path / "unlabelled.jsonl"  # records without labels are scored as before
    unlabelled.write_text("".join(json.dumps({"id": r["id"], "text": r["text"]}, ensure_ascii=False) + "\n"
                                  for r in rows[200:210]), encoding="utf-8")
    result = CliRunner().invoke(main, ["predict", "--victim", str(tmp_path / "v"), "--in", str(unlabelled), "--out",
                                       str(tmp_path / "scored.jsonl")])
    assert result.exit_code == 0, result.output
    assert len(read_jsonl(tmp_path / "scored.jsonl")) == 10


@pytest.mark.parametrize("label", ["x", -1])
def test_a_label_that_is_no_label_is_refused_where_labels_are_checked(label, tmp_path):
    from cloak.common.io import RecordError, known_labels

    with pytest.raises(RecordError, match="line 4: field 'label': must be a non-negative integer"):
        list(known_labels([(3, {"text": "a"}), (4, {"text": "a", "label": label})], 2, "in.jsonl", "victim v"))
