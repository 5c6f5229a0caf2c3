"""EAR and KLAR (Bonaldi et al. (2023, arXiv:2309.02311)): the terms equal their formulas on hand-made attention, uniform attention
has the most entropy, KLAR vanishes at its target, relevant tokens are the lexicon's, and every
transformer victim trains with either."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attacks import load_victim, make_victim
from attacks.nn.regularizers import REGULARIZERS, ear_term, klar_target, klar_term, relevant_positions
from cloak.targets import Lexicon

from .conftest import read_jsonl

MASK = torch.tensor([[1, 1, 1, 0]])  # three real tokens and one pad


def rows(*row_values) -> torch.Tensor:
    """One layer's attention (1, 1 head, 4, 4) from the rows of the real tokens (pad rows and keys 0)."""
    a = torch.zeros(1, 1, 4, 4)
    for i, values in enumerate(row_values):
        a[0, 0, i, :len(values)] = torch.tensor(values)
    return a


def test_ear_is_the_mean_entropy_of_the_real_rows_summed_over_layers():
    peaked = rows([1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5])
    entropy = [0.0, math.log(2), -(0.2 * math.log(0.2) + 0.3 * math.log(0.3) + 0.5 * math.log(0.5))]
    assert ear_term([peaked], MASK).item() == pytest.approx(sum(entropy) / 3, rel=1e-6)
    uniform = rows(*[[1 / 3] * 3] * 3)
    assert ear_term([uniform, uniform], MASK).item() == pytest.approx(2 * math.log(3), rel=1e-6)  # the maximum
    assert ear_term([uniform], MASK) > ear_term([peaked], MASK)
    two_heads = torch.cat([peaked, uniform], 1)  # heads are averaged before the entropy
    torch.testing.assert_close(ear_term([two_heads], MASK), ear_term([(peaked + uniform) / 2], MASK))
    # the loss rewards entropy: -alpha * EAR
    assert REGULARIZERS["ear"].term([uniform], MASK).item() == pytest.approx(-0.01 * math.log(3), rel=1e-6)


def test_klar_is_zero_at_its_target_and_the_kl_divergence_elsewhere():
    relevant = torch.tensor([[False, True, False, False]])
    target = klar_target(MASK, relevant, 0.4)
    torch.testing.assert_close(target, torch.tensor([[0.3, 0.4, 0.3, 0.0]]))
    at_target = rows(*[target[0, :3].tolist()] * 3)
    assert klar_term([at_target, at_target], MASK, relevant, 0.4).item() == pytest.approx(0.0, abs=1e-6)
    even = rows(*[[1 / 3] * 3] * 3)
    kl = sum(1 / 3 * math.log((1 / 3) / t) for t in (0.3, 0.4, 0.3))
    assert klar_term([even], MASK, relevant, 0.4).item() == pytest.approx(kl, rel=1e-5)
    # no relevant token: the target is even over the real tokens
    torch.testing.assert_close(klar_target(MASK, torch.zeros(1, 4, dtype=torch.bool), 0.4),
                               torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0]]))
    assert REGULARIZERS["klar"].term([even], MASK, relevant, alpha=0.5).item() == pytest.approx(0.5 * kl, rel=1e-5)


def test_relevant_tokens_are_those_covering_a_lexicon_term():
    lexicon = Lexicon(["黑人"])
    spans = [[None, (0, 1), (1, 2), (2, 3), (3, 4), None]]  # [CLS] 我 黑 人 好 [SEP]
    out = relevant_positions(["我黑人好"], spans, lexicon, 7)
    assert out.tolist() == [[False, False, True, True, False, False, False]]


@pytest.fixture(scope="module")
def rows_of_sample(sample_path):
    records = read_jsonl(sample_path)
    return records[:64], records[64:96]


@pytest.mark.parametrize("name,kind", [("bert", "ear"), ("bert", "klar"),
                                       pytest.param("chinesebert", "klar", marks=pytest.mark.slow)])
def test_bert_victims_train_with_an_attention_regularizer(name, kind, backbone, rows_of_sample, tmp_path):
    train, dev = rows_of_sample
    extra = {"glyph_size": 16, "glyph_dim": 16, "pinyin_dim": 8} if name == "chinesebert" else {}
    victim = make_victim(name, {"backbone": backbone, "max_length": 48, **extra},
                         {"epochs": 1, "lr": 1e-3, "batch_size": 16, "regularizer": kind})
    victim.fit(train, dev, out_dir=str(tmp_path), progress=False)
    assert np.isfinite(victim.log_["log"][0]["train_loss"])
    inputs = victim.training_batch(train[:8])
    if kind == "klar":  # the default lexicon's terms are in the sample's posts
        assert inputs["relevant"].any()
    logits, attentions = victim.model_attentions(victim.model_, victim.embed_batch(victim.model_, inputs))
    assert len(attentions) == 2 and attentions[0].shape[-1] == inputs["input_ids"].shape[1]
    again = load_victim(str(tmp_path))
    assert again.training.regularizer == kind  # saved with the victim
    np.testing.assert_array_equal(again.predict_proba([r["text"] for r in dev]),
                                  victim.predict_proba([r["text"] for r in dev]))


def test_a_victim_without_attention_weights_refuses_a_regularizer(rows_of_sample):
    from attacks.victims.bert import BertVictim
    from attacks.victims.multimodal import MMBertVictim

    class NoAttention(BertVictim):  # a torch victim that does not declare attention weights
        kind = "no-attention"
        attentions = False

    assert BertVictim.attentions and not MMBertVictim.attentions
    with pytest.raises(ValueError, match="no attention regularizer for it"):
        NoAttention(training={"regularizer": "ear"}).fit(*rows_of_sample)


@pytest.mark.slow
def test_habertor_trains_with_an_attention_regularizer(habertor_backbone, rows_of_sample, tmp_path):
    train, dev = rows_of_sample
    victim = make_victim("habertor", {"backbone": str(habertor_backbone), "max_length": 48, "source_field": "topic"},
                         {"epochs": 1, "lr": 1e-3, "batch_size": 16, "regularizer": "klar", "adv": "fgm"})
    victim.fit(train, dev, out_dir=str(tmp_path), progress=False)
    inputs = victim.training_batch(train[:8])
    assert inputs["relevant"].any() and (inputs["source"] >= 0).all()
    embedded = victim.embed_batch(victim.model_.eval(), inputs)
    logits, attentions = victim.model_attentions(victim.model_, embedded)
    torch.testing.assert_close(logits, victim.model_logits(victim.model_, embedded))  # eager = fused kernel
    assert len(attentions) == 2 and torch.allclose(attentions[0].sum(-1), torch.ones(()))


# ---- GAttention (Jarquín-Vásquez et al. 2025) ----

def test_the_gattention_gate_lies_in_0_1_and_a_forced_gate_leaves_one_path():
    from attacks.nn.gattention import GAttentionUnit

    torch.manual_seed(0)
    unit = GAttentionUnit(8)
    x, mask = torch.randn(2, 5, 8), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    g, z = unit(x, mask)
    assert z.shape == (2, 5) and ((z > 0) & (z < 1)).all()
    q, k, v = unit.query(x), unit.key(x), unit.value(x)
    scores = (q @ k.transpose(-1, -2)) / 8 ** 0.5 + (1 - mask[:, None, :]) * -1e9
    x_s = torch.softmax(scores, -1) @ v
    alpha = torch.softmax(q @ unit.context + (1 - mask) * -1e9, -1)
    x_c = alpha.unsqueeze(-1) * q
    torch.testing.assert_close(unit(x, mask, gate=1.0)[0], torch.tanh(unit.self_attention(x_s)))  # SA path
    torch.testing.assert_close(unit(x, mask, gate=0.0)[0], torch.tanh(unit.contextual(x_c)))  # contextual path
    torch.testing.assert_close(g, z.unsqueeze(-1) * torch.tanh(unit.self_attention(x_s))
                               + (1 - z.unsqueeze(-1)) * torch.tanh(unit.contextual(x_c)))


def test_padding_does_not_change_a_gattention_prediction():
    from attacks.nn.gattention import GAttentionHead

    torch.manual_seed(0)
    head = GAttentionHead(8, 2, heads=3).eval()
    x = torch.randn(1, 4, 8)
    alone = head(x, torch.ones(1, 4, dtype=torch.long))[0]
    padded = torch.cat([x, torch.randn(1, 3, 8)], 1)  # three pad positions holding anything
    torch.testing.assert_close(head(padded, torch.tensor([[1, 1, 1, 1, 0, 0, 0]]))[0], alone)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert", "chinesebert"])
def test_a_gattention_head_trains_saves_exports_gates_and_differentiates(name, backbone, rows_of_sample, tmp_path):
    from .test_victims import check_differentiable

    train, dev = rows_of_sample
    extra = {"glyph_size": 16, "glyph_dim": 16, "pinyin_dim": 8} if name == "chinesebert" else {}
    victim = make_victim(name, {"backbone": backbone, "max_length": 48, "head": "gattention",
                                "gattention_heads": 2, **extra},
                         {"epochs": 1, "lr": 1e-3, "batch_size": 16, "regularizer": "ear"})
    victim.fit(train, dev, out_dir=str(tmp_path), progress=False)
    assert victim.name == f"{name}-gattention" and "head gattention, gattention heads 2" in victim.settings_text()
    texts = [r["text"] for r in dev]
    again = load_victim(str(tmp_path))
    np.testing.assert_array_equal(again.predict_proba(texts), victim.predict_proba(texts))
    check_differentiable(again, texts[:4])
    gates = again.gates(texts[:3])
    for text, tokens in zip(texts, gates):
        assert tokens[0]["token"] == "[CLS]" and tokens[0]["start"] is None
        assert all(len(t["z"]) == 2 and all(0 < z < 1 for z in t["z"]) for t in tokens)
        ends = [t["end"] for t in tokens[1:-1]]
        assert ends == sorted(ends) and ends[-1] == len(text)  # the post's own characters, in order (its tail)


@pytest.mark.slow
def test_the_commands_train_a_regularised_gattention_bert_and_export_its_gates(backbone, rows_of_sample, tmp_path):
    import json

    from click.testing import CliRunner

    from attacks.cli import main

    train, dev = rows_of_sample
    for name, rows in (("train", train), ("dev", dev)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    (tmp_path / "relevant.txt").write_text("女\n男\n")
    (tmp_path / "settings.yaml").write_text(f"config: {{backbone: {backbone}, max_length: 48}}\n"
                                           "training: {epochs: 1, lr: 0.001}\n")
    out = tmp_path / "victim"
    result = CliRunner().invoke(main, [
        "train", "--model", "bert", "--head", "gattention", "--gattention-heads", "2", "--regularizer", "klar",
        "--klar-share", "0.6", "--relevant", str(tmp_path / "relevant.txt"),
        "--config", str(tmp_path / "settings.yaml"),
        "--train", str(tmp_path / "train.jsonl"), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "victim.json").read_text())
    assert saved["config"]["head"] == "gattention" and saved["training"]["klar_share"] == 0.6
    result = CliRunner().invoke(main, ["predict", "--victim", str(out), "--in", str(tmp_path / "dev.jsonl"),
                                       "--out", str(tmp_path / "scored.jsonl"), "--gates"])
    assert result.exit_code == 0, result.output
    assert "head gattention, gattention heads 2; epochs 1, lr 0.001, regularizer klar" in result.output
    scored = [json.loads(line) for line in (tmp_path / "scored.jsonl").read_text().splitlines()]
    assert len(scored) == len(dev) and all(len(t["z"]) == 2 for r in scored for t in r["victim"]["gates"])
    result = CliRunner().invoke(main, ["predict", "--victim", str(tmp_path / "victim"), "--in",
                                       str(tmp_path / "dev.jsonl"), "--out", str(tmp_path / "x.jsonl"), "--gates",
                                       "--batch-size", "8"])
    batched = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text().splitlines()]
    assert result.exit_code == 0 and [r["victim"]["gates"] for r in batched] == [r["victim"]["gates"] for r in scored]
    plain = tmp_path / "plain"
    CliRunner().invoke(main, ["train", "--model", "tfidf-lr", "--train", str(tmp_path / "train.jsonl"), "--out",
                              str(plain)])
    result = CliRunner().invoke(main, ["predict", "--victim", str(plain), "--in", str(tmp_path / "dev.jsonl"),
                                       "--out", str(tmp_path / "y.jsonl"), "--gates"])
    assert result.exit_code != 0 and "--gates needs a victim with a GAttention head" in result.output
