"""HABERTOR: quaternion layers are Hamilton products, the factorised model has Tran et al.'s parameter
count, the ensemble heads pool as §4.4 says, the adversarial loss is eq. 3, and the victim pre-trains,
fine-tunes, saves, reloads and differentiates like every torch victim."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from attacks import load_victim
from attacks.cli import main
from attacks.victims.habertor import HabertorVictim
from attacks.nn.habertor_model import (PRESETS, EnsembleHeads, HabertorConfig, HabertorModel, parameter_formula,
                                    weight_count)
from attacks.nn.quaternion import QuaternionLinear

from .conftest import HABERTOR_TINY as TINY, read_jsonl
from .test_victims import check_differentiable


def test_a_quaternion_layer_is_the_hamilton_product_and_trains_all_four_blocks():
    torch.manual_seed(0)
    layer = QuaternionLinear(8, 12)
    x = torch.randn(5, 8)
    a, b, c, d = x.split(2, dim=1)  # the input quaternion's four components
    r, i, j, k = layer.r, layer.i, layer.j, layer.k
    expected = torch.cat([a @ r - b @ i - c @ j - d @ k,  # the Hamilton product (r + ii + jj + kk)(a + bi + cj + dk)
                          a @ i + b @ r + d @ j - c @ k,
                          a @ j + c @ r + b @ k - d @ i,
                          a @ k + d @ r + c @ i - b @ j], dim=1) + layer.bias
    torch.testing.assert_close(layer(x), expected)
    torch.testing.assert_close(layer(x), torch.nn.functional.linear(x, layer.weight.T, layer.bias))
    assert sum(p.numel() for p in layer.parameters()) == 8 * 12 // 4 + 12  # a quarter of a dense layer's weights
    layer(x).pow(2).sum().backward()
    assert all(block.grad is not None and block.grad.abs().sum() > 0 for block in (r, i, j, k))
    with pytest.raises(ValueError, match="divisible by 4"):
        QuaternionLinear(6, 8)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_parameter_counts_follow_the_papers_formula(preset):
    config = HabertorConfig.preset(preset, vocab_size=40000)  # Tran et al.'s Table 2 sizes
    model = HabertorModel(config)
    assert weight_count(model) == parameter_formula(config)
    v, e, h, c, i, n = 40000, 128, 384, 192, 128, 6
    if preset == "vafoqf":
        paper = v * e + e * h // 4 + n * (3 * c * h // 4 + h * h + 5 * h * i // 2)
        assert parameter_formula(config, paper=True) == paper
        assert round(parameter_formula(config, paper=True) / 1e6, 1) == 7.1  # Tran et al.'s 7.1M
        # as built, the attention's output map takes the C-wide attention back to H: C x H, not H x H
        assert parameter_formula(config) == parameter_formula(config, paper=True) - n * (h * h - c * h)
    if not config.factorize_attention:
        assert parameter_formula(config) == parameter_formula(config, paper=True)
    bert_base = HabertorConfig.preset("habertor", vocab_size=30000, hidden_size=768, num_layers=12, num_heads=12,
                                      feedforward_size=3072)
    assert parameter_formula(bert_base) == 30000 * 768 + 144 * 768 ** 2  # Tran et al.'s VH + 144H^2


def test_the_config_says_what_is_wrong():
    with pytest.raises(ValueError, match="attention_size \\(18\\) must be divisible by 4"):
        HabertorConfig.preset("vafoqf", **{**TINY, "attention_size": 18})
    with pytest.raises(ValueError, match="must be divisible by num_heads"):
        HabertorConfig.preset("vafoqf", **{**TINY, "num_heads": 3})
    with pytest.raises(ValueError, match="unknown parameter 'hiden_size'; did you mean 'hidden_size'"):
        HabertorConfig.preset("vafoqf", hiden_size=32)
    with pytest.raises(ValueError, match="min pooling of the heads is for two labels"):
        EnsembleHeads(8, 3, 1, 2, "min", 0.0)


def _fixed_heads(pooling: str, positives: list[list[float]]) -> EnsembleHeads:
    """Heads whose p(positive) is fixed: source s, head h gives positives[s][h] whatever the input."""
    heads = EnsembleHeads(4, 2, len(positives), len(positives[0]), pooling, 0.0)
    with torch.no_grad():
        for net, ps in zip(heads.nets, positives):
            for head, p in zip(net, ps):
                head[-1].weight.zero_()
                head[-1].bias.copy_(torch.tensor([0.0, float(np.log(p / (1 - p)))]))
    return heads.eval()


@pytest.mark.parametrize("pooling,expected", [("min", [0.2, 0.5, 0.35]), ("max", [0.6, 0.9, 0.75]),
                                              ("mean", [0.4, 0.7, 0.55])])
def test_each_source_has_its_own_net_of_pooled_heads_and_an_unknown_source_the_mean(pooling, expected):
    heads = _fixed_heads(pooling, [[0.2, 0.6], [0.9, 0.5]])
    probs = torch.softmax(heads(torch.randn(3, 4), torch.tensor([0, 1, -1])), -1)
    torch.testing.assert_close(probs[:, 1], torch.tensor(expected), atol=1e-6, rtol=0)


def test_pretraining_writes_a_backbone_with_a_vocabulary_of_the_corpus_and_the_cloaks(habertor_backbone,
                                                                                   sample_path):
    log = json.loads((habertor_backbone / "pretrain_log.json").read_text())
    assert [e["epoch"] for e in log["log"]] == [1, 2] and log["best_epoch"] in (1, 2)
    held_out = max(1, 300 // 50)
    assert log["sequences_per_epoch"] == 2 * (300 - held_out)  # tau copies of every training text
    from attacks.victims.habertor import load_tokenizer

    tokenizer = load_tokenizer(str(habertor_backbone))
    assert tokenizer.unk_token_id not in tokenizer("白人txl🐴🍚", add_special_tokens=False)["input_ids"]
    assert HabertorConfig.from_pretrained(str(habertor_backbone)).vocab_size == len(tokenizer)


def test_a_new_masked_lm_guesses_about_uniformly():
    # The decoder is the token table: drawn at torch's N(0, 1) it started far above ln V and took an
    # epoch of COLD to come down to the unigram loss.
    from attacks.nn.habertor_model import HabertorForMaskedLM

    for preset in ("vafoqf", "habertor"):
        torch.manual_seed(0)
        config = HabertorConfig.preset(preset, **{**TINY, "vocab_size": 2000})
        model = HabertorForMaskedLM(config).eval()
        ids = torch.randint(5, 2000, (8, 24))
        labels = torch.where(torch.rand(8, 24) < 0.3, ids, -100)
        loss = model.masked_lm_loss(ids, torch.ones_like(ids), labels).item()
        assert abs(loss - np.log(2000)) < 0.5, (preset, loss)


def test_an_interrupted_pretraining_resumes_to_the_same_model(sample_path, tmp_path):
    from safetensors.torch import load_file

    from attacks.victims.habertor import HabertorPretraining, pretrain_habertor

    texts = [r["text"] for r in read_jsonl(sample_path)][:120]
    args = (texts, HabertorConfig.preset("vafoqf", **TINY),
            HabertorPretraining(vocab_size=300, tau=2, epochs=2, max_length=48, batch_size=16, checkpoint_minutes=0))

    def interrupt(state):
        if (state["epoch"], state["step"]) == (1, 3):  # in the middle of epoch 2
            raise KeyboardInterrupt

    pretrain_habertor(args[0], str(tmp_path / "whole"), *args[1:], progress=False)
    with pytest.raises(KeyboardInterrupt):
        pretrain_habertor(args[0], str(tmp_path / "cut"), *args[1:], progress=False, on_checkpoint=interrupt)
    pretrain_habertor(args[0], str(tmp_path / "cut"), *args[1:], progress=False, resume=True)
    whole, cut = (load_file(str(tmp_path / d / "model.safetensors")) for d in ("whole", "cut"))
    for name in whole:
        torch.testing.assert_close(whole[name], cut[name], msg=name)


def habertor(backbone, adv: str = "adaptive", **training) -> HabertorVictim:
    return HabertorVictim({"backbone": str(backbone), "max_length": 48, "source_field": "topic"},
                          {"epochs": 2, "lr": 1e-3, "batch_size": 16, "adv": adv, **training})


def test_habertor_fine_tunes_saves_reloads_and_differentiates(habertor_backbone, sample_path, tmp_path):
    rows = read_jsonl(sample_path)
    train, test = rows[:240], rows[240:]
    victim = habertor(habertor_backbone)
    victim.fit(train, progress=False, out_dir=str(tmp_path))
    assert victim.sources == sorted({r["topic"] for r in train})
    eps, low, high = victim.model.noise.eps.detach(), victim.training.eps_low, victim.training.eps_high
    assert ((eps >= low) & (eps <= high)).all() and (eps > low).any()  # learnt, and kept in [a, b]
    texts = [r["text"] for r in test]
    again = load_victim(str(tmp_path))
    np.testing.assert_array_equal(again.predict_proba(texts), victim.predict_proba(texts))
    check_differentiable(again, texts[:4])
    by_source = again.predict_records(test)
    assert by_source.shape == (len(test), 2) and not np.allclose(by_source, again.predict_proba(texts))
    unknown = [{**r, "topic": "not a topic"} for r in test]
    np.testing.assert_allclose(again.predict_records(unknown), again.predict_proba(texts))
    (tmp_path / "posts.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in test))
    scored = tmp_path / "scored.jsonl"
    result = CliRunner().invoke(main, ["predict", "--victim", str(tmp_path), "--in", str(tmp_path / "posts.jsonl"),
                                       "--out", str(scored)])
    assert result.exit_code == 0, result.output
    probs = [json.loads(line)["victim"]["probs"] for line in scored.read_text().splitlines()]
    np.testing.assert_allclose(probs, by_source, atol=1e-6)  # the command reads each post's source


def test_the_adversarial_loss_is_eq_3(habertor_backbone, sample_path):
    rows = read_jsonl(sample_path)[:32]
    plain = habertor(habertor_backbone, "none", epochs=1)
    plain.fit(rows[:24], rows[24:], progress=False)
    model, labels = plain.model.eval(), torch.tensor([r["label"] for r in rows])
    inputs = plain.training_batch(rows)
    clean = plain.training_loss(model, inputs, labels)
    plain.training = plain.Training(adv="fgm", eps=0.0)
    torch.testing.assert_close(plain.training_loss(model, inputs, labels), 2 * clean)  # L_hs + L_adv at delta = 0
    plain.training = plain.Training(adv="fgm", eps=1.0)
    assert plain.training_loss(model, inputs, labels) > 2 * clean  # the step raises the gold loss
    from attacks.nn.habertor_model import AdaptiveNoise

    model.noise = AdaptiveNoise(model.habertor.config.hidden_size, 2.0, 2.0)
    plain.training = plain.Training(adv="fgm", eps=2.0)
    fixed = plain.training_loss(model, inputs, labels)  # eps = 2 in every dimension is plain FGM at 2
    plain.training = plain.Training(adv="adaptive", eps_low=2.0, eps_high=2.0, lambda_eps=0.5)
    norm = 2.0 * model.habertor.config.hidden_size ** 0.5
    torch.testing.assert_close(plain.training_loss(model, inputs, labels), fixed - 0.5 * norm)
