"""MMBERT on the tiny preset: the MoE layer, routing, aux loss, the three stages, saving, resuming, CLI.

Speech comes from the tone backend and a random tiny Whisper; the backbone is random. Nothing here
needs a download.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from transformers import BertConfig, BertModel  # noqa: E402

from mmbert import MMBertConfig, MMBertForSequenceClassification, load_balancing_loss, upcycle_from_bert  # noqa: E402
from mmbert.checkpoint import start_run  # noqa: E402
from mmbert.loading import StageError, load_model, model_for_stage  # noqa: E402
from mmbert.presets import load_run_config  # noqa: E402
from mmbert.speech_features import pool_frames  # noqa: E402
from mmbert.tokenization import build_tokenizer  # noqa: E402
from mmbert.train import (held_out, masked_terms, parameter_group, read_labelled, term_mask_targets,  # noqa: E402
                          train_stage)

from .conftest import cli_in_fresh_python, read_jsonl  # noqa: E402


def tiny_bert() -> BertModel:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return BertModel(config).eval()


def mm_config(bert: BertModel, **kwargs) -> MMBertConfig:
    return MMBertConfig.from_bert_config(bert.config, speech_dim=16, vision_dim=8, glyph_size=16, num_labels=2,
                                         **kwargs)


@pytest.mark.parametrize("top_k", [0, 1, 2])
def test_upcycled_moe_equals_the_feed_forward_whatever_the_router_says(top_k):
    bert = tiny_bert()
    model = upcycle_from_bert(bert, mm_config(bert, moe_top_k=top_k)).eval()
    torch.manual_seed(1)
    h = torch.randn(3, 7, 32)
    for bert_layer, layer in zip(bert.encoder.layer, model.mmbert.layers):
        torch.nn.init.normal_(layer.moe.router.weight, std=3.0)  # a router with strong opinions
        expected = bert_layer.output.dense(bert_layer.intermediate(h))
        mixed, weights = layer.moe(h)
        assert weights.shape == (3, 7, 3) and weights.std() > 0.1
        torch.testing.assert_close(mixed, expected, atol=1e-5, rtol=1e-4)


def test_moe_output_is_the_router_weighted_sum_of_distinct_experts():
    bert = tiny_bert()
    torch.manual_seed(2)
    dense, top1 = (MMBertForSequenceClassification(mm_config(bert, moe_top_k=k)).eval().mmbert.layers[0].moe
                   for k in (0, 1))
    top1.load_state_dict(dense.state_dict())  # same (random, distinct) experts and router
    h = torch.randn(2, 5, 32)
    each = torch.stack([e(h) for e in dense.experts], dim=-1)  # (b, t, hidden, expert)
    mixed, weights = dense(h)
    torch.testing.assert_close(mixed, (each * weights.unsqueeze(2)).sum(-1))
    sparse, one_hot = top1(h)
    best = weights.argmax(-1)
    torch.testing.assert_close(one_hot, torch.nn.functional.one_hot(best, 3).float())
    torch.testing.assert_close(sparse, each.gather(-1, best[..., None, None].expand(2, 5, 32, 1)).squeeze(-1))


def test_dense_fusion_reads_every_modality_through_one_feed_forward():
    """The fusion baseline: MMBERT's speech and glyph tokens through BERT's one feed-forward, no router."""
    bert = tiny_bert()
    model = upcycle_from_bert(bert, mm_config(bert, feed_forward="dense")).eval()
    assert all(len(layer.moe.experts) == 1 and layer.moe.router is None for layer in model.mmbert.layers)
    ids = torch.randint(5, 120, (2, 6))
    out = model(ids, speech_features=torch.randn(2, 4, 16), labels=torch.tensor([0, 1]))
    assert out.token_types.shape == (2, 16) and out.aux_loss is None
    assert all(torch.equal(w, torch.ones(2, 16, 1)) for w in out.routing)
    text = model.mmbert(ids, modalities=("text",)).last_hidden_state
    torch.testing.assert_close(text, bert(input_ids=ids).last_hidden_state, atol=1e-5, rtol=1e-4)
    alone = model(ids, modalities=("text",)).logits
    assert not torch.allclose(out.logits, alone)  # the speech and glyph tokens are read
    assert model.config.expert_of("speech") == model.config.expert_of("vision") == 0


def test_modality_routing_sends_each_token_to_its_modalitys_expert():
    bert = tiny_bert()
    torch.manual_seed(3)
    routed = MMBertForSequenceClassification(mm_config(bert)).eval()
    by_modality = MMBertForSequenceClassification(mm_config(bert, feed_forward="modality")).eval()
    missing, unexpected = by_modality.load_state_dict(routed.state_dict(), strict=False)
    assert not missing and unexpected and all(".router." in k for k in unexpected)
    assert all(layer.moe.router is None for layer in by_modality.mmbert.layers)
    out = by_modality(torch.randint(5, 120, (2, 6)), speech_features=torch.randn(2, 4, 16))
    for weights in out.routing:
        torch.testing.assert_close(weights, torch.nn.functional.one_hot(out.token_types, 3).float())
    assert out.aux_loss is None
    moe, h = by_modality.mmbert.layers[0].moe, torch.randn(1, 3, 32)
    mixed, _ = moe(h, token_experts=torch.tensor([[0, 1, 2]]))
    torch.testing.assert_close(mixed, torch.stack([moe.experts[i](h)[0, i] for i in range(3)])[None])


def tiny_xlm_roberta():
    from transformers import XLMRobertaConfig, XLMRobertaModel

    torch.manual_seed(0)
    config = XLMRobertaConfig(vocab_size=120, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=64, max_position_embeddings=66, hidden_dropout_prob=0.0,
                              attention_probs_dropout_prob=0.0)
    return XLMRobertaModel(config).eval()


@pytest.mark.parametrize("make,offset", [(tiny_bert, 0), (tiny_xlm_roberta, 2)])
def test_text_only_mmbert_from_a_bert_computes_what_the_bert_computes(make, offset):
    """XLM-R numbers its positions from 2 (pad_token_id + 1): MMBERT reads its position table from there."""
    bert = make()
    model = upcycle_from_bert(bert, mm_config(bert)).eval()
    assert model.config.position_offset == offset and model.config.positions == 64
    ids = torch.randint(5, 120, (2, 9))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    ours = model.mmbert(ids, mask, modalities=("text",)).last_hidden_state
    theirs = bert(input_ids=ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(ours[mask.bool()], theirs[mask.bool()], atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("top_k", [0, 1, 2])
def test_routing_weights_sum_to_one_over_all_modalities(top_k):
    bert = tiny_bert()
    model = MMBertForSequenceClassification(mm_config(bert, moe_top_k=top_k)).eval()
    ids = torch.randint(5, 120, (2, 6))
    out = model(ids, speech_features=torch.randn(2, 4, 16))
    assert out.token_types.tolist()[0] == [0] * 6 + [1] * 4 + [2] * 6
    for weights in out.routing:
        assert weights.shape == (2, 16, 3)
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, 16))
        assert (weights >= 0).all()
        if top_k:
            assert ((weights > 0).sum(-1) == top_k).all()


def test_aux_loss_is_its_formula_and_one_when_balanced():
    weights = torch.tensor([[[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.0, 0.0, 1.0]]])
    mask = torch.tensor([[1, 1, 1, 1, 0]])  # the last token is padding: it must not count
    # p = shares routed (argmax) = [2, 1, 1] / 4; f = mean weights = [1.6, 1.5, 0.9] / 4
    expected = 3 * (0.5 * 0.4 + 0.25 * 0.375 + 0.25 * 0.225)
    assert load_balancing_loss(weights, mask).item() == pytest.approx(expected)
    balanced = torch.eye(3)[None]
    assert load_balancing_loss(balanced, torch.ones(1, 3)).item() == pytest.approx(1.0)
    collapsed = torch.tensor([[[1.0, 0.0, 0.0]] * 3])
    assert load_balancing_loss(collapsed, torch.ones(1, 3)).item() == pytest.approx(3.0)


def test_alignment_terms_are_scale_free():
    from mmbert.train import unexplained_variance

    torch.manual_seed(0)
    for scale in (0.02, 1.0, 50.0):
        target = torch.randn(6, 4) * scale
        mean_row = target.mean(0, keepdim=True).expand_as(target)
        assert unexplained_variance(mean_row, target).item() == pytest.approx(1.0, rel=1e-5)
        assert unexplained_variance(target, target).item() == 0.0
    one = torch.randn(1, 4)
    assert unexplained_variance(torch.zeros(1, 4), one).item() == pytest.approx(1.0)  # a batch of one


def test_contrastive_alignment_rewards_each_post_nearest_its_own_clean_text():
    from mmbert.train import contrastive_loss

    torch.manual_seed(0)
    target = torch.randn(8, 16)
    own = contrastive_loss(target * 3 + 1, target)  # scale and offset do not matter: centred cosines
    swapped = contrastive_loss(target.roll(1, 0), target)  # every post matched to another's text
    assert own.item() < 0.01 and swapped.item() > 10
    assert contrastive_loss(torch.zeros(1, 4), torch.randn(1, 4)).item() == pytest.approx(1.0)  # one row: MSE


@pytest.mark.slow
def test_stage1_trains_with_the_contrastive_alignment(run, data, tmp_path):
    from cloak.common.params import ParameterError
    from mmbert.presets import check_run_config

    contrastive = {**run, "train": {**run["train"], "stage1": {**run["train"]["stage1"], "loss": "contrastive"}}}
    result = train_stage(1, contrastive, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(tmp_path / "s1"),
                         progress=False)
    saved = json.loads((tmp_path / "s1" / "training.json").read_text())
    assert saved["run_config"]["train"]["stage1"]["loss"] == "contrastive" and result["dev_alignment_loss"] > 0
    bad = {**run, "train": {**run["train"], "stage1": {**run["train"]["stage1"], "loss": "cosine"}}}
    with pytest.raises(ParameterError, match="loss"):
        check_run_config(bad)


def test_text_mask_replaces_a_share_of_the_real_tokens_but_the_special_ones():
    from mmbert.train import masked_text

    ids = torch.tensor([[101, 5, 6, 7, 102, 0], [101, 8, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    every = masked_text(ids, mask, 0.999999, 103, [101, 102, 0], [0, 1])
    assert every.tolist() == [[101, 103, 103, 103, 102, 0], [101, 103, 102, 0, 0, 0]]
    assert torch.equal(masked_text(ids, mask, 0.0, 103, [101, 102, 0], [0, 1]), ids)
    some = masked_text(torch.full((1, 2000), 9), torch.ones(1, 2000, dtype=torch.long), 0.25, 103, [101], [0])
    assert 0.2 < (some == 103).float().mean().item() < 0.3


def test_term_mask_masks_each_term_whole_or_not_at_all():
    from mmbert.train import masked_text

    ids = torch.tensor([[101, 11, 12, 13, 14, 15]]).repeat(4000, 1)
    terms = torch.tensor([[0, 1, 1, 0, 2, 2]]).repeat(4000, 1)
    seeds = list(range(4000))
    masked = masked_text(ids, torch.ones_like(ids), 0.0, 103, [101], seeds, terms, 0.5) == 103
    assert not masked[:, [0, 3]].any()  # outside the terms nothing is masked
    assert torch.equal(masked[:, 1], masked[:, 2]) and torch.equal(masked[:, 4], masked[:, 5])  # a term goes whole
    assert 0.45 < masked[:, 1].float().mean().item() < 0.55
    assert 0.2 < (masked[:, 1] & masked[:, 4]).float().mean().item() < 0.3  # each term drawn on its own
    assert torch.equal(masked_text(ids, torch.ones_like(ids), 0.0, 103, [101], seeds, terms, 0.0), ids)


def test_an_examples_masks_depend_on_its_seed_alone_not_on_its_batch():
    """MMBERT and its twin must mask the same positions of an example: its row draws from a generator of its
    own, over its real tokens, whatever else is in the batch, however padded, and whatever the global RNG."""
    from mmbert.train import mask_seed, masked_text

    def mask(rows: list[list[int]], seeds: list[int], terms: list[list[int]]) -> list[list[int]]:
        width = max(map(len, rows))
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        term_ids = torch.tensor([t + [0] * (width - len(t)) for t in terms])
        torch.manual_seed(len(rows))  # the global generator must not matter
        out = masked_text(ids, (ids != 0).long(), 0.3, 103, [101, 102, 0], seeds, term_ids, 0.5)
        return [row[:len(r)] for row, r in zip(out.tolist(), rows)]

    post, terms = [101, *range(20, 40), 102], [0, *[1] * 4, *[0] * 8, *[2] * 3, *[0] * 5, 0]
    seed = mask_seed(0, 7, 1)
    alone = mask([post], [seed], [terms])[0]
    beside = mask([[101, 5, 102], post, [101, *range(50, 90), 102]], [mask_seed(0, 1, 1), seed, mask_seed(0, 2, 1)],
                  [[0] * 3, terms, [0] * 42])[1]
    assert alone == beside and 103 in alone
    others = {tuple(mask([post], [mask_seed(*key)], [terms])[0]) for key in ((1, 7, 1), (0, 8, 1), (0, 7, 2))}
    assert tuple(alone) not in others  # another seed, example or epoch draws other masks


def test_term_ids_number_the_terms_each_token_overlaps():
    from mmbert.data import Featurizer

    featurizer = Featurizer(build_tokenizer(), max_length=32)
    found = featurizer.term_ids(["我讨厌黑鬼和白人ok", "没有"], lambda text: [(3, 5), (6, 8)] if "黑" in text else [])
    # [CLS] 我 讨 厌 黑 鬼 和 白 人 ok [SEP]
    assert found == [[0, 0, 0, 0, 1, 1, 0, 2, 2, 0, 0], [0, 0, 0, 0]]
    examples = featurizer.encode([{"text": "没有"}, {"text": "黑鬼"}], terms=lambda text: [(0, 2)] if "黑" in text else [])
    assert featurizer.collate(examples)["term_ids"].tolist() == [[0, 0, 0, 0], [0, 1, 1, 0]]


@pytest.mark.slow
def test_stage3_masks_mask_training_batches_only(run, data, stages, tmp_path, monkeypatch):
    import mmbert.train as train_module
    from cloak import default_lexicon
    from cloak.common.params import ParameterError
    from mmbert.loading import load_tokenizer
    from mmbert.presets import check_run_config

    seen = []

    def spy(input_ids, attention_mask, share, mask_id, keep_ids, seeds, term_ids=None, term_share=0.0):
        out = masked_text(input_ids, attention_mask, share, mask_id, keep_ids, seeds, term_ids, term_share)
        seen.append((share, term_share, mask_id, int((term_ids > 0).sum()), (out == mask_id).sum().item(),
                     (input_ids == mask_id).sum().item()))
        return out

    masked_text = train_module.masked_text
    monkeypatch.setattr(train_module, "masked_text", spy)
    masking = {**run, "train": {**run["train"], "stage3": {**run["train"]["stage3"], "text_mask": 0.5, "term_mask": 0.5}}}
    train_stage(3, masking, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(tmp_path / "s3"), stages[2],
                progress=False)
    batches = -(-len(read_jsonl(data / "train.jsonl")) // run["train"]["batch_size"])
    assert len(seen) == batches  # once a training batch; never on the dev posts
    assert {s[:3] for s in seen} == {(0.5, 0.5, load_tokenizer(stages[2]).mask_token_id)}
    assert sum(s[3] for s in seen) > 0  # the posts' terms reach the masks
    assert sum(s[4] for s in seen) > sum(s[5] for s in seen)
    saved = json.loads((tmp_path / "s3" / "training.json").read_text())
    assert saved["run_config"]["train"]["stage3"]["text_mask"] == 0.5
    assert saved["run_config"]["train"]["stage3"]["term_mask"] == 0.5
    assert saved["term_mask_terms"] >= len(default_lexicon())  # the lexicon's terms and any mined
    assert 0 < saved["term_mask_posts"] <= len(read_jsonl(data / "train.jsonl"))
    for key in ("text_mask", "term_mask", "term_holdout"):
        with pytest.raises(ParameterError, match=key):
            check_run_config({**run, "train": {**run["train"], "stage3": {**run["train"]["stage3"], key: 1.0}}})
    # a held-out share of the terms is never masked: the same terms at every seed
    holding = {**masking, "train": {**masking["train"], "seed": 3,
                                    "stage3": {**masking["train"]["stage3"], "term_holdout": 0.5}}}
    train_stage(3, holding, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(tmp_path / "held"), stages[2],
                progress=False)
    terms = term_mask_targets(read_labelled(str(data / "train.jsonl")))
    kept = json.loads((tmp_path / "held" / "training.json").read_text())["term_mask_terms"]
    assert kept == len(masked_terms(terms, 0.5)) == sum(not held_out(t, 0.5) for t in terms.terms) < len(terms)


def test_tokenizer_keeps_bert_base_chinese_ids_and_reads_emoji_as_tokens():
    tokenizer = build_tokenizer()
    assert len(tokenizer) > 21128
    ids = tokenizer("黑🧜")["input_ids"]
    assert ids[:2] == [101, 7946] and ids[-1] == 102  # [CLS] 黑 ... [SEP] as in bert-base-chinese
    assert ids[2] >= 21128 and tokenizer.convert_ids_to_tokens(ids[2]) == "🧜"


def test_pool_frames_averages_in_time_and_caps_the_count():
    frames = np.arange(10, dtype=np.float32)[:, None].repeat(2, 1)
    pooled = pool_frames(frames, stride=4, max_tokens=8)
    assert pooled[:, 0].tolist() == [1.5, 5.5, 8.5]  # means of 0-3, 4-7, 8-9
    assert len(pool_frames(np.zeros((500, 2), np.float32), stride=4, max_tokens=8)) == 8


# ---- training on the tiny preset ----

def _groups_changed(before: dict, after: dict, modalities) -> set[str]:
    return {parameter_group(name, modalities) for name, tensor in after.items()
            if name in before and not torch.equal(tensor, before[name]) and not name.endswith("glyphs")}


@pytest.mark.slow
def test_each_stage_trains_only_its_parameters(run, stages):
    initial, _ = model_for_stage(1, run, None, seed=run["train"]["seed"])  # the trainer's initialisation, rebuilt
    models = {s: MMBertForSequenceClassification.from_pretrained(d) for s, d in stages.items()}
    modalities = initial.config.modalities
    before = initial.state_dict()
    assert _groups_changed(before, models[1].state_dict(), modalities) == {"aligners"}
    assert _groups_changed(models[1].state_dict(), models[2].state_dict(), modalities) == {
        "aligners", "expert_text", "expert_speech", "expert_vision", "head"}
    assert _groups_changed(models[2].state_dict(), models[3].state_dict(), modalities) == {
        "aligners", "expert_text", "expert_speech", "expert_vision", "head", "routers", "backbone"}
    assert [models[s].config.stage for s in (1, 2, 3)] == [1, 2, 3]
    # The glyph CNN trains in stage 1, then stays as the table of its features.
    assert [models[s].config.vision_encoder for s in (1, 2, 3)] == ["glyph-cnn", "table", "table"]
    assert models[1].config.vision_source is None
    assert models[3].config.vision_source == {"encoder": "glyph-cnn", "glyph_size": 16, "trained": True}
    ids = torch.arange(len(initial.mmbert.vision_encoder.glyphs))
    with torch.no_grad():
        cnn = models[1].mmbert.vision_encoder(ids)
    torch.testing.assert_close(models[2].mmbert.vision_encoder(ids), cnn)
    torch.testing.assert_close(models[3].mmbert.vision_encoder(ids), cnn)
    log = json.loads(open(os.path.join(stages[3], "log.json")).read())
    assert log[0]["epoch"] == 1 and 0 <= log[0]["dev_f1"] <= 1 and log[0]["train_aux_loss"] >= 1.0 - 1e-6
    assert not os.path.exists(os.path.join(stages[3], "checkpoint"))  # removed once the run is complete


@pytest.mark.slow
def test_fusion_trains_its_one_feed_forward_through_the_stages(run, data, tmp_path):
    from tests.conftest import train_stages

    dense = json.loads(json.dumps(run))
    dense["model"]["feed_forward"] = "dense"
    dirs = train_stages(dense, data, tmp_path)
    models = {s: MMBertForSequenceClassification.from_pretrained(d) for s, d in dirs.items()}
    modalities = models[1].config.modalities
    assert models[3].config.feed_forward == "dense" and models[3].config.modalities == ["text", "speech", "vision"]
    assert _groups_changed(models[1].state_dict(), models[2].state_dict(), modalities) == {
        "aligners", "expert_text", "head"}  # its one feed-forward, at the text expert's rate
    assert _groups_changed(models[2].state_dict(), models[3].state_dict(), modalities) == {
        "aligners", "expert_text", "head", "backbone"}
    assert not any(".router." in name for name in models[3].state_dict())
    log = json.loads(open(os.path.join(dirs[2], "log.json")).read())
    assert {"dev_f1_text", "dev_f1_speech", "dev_f1_vision"} <= set(log[0])


def test_stage3_may_route_a_mixture_by_modality_but_not_make_it_dense(run, data, stages, tmp_path):
    args = (str(data / "train.jsonl"), str(data / "dev.jsonl"))
    variant = json.loads(json.dumps(run))
    variant["model"].update(feed_forward="modality", aux_loss_weight=0.1)
    train_stage(3, variant, *args, str(tmp_path / "modality"), stages[2], progress=False)
    model = MMBertForSequenceClassification.from_pretrained(tmp_path / "modality")
    assert model.config.feed_forward == "modality" and model.config.aux_loss_weight == 0.1
    assert not any(".router." in name for name in model.state_dict())
    variant["model"]["feed_forward"] = "dense"
    with pytest.raises(StageError, match="cannot become 'dense'"):
        train_stage(3, variant, *args, str(tmp_path / "dense"), stages[2], progress=False)


@pytest.mark.slow
def test_stages_must_come_in_order(run, data, stages, tmp_path):
    args = (run, str(data / "train.jsonl"), str(data / "dev.jsonl"))
    with pytest.raises(StageError, match="--from"):
        train_stage(2, *args, str(tmp_path / "a"), None, progress=False)
    with pytest.raises(StageError, match="skip stage 2"):
        train_stage(3, *args, str(tmp_path / "b"), stages[1], progress=False)
    with pytest.raises(StageError, match="already finished stage 3"):
        train_stage(3, *args, str(tmp_path / "c"), stages[3], progress=False)
    # The ablation skips on purpose.
    result = train_stage(3, *args, str(tmp_path / "d"), stages[1], allow_skip=True, progress=False)
    assert result["best_epoch"] == 1


def test_a_later_stage_names_what_is_wrong_with_its_from_folder(run, tmp_path):
    with pytest.raises(StageError, match="--from .*nope: no such folder; stage 2 starts from the stage-1 model"):
        model_for_stage(2, run, str(tmp_path / "nope"))
    with pytest.raises(StageError, match="not an MMBERT model folder"):
        model_for_stage(3, run, str(tmp_path))


@pytest.mark.slow
def test_glyph_gradients_repeat_exactly_on_several_threads():
    """A seeded MMBERT training must repeat: spreading each distinct token's glyph features back over the
    batch by indexing (features[inverse]) accumulated its gradient in an order that varied with the CPU
    threads, and a retrained COLD MMBERT moved 0.011 in test macro-F1."""
    from mmbert.modeling import GlyphCNN

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        cnn = GlyphCNN(mm_config(BertModel(BertConfig(vocab_size=1000, hidden_size=32, num_hidden_layers=1,
                                                      num_attention_heads=4, intermediate_size=64))))
        cnn.glyphs.copy_(torch.randint(0, 256, cnn.glyphs.shape, dtype=torch.uint8))
        ids, upstream = torch.randint(0, 300, (32, 128)), torch.randn(32, 128, 8)  # many repeated tokens

        def gradients():
            cnn.zero_grad()
            (cnn(ids) * upstream).sum().backward()
            return [p.grad.clone() for p in cnn.parameters()]

        first = gradients()
        for _ in range(9):
            assert all(torch.equal(a, b) for a, b in zip(first, gradients()))
    finally:
        torch.set_num_threads(threads)


def test_saved_model_reloads_and_predicts_identically(stages, data, tmp_path):
    from mmbert.inference import infer

    records = read_jsonl(data / "dev.jsonl")
    model, featurizer = load_model(stages[3])
    first = infer(model, featurizer, records, routing=True)
    model.save_pretrained(tmp_path / "copy")
    featurizer.tokenizer.save_pretrained(tmp_path / "copy")
    again, featurizer2 = load_model(str(tmp_path / "copy"))
    second = infer(again, featurizer2, records, routing=True)
    np.testing.assert_array_equal(first["probs"], second["probs"])
    np.testing.assert_array_equal(first["routing"], second["routing"])
    assert first["routing"].shape == (len(records), 2, 3)


@pytest.mark.slow
@pytest.mark.parametrize("killed_at", [(1, 0), (1, 2)], ids=["after-epoch-1", "mid-epoch-2"])
def test_an_interrupted_run_resumes_to_the_same_model(run, data, stages, tmp_path, killed_at):
    run = json.loads(json.dumps(run))
    run["train"]["stage3"].update(epochs=3)
    run["train"]["patience"] = 10
    run["train"]["checkpoint_minutes"] = 0  # a checkpoint after every batch
    args = (run, str(data / "train.jsonl"), str(data / "dev.jsonl"))
    whole = tmp_path / "whole"
    train_stage(3, *args, str(whole), stages[2], progress=False)

    def interrupt(state):
        if (state["epoch"], state["step"]) == killed_at:
            raise KeyboardInterrupt

    cut = tmp_path / "cut"
    with pytest.raises(KeyboardInterrupt):
        train_stage(3, *args, str(cut), stages[2], progress=False, on_checkpoint=interrupt)
    saved = json.loads((cut / "checkpoint" / "trainer_state.json").read_text())
    assert (saved["epoch"], saved["step"]) == killed_at
    train_stage(3, *args, str(cut), stages[2], resume=True, progress=False)
    a = MMBertForSequenceClassification.from_pretrained(whole).state_dict()
    b = MMBertForSequenceClassification.from_pretrained(cut).state_dict()
    for name in a:
        torch.testing.assert_close(a[name], b[name], msg=name)
    logs = [[{k: v for k, v in e.items() if k != "seconds"} for e in json.loads((d / "log.json").read_text())]
            for d in (whole, cut)]
    assert logs[0] == logs[1] and len(logs[0]) == 3  # losses, dev figures, learning rates


@pytest.mark.slow
def test_an_interrupted_stage_says_what_it_kept_and_where(run, data, tmp_path, monkeypatch):
    """Ctrl-C in `mmbert train` said "the last checkpoint is kept in OUT/checkpoint": a placeholder, and before the
    first checkpoint a folder that did not exist."""
    from click.testing import CliRunner

    from mmbert.checkpoint import Checkpointer
    from mmbert.cli import main

    config = tmp_path / "run.yaml"  # JSON is YAML
    config.write_text(json.dumps({**run, "train": {**run["train"], "checkpoint_minutes": 0}}), encoding="utf-8")
    out = tmp_path / "s1"
    args = ["train", "--stage", "1", "--config", str(config), "--train", str(data / "train.jsonl"), "--dev",
            str(data / "dev.jsonl"), "--out", str(out), "-q"]
    real = Checkpointer.save

    def stop(self, state, save=False):
        if save:
            real(self, state)
        raise KeyboardInterrupt

    monkeypatch.setattr(Checkpointer, "save", stop)  # Ctrl-C before the first checkpoint is written
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.stderr) == (130, f"mmbert: interrupted; no checkpoint was kept in {out}, nothing "
                                                      "to resume from: rerun the same command to start over\n")
    monkeypatch.setattr(Checkpointer, "save", lambda self, state: stop(self, state, save=True))  # right after it
    result = CliRunner().invoke(main, args)
    assert (result.exit_code, result.stderr) == (130, "mmbert: interrupted; the last checkpoint (epoch 1, after batch "
                                                      f"1) is kept in {out / 'checkpoint'}: rerun with --resume to "
                                                      "continue\n")


@pytest.mark.parametrize("left", ["beside the new one", "alone"])
def test_a_kill_inside_the_checkpoint_swap_loses_nothing_and_blocks_no_later_save(tmp_path, left):
    _, checkpointer = start_run(str(tmp_path), seed=0, resume=False)
    checkpointer.save({"epoch": 1, "step": 0})
    # save() moves the previous checkpoint to checkpoint.old, swaps the new one in, then drops the old one:
    # a kill between those steps leaves checkpoint.old beside the new checkpoint, or alone
    shutil.copytree(tmp_path / "checkpoint", tmp_path / "checkpoint.old")
    if left == "alone":
        shutil.rmtree(tmp_path / "checkpoint")
    _, checkpointer = start_run(str(tmp_path), seed=0, resume=True)
    assert checkpointer.load()["epoch"] == 1
    checkpointer.save({"epoch": 2, "step": 0})
    assert checkpointer.load()["epoch"] == 2
    assert not (tmp_path / "checkpoint.old").exists()


def run_mmbert(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmbert.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.slow
def test_cli_evaluate_predict_routing(stages, data, tmp_path):
    dev = data / "dev.jsonl"
    result = run_mmbert("evaluate", "--model", stages[3], "--data", dev, "--out", tmp_path / "eval.json", "-q")
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "eval.json").read_text())
    assert figures["overall"]["n"] == 16 and {"clean", "homophone"} <= set(figures["by_op"])
    assert "macro-F1" in result.stderr

    result = run_mmbert("predict", "--model", stages[3], "--in", dev, "--out", tmp_path / "p.jsonl", "-q")
    assert result.returncode == 0, result.stderr
    scored = read_jsonl(tmp_path / "p.jsonl")
    assert len(scored) == 16 and scored[0]["text"] == read_jsonl(dev)[0]["text"]
    assert sum(scored[0]["mmbert"]["probs"]) == pytest.approx(1.0, abs=1e-5)
    assert np.array(scored[0]["mmbert"]["routing"]).shape == (2, 3)

    result = run_mmbert("routing", "--model", stages[3], "--data", dev, "--out", tmp_path / "routing", "-q")
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "routing" / "routing.json").read_text())
    assert table["experts"] == ["text", "speech", "vision"] and table["groups"]["all"]["n"] == 16
    assert (tmp_path / "routing" / "routing.png").read_bytes()[:4] == b"\x89PNG"
    # Xue et al.'s Fig. 3 is the mean over all tokens; the predictions' routing is the same mean
    assert table["groups"]["all"]["weights"] == pytest.approx(
        np.mean([r["mmbert"]["routing"] for r in scored], 0), abs=2e-4)
    tokens = table["tokens"]
    assert tokens["clean"]["text_edited"] == {"n": 0, "weights": None}
    assert tokens["homophone"]["text_edited"]["n"] == tokens["homophone"]["vision_edited"]["n"] > 0
    assert tokens["all"]["speech"]["n"] == 16


def test_token_kinds_put_the_edited_flags_on_the_text_and_glyph_tokens_of_each_post():
    from types import SimpleNamespace

    from mmbert.modeling import SPEECH, TEXT, VISION
    from mmbert.routing import TOKEN_KINDS, kind_masks

    # two posts, text width 3 (the second has 2 real tokens), speech width 2 (the first has 1)
    types = torch.tensor([TEXT] * 3 + [SPEECH] * 2 + [VISION] * 3).expand(2, 8)
    real = torch.tensor([[1, 1, 1, 1, 0, 1, 1, 1], [1, 1, 0, 1, 1, 1, 1, 0]])
    edited = torch.tensor([[False, True, False], [False, True, True]])  # the pad position flagged too
    masks = kind_masks(SimpleNamespace(attention_mask=real, token_types=types), edited)
    by_kind = dict(zip(TOKEN_KINDS, masks.transpose(0, 1).long().tolist()))
    assert by_kind["all"] == real.tolist()
    assert by_kind["speech"] == [[0, 0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 1, 0, 0, 0]]
    assert by_kind["text_edited"] == [[0, 1, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0]]
    assert by_kind["vision_edited"] == [[0, 0, 0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 0, 1, 0]]


def test_edited_positions_are_the_tokens_covering_what_a_cloak_wrote(stages):
    from mmbert.data import Featurizer
    from mmbert.loading import load_tokenizer
    from mmbert.routing import edited_positions

    featurizer = Featurizer(load_tokenizer(stages[3]))
    record = {"text": "我abc你", "cloak": {"edits": [{"op": "pinyin", "start": 1, "end": 2, "src": "爱", "dst": "abc"},
                                                    {"op": "drop", "start": 3, "end": 4, "src": "了", "dst": ""}]}}
    spans = featurizer.token_spans([record["text"]])[0]
    flags = edited_positions(featurizer, [record, {"text": "我爱你"}])
    assert flags[1] == [False] * len(featurizer.token_spans(["我爱你"])[0])
    assert [span for span, flag in zip(spans, flags[0]) if flag] == [s for s in spans if s and 1 <= s[0] < 4] != []
    assert (4, 5) in spans  # 你, left as it was


def test_length_grouped_batches_cover_every_example_once_with_little_padding():
    from mmbert.loop import LengthGroupedBatches

    lengths = np.random.default_rng(0).integers(4, 128, 1000).tolist()
    sampler = LengthGroupedBatches(lengths, 32, seed=7)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 32 and [len(b) for b in batches].count(32) == 31
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert batches == list(sampler)  # a resumed epoch sees the same batches
    assert batches != list(LengthGroupedBatches(lengths, 32, seed=8))
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    shuffled = np.random.default_rng(1).permutation(1000)
    padded_at_random = sum(32 * max(lengths[i] for i in shuffled[s:s + 32]) for s in range(0, 1000, 32))
    assert padded < 0.6 * padded_at_random


@pytest.mark.slow
def test_cli_train_and_pretrain(run, data, tmp_path, tiny_whisper):
    common = ["--config", "tiny", "--train", data / "train.jsonl", "--dev", data / "dev.jsonl",
              "--whisper", tiny_whisper, "--speech-cache", tmp_path / "speech", "-q"]
    result = run_mmbert("pretrain", "--corpus", data / "train.jsonl", "--config", "tiny", "--out", tmp_path / "bert",
                        "-q")
    assert result.returncode == 0, result.stderr
    # One line: no library's load report or warning about the tied masked-LM weights it saved once.
    assert result.stderr.startswith("pretrain: 1 epoch,") and result.stderr.count("\n") == 1, result.stderr
    assert json.loads((tmp_path / "bert" / "config.json").read_text())["model_type"] == "bert"
    result = run_mmbert("train", "--stage", "1", *common, "--out", tmp_path / "s1", "--from", tmp_path / "bert")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("stage 1: best epoch 1") and result.stderr.count("\n") == 1, result.stderr
    model = MMBertForSequenceClassification.from_pretrained(tmp_path / "s1")
    from transformers import BertForMaskedLM

    bert = BertForMaskedLM.from_pretrained(tmp_path / "bert")
    torch.testing.assert_close(model.mmbert.layers[0].moe.experts[2].up.weight,  # upcycled from the BERT
                               bert.bert.encoder.layer[0].intermediate.dense.weight)

    result = run_mmbert("train", "--stage", "2", *common, "--out", tmp_path / "s2")
    assert result.returncode == 1 and "pass --from DIR" in result.stderr


@pytest.mark.slow
def test_cli_names_the_bad_line(tmp_path, data):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "你好", "label": 1}\n{"text": "再见"}\n', encoding="utf-8")
    result = run_mmbert("train", "--stage", "1", "--config", "tiny", "--train", bad, "--dev", data / "dev.jsonl",
                        "--out", tmp_path / "o", "-q")
    assert result.returncode == 1
    assert f"{bad}, line 2: field 'label'" in result.stderr
    result = run_mmbert("evaluate", "--model", tmp_path, "--data", bad)
    assert result.returncode == 1 and "not an MMBERT model folder" in result.stderr


def test_the_fresh_glyph_cnn_tells_glyphs_apart():
    """With BERT's N(0, 0.02) init on its convolutions, glyph features were ~10^-4 in scale: next to
    the embeddings, every glyph was the same vector."""
    from mmbert.modeling import GlyphCNN
    from mmbert.vision import glyph_images

    bert = tiny_bert()
    chars = list("黑人白猪狗同性恋默犬拜仁女权")
    model = MMBertForSequenceClassification(mm_config(bert)).eval()  # 16 px glyphs, 8-d features
    cnn = model.mmbert.vision_encoder
    assert isinstance(cnn, GlyphCNN)
    cnn.glyphs[5:5 + len(chars)] = torch.from_numpy(glyph_images(chars, 16))
    with torch.no_grad():
        features = cnn(torch.arange(5, 5 + len(chars)))
    # Spread across glyphs, per feature (it was 5e-5: far below the embeddings it is added to).
    assert features.std(0).mean() > 0.05


def test_a_clip_table_holds_one_feature_row_per_vocabulary_entry(tmp_path):
    """The ``table`` vision encoder: CLIP image features of each token's glyph, computed once."""
    from transformers import ChineseCLIPConfig, ChineseCLIPModel

    from mmbert.vision import TransformersCLIP, vision_table

    torch.manual_seed(0)
    clip_config = ChineseCLIPConfig(
        text_config={"vocab_size": 100, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                     "intermediate_size": 32},
        vision_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "intermediate_size": 32, "image_size": 32, "patch_size": 16},
        projection_dim=8)
    ChineseCLIPModel(clip_config).save_pretrained(tmp_path / "clip")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "黑", "人", "##人", "默"]
    table = vision_table(vocab, TransformersCLIP(str(tmp_path / "clip")))
    assert table.shape == (9, 8)
    assert not table[:5].any() and table[5:].abs().sum(1).min() > 0  # special tokens have no picture
    torch.testing.assert_close(table[6], table[7])  # 人 and ##人 look the same
    assert not torch.equal(table[5], table[8])


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_padding_does_not_change_the_prediction(pooling):
    bert = tiny_bert()
    model = MMBertForSequenceClassification(mm_config(bert, pooling=pooling)).eval()
    ids = torch.randint(5, 120, (1, 6))
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)
    mask = torch.cat([torch.ones(1, 6), torch.zeros(1, 3)], 1).long()
    speech = torch.randn(1, 4, 16)
    speech_padded = torch.cat([speech, torch.zeros(1, 2, 16)], 1)
    speech_mask = torch.tensor([[1, 1, 1, 1, 0, 0]])
    plain = model(ids, speech_features=speech).logits
    with_padding = model(padded, mask, speech_features=speech_padded, speech_mask=speech_mask).logits
    torch.testing.assert_close(plain, with_padding, atol=1e-5, rtol=1e-4)


@pytest.mark.slow
def test_evaluate_reads_posts_of_any_length_as_training_cut_them(stages, data, sample_path, tmp_path):
    """The tiny model has 64 positions and trained on posts cut to 32 tokens; inference used to cut
    at 128 and crash (IndexError) on any post longer than the position table."""
    from mmbert.inference import evaluate_records

    model, featurizer = load_model(stages[3])
    assert featurizer.max_length == 32 == featurizer.tokenizer.model_max_length  # saved with the model
    records = sorted(read_jsonl(sample_path), key=lambda r: -len(r["text"]))[:6]  # 80-128 characters
    records.append({"text": "黑人都是垃圾，" * 150_000, "label": 1})  # about 1 MB
    assert len(records[0]["text"]) > 100
    result = evaluate_records(model, featurizer, records)
    assert result["overall"]["n"] == 7
    # A huge post is not tokenised whole, yet gives the tokens it would have given.
    tokenizer = featurizer.tokenizer
    for text in (records[-1]["text"], ("hello " * 20 + "a" * 150 + " ") * 5000, "x" * 99 + " " + "yes" * 2000):
        assert featurizer._ids([text]) == tokenizer([text], truncation=True, max_length=32)["input_ids"]
    # Speech is made for what the tokens cover, not the whole post.
    assert featurizer.read_part(records[-1]["text"]) == "黑人都是垃圾，" * 4 + "黑人"
    spoken = featurizer.tokenizer.tokenize(featurizer.read_part(records[0]["text"]))
    assert len(spoken) <= 30 < len(featurizer.tokenizer.tokenize(records[0]["text"]))


@pytest.mark.parametrize("yaml_text, message", [
    ("train: [1, 2]", "train must be a mapping of parameters, got [1, 2]"),
    ("train: {batch_size: 0}", "train: 'batch_size' must be an integer >= 1, got 0"),
    ("model: {hidden_sise: 12}", "model: unknown parameter 'hidden_sise'; did you mean 'hidden_size'?"),
    ("train: {bach_size: 4}", "train: unknown parameter 'bach_size'; did you mean 'batch_size'?"),
    ("train: {stage3: {epoch: 10}}", "train.stage3: unknown parameter 'epoch'; did you mean 'epochs'?"),
    ("preset: smal", "unknown preset 'smal'; did you mean 'small'?"),
    ("features: {tts: {name: kokoro_onnx}}",
     "features.tts: 'name' must be one of 'tone', 'kokoro-onnx', 'kokoro', 'espeak-ng'"),
    ("train: {stage3: {lr_overrides: {router: 0.1}}}", "unknown parameter 'router'; did you mean 'routers'?"),
    ("model: {modalities: [speech]}", "'modalities' must be a list of 'text', 'speech', 'vision' that includes"),
    ("train: {stage1: {lr: -1}}", "train.stage1: 'lr' must be a number > 0, got -1"),
    ("features: {vision: {encoder: openclip}}", "features.vision: 'encoder' must be one of 'glyph-cnn', "
                                                "'transformers', 'open_clip', got 'openclip'"),
    ("features: {vision: {encoder: open_clip}}", "features.vision: encoder open_clip needs 'model'"),
    ("features: {vision: {encoder: glyph-cnn, model: ViT-B-32}}",
     "features.vision: encoder glyph-cnn takes no 'model' (it is trained here)"),
    ("features: {clip: OFA-Sys/chinese-clip-vit-base-patch16}", "features: unknown parameter 'clip'"),
])
def test_run_configs_are_checked_against_one_declaration(tmp_path, yaml_text, message):
    path = tmp_path / "run.yaml"
    path.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load_run_config(str(path))
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


def test_vision_encoders_of_the_run_config_are_the_registered_ones():
    """The run config names them without importing torch; the registry has the classes."""
    from mmbert.presets import VISION_FEATURE_ENCODERS
    from mmbert.vision import FROZEN_ENCODERS

    assert set(VISION_FEATURE_ENCODERS) == {"glyph-cnn", *FROZEN_ENCODERS}


@pytest.mark.parametrize("spec, vision", [
    ("glyph-cnn", {"encoder": "glyph-cnn"}),
    ("open_clip:model=ViT-B-32:pretrained=laion2b_s34b_b79k",
     {"encoder": "open_clip", "model": "ViT-B-32", "pretrained": "laion2b_s34b_b79k"}),
    ("open_clip:model=hf-hub:timm/ViT-B-16-SigLIP", {"encoder": "open_clip", "model": "hf-hub:timm/ViT-B-16-SigLIP"}),
    ("transformers:model=/models/chinese-clip", {"encoder": "transformers", "model": "/models/chinese-clip"}),
])
def test_the_vision_flag_reads_as_the_run_configs_section(spec, vision):
    from mmbert.presets import parse_vision

    assert parse_vision(spec) == vision


def test_a_presets_vision_encoder_is_replaced_whole():
    run = load_run_config({"preset": "paper", "features": {"vision": {"encoder": "glyph-cnn"}}})
    assert run["features"]["vision"] == {"encoder": "glyph-cnn"}  # not Xue et al.'s CLIP model with it


def test_yaml_numbers_and_a_hand_made_config_are_checked_too(tmp_path, run, data):
    path = tmp_path / "run.yaml"
    path.write_text("preset: tiny\ntrain: {stage1: {lr: 1e-3}}\n", encoding="utf-8")  # YAML reads 1e-3 as a string
    assert load_run_config(str(path))["train"]["stage1"]["lr"] == 0.001
    path.write_text("preset: tiny\nfeatures: {tts: {name: espeak-ng}}\n", encoding="utf-8")  # every speech backend
    assert load_run_config(str(path))["features"]["tts"] == {"name": "espeak-ng"}
    bad = json.loads(json.dumps(run))
    bad["train"]["batch_size"] = 0
    with pytest.raises(ValueError, match="'batch_size' must be an integer >= 1"):
        train_stage(1, bad, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(tmp_path / "out"))
    del bad["train"]["batch_size"]
    with pytest.raises(ValueError, match="'train.batch_size' is missing"):
        train_stage(1, bad, str(data / "train.jsonl"), str(data / "dev.jsonl"), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_commands_check_their_input_before_loading_anything(tmp_path):
    """`mmbert --help`, and a command whose input is missing, answer without importing torch,
    transformers or numpy (a missing file took 58 s to report: Whisper and the model loaded first)."""
    for args in (["--help"], ["evaluate", "--help"],
                 ["train", "--stage", "1", "--train", str(tmp_path / "missing.jsonl"), "--dev", "x", "--out", "o"]):
        code, imported, stderr = cli_in_fresh_python("mmbert.cli", args, ("torch", "transformers", "numpy"))
        assert imported == [False, False, False], (args, imported)
    assert code == 1 and "input file not found" in stderr


@pytest.mark.slow
def test_speech_in_worker_processes_gives_the_features_of_one_process_and_fills_the_cache(run, tmp_path):
    """A fresh run's speech step (11,823 texts, about half an hour on 2 cores) split between processes: the
    same features as in one process, and cached for the training that follows."""
    from mmbert.loading import speech_features
    from mmbert.speech_features import SpeechFeatures
    from speech import make_backend

    texts = ["白人都是垃圾", "今天天气很好", "拜仁都是辣鸡", "txl滚出去", "🐶东西", "黑犬不说话"]
    alone, shared = ({**run["features"], "speech_cache": str(tmp_path / name)} for name in ("alone", "shared"))
    expected = speech_features(alone).features(texts, batch_size=2, progress=False)
    got = speech_features(shared).features(texts, batch_size=2, progress=False, workers=2)
    assert len(got) == len(texts)
    for a, b in zip(expected, got):
        np.testing.assert_allclose(a.astype(np.float32), b.astype(np.float32), atol=2e-3)
    reread = speech_features(shared)
    again = reread.features(texts, progress=False)
    assert all(np.array_equal(a, b) for a, b in zip(again, got))
    assert (reread.audio.hits, reread.audio.misses, reread.frames.misses) == (len(texts), 0, 0)
    loaded = SpeechFeatures(tmp_path / "loaded", make_backend("tone"), reread.encoder)
    with pytest.raises(ValueError, match="settings"):
        loaded.features(texts, batch_size=2, workers=2)


def test_the_speech_phase_counts_posts_and_caches_in_the_user_cache_folder(run, tmp_path, monkeypatch, capsys):
    """mmbert train spent 9 silent minutes speaking 2,000 posts into ./speech (2.1 GB): the phase draws a bar
    that counts posts, and with no speech cache given it caches under $MMCLOAK_CACHE, not the current folder."""
    from mmbert.loading import speech_features

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("MMCLOAK_CACHE", str(tmp_path / "cache"))
    features = {k: v for k, v in run["features"].items() if k != "speech_cache"}
    speech_features(features).features(["白人都是垃圾", "今天天气很好", "白人都是垃圾"], progress=True)
    err = capsys.readouterr().err
    assert "speech (TTS + Whisper)" in err and " 0/2 " in err and "post/s" in err, err  # two distinct posts
    assert any((tmp_path / "cache" / "speech" / "audio").rglob("*.*")) and not any(work.iterdir())
