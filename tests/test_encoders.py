"""Any Hugging Face encoder under the transformer detectors and MMBERT: an XLM-R (SentencePiece)
tokenizer whose pieces may be several characters, as multilingual-e5-small's, on a BERT without a
pooler (e5's make) and on an XLM-R model (positions numbered from 2, with a pooler)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attacks import load_victim, make_victim  # noqa: E402
from mmbert.tokenization import backbone_tokenizer, emoji_tokens, piece_texts  # noqa: E402

from .conftest import read_jsonl  # noqa: E402
from .test_victims import check_differentiable  # noqa: E402

CHINESEBERT = {"glyph_size": 16, "glyph_dim": 16, "pinyin_dim": 8}


@pytest.fixture(scope="module")
def posts(sample_path):
    rows = read_jsonl(sample_path)
    return rows[:160], rows[160:220], rows[220:]


def texts(rows):
    return [r["text"] for r in rows]


def several_characters(tokenizer) -> tuple[int, str]:
    """A piece of the vocabulary that is two Chinese characters, and its id."""
    return next((i, p) for i, p in enumerate(piece_texts(tokenizer))
                if len(p) == 2 and all("\u4e00" <= c <= "\u9fff" for c in p))


def test_a_backbone_tokenizer_keeps_emoji_whole_and_says_what_each_piece_stands_for(xlmr_backbones, tmp_path):
    from mmbert.tokenization import add_emoji, load_tokenizer

    tokenizer = backbone_tokenizer(xlmr_backbones["e5"])
    assert len(tokenizer) > 2001  # the posts' 2,001 pieces have no emoji: every one is added
    for e in emoji_tokens():  # one token covering the emoji, inside a post as alone
        found = tokenizer(f"黑{e}人", add_special_tokens=False, return_offsets_mapping=True)
        covering = [(i, span) for i, span in zip(found["input_ids"], found["offset_mapping"])
                    if span[0] < 1 + len(e) and span[1] > 1]
        assert len(covering) == 1 and covering[0][1] == (1, 1 + len(e)), e
        assert covering[0][0] != tokenizer.unk_token_id
    tokenizer.save_pretrained(tmp_path)
    again = load_tokenizer(str(tmp_path))
    assert len(again) == len(tokenizer) and add_emoji(again) == 0  # saved whole: no id moves
    pieces = piece_texts(tokenizer)
    assert [pieces[i] for i in tokenizer.all_special_ids] == [""] * len(tokenizer.all_special_ids)
    assert pieces[tokenizer.convert_tokens_to_ids("▁")] == ""  # a word boundary: nothing to draw or read
    i, piece = several_characters(tokenizer)
    assert tokenizer.convert_ids_to_tokens(i).lstrip("▁") == piece


def test_a_piece_of_several_characters_is_drawn_whole_and_read_as_its_characters(xlmr_backbones):
    from attacks.victims.chinesebert import PINYIN_ALPHABET, PINYIN_LETTERS, pinyin_table
    from mmbert.vision import glyph_images
    from render import GlyphRenderer

    table = pinyin_table(["都是", "银行", "人", "hello", "", "A股"])
    assert table.shape == (6, 2 * PINYIN_LETTERS) and table.dtype == torch.uint8

    def read(row):
        return ["".join(PINYIN_ALPHABET[k] for k in row[s:s + PINYIN_LETTERS] if k) for s in (0, PINYIN_LETTERS)]

    assert [read(r) for r in table.tolist()] == [["dou1", "shi4"], ["yin2", "hang2"], ["ren2", ""], ["", ""],
                                                 ["", ""], ["gu3", ""]]
    images = glyph_images(["都是", "都"], 24)
    np.testing.assert_array_equal(images[0], 255 - GlyphRenderer(size=24).render("都是"))
    assert (images[0] != images[1]).any()


@pytest.mark.slow
@pytest.mark.parametrize("name,encoder", [("bert", "e5"), ("bert", "xlm-roberta"), ("chinesebert", "e5")])
def test_victims_on_an_xlmr_tokenizer_train_save_reload_and_differentiate(name, encoder, xlmr_backbones, posts,
                                                                         tmp_path):
    train, dev, test = posts
    victim = make_victim(name, {"backbone": xlmr_backbones[encoder], "max_length": 48,
                                **(CHINESEBERT if name == "chinesebert" else {})},
                         {"epochs": 1, "lr": 1e-3, "batch_size": 16})
    victim.fit(train[:96], dev, out_dir=str(tmp_path), progress=False)
    probs = victim.predict_proba(texts(test))
    assert probs.shape == (len(test), 2) and np.allclose(probs.sum(1), 1)
    again = load_victim(str(tmp_path))
    np.testing.assert_array_equal(again.predict_proba(texts(test)), probs)
    check_differentiable(again, texts(test)[:4])
    mixed = [texts(test)[0][:3], texts(test)[1] * 3, "黑🧑‍🦰人都是垃圾", texts(test)[0][:3]]  # batched by length
    np.testing.assert_allclose(again.predict_proba(mixed),
                               np.concatenate([again.predict_proba([t]) for t in mixed]), atol=1e-6)
    assert again.predict_proba(["黑人都是垃圾，" * 50_000, "短"]).shape == (2, 2)  # head and tail kept
    tokens = again.encode(["黑人都是垃圾，" * 50])[0]
    assert len(tokens) == 48 and tokens[0][0] == again.tokenizer_.cls_token_id  # <s> ... </s>
    pooler = [k for k in again.model_.state_dict() if k.startswith("bert.pooler.")]
    assert bool(pooler) == (encoder == "xlm-roberta")  # e5 has no pooler: the head reads <s> itself
    if name == "chinesebert":
        i, piece = several_characters(again.tokenizer_)
        np.testing.assert_array_equal(again.model_.glyphs[i].numpy(), 255 - _render(piece, 16))
        assert again.model_.pinyin[i, 8:].any()  # the second character's reading


def _render(token: str, size: int) -> np.ndarray:
    from render import GlyphRenderer

    return GlyphRenderer(size=size).render(token)


@pytest.mark.slow
@pytest.mark.parametrize("regularizer", ["ear", "klar"])
def test_a_gattention_chinesebert_trains_with_a_regularizer_on_an_xlmr_tokenizer(regularizer, xlmr_backbones, posts,
                                                                                tmp_path):
    train, dev, _ = posts
    victim = make_victim("chinesebert", {"backbone": xlmr_backbones["e5"], "max_length": 48, "head": "gattention",
                                         "backbone_layers": 1, **CHINESEBERT},
                         {"epochs": 1, "lr": 1e-3, "batch_size": 16, "regularizer": regularizer})
    victim.fit(train[:64], dev, out_dir=str(tmp_path), progress=False)
    assert np.isfinite(victim.log_["log"][0]["train_loss"])
    inputs = victim.training_batch(train[:8])
    if regularizer == "klar":  # lexicon terms found through the pieces' character spans
        assert inputs["relevant"].any()
    _, attentions = victim.model_attentions(victim.model_, victim.embed_batch(victim.model_, inputs))
    assert len(attentions) == 1  # the backbone's first layer only
    again = load_victim(str(tmp_path))
    assert len(again.model_.bert.encoder.layer) == 1 and again.config.backbone_layers == 1
    np.testing.assert_array_equal(again.predict_proba(texts(dev)), victim.predict_proba(texts(dev)))
    gates = again.gates(texts(dev)[:2])
    assert gates[0][0]["token"] == "<s>" and gates[0][-1]["token"] == "</s>"


def test_too_many_backbone_layers_is_refused(xlmr_backbones, posts):
    with pytest.raises(ValueError, match="backbone_layers is 5, but .* has only 2 layers"):
        make_victim("bert", {"backbone": xlmr_backbones["e5"], "backbone_layers": 5}).fit(*posts[:2])


@pytest.mark.slow
def test_mmbert_trains_its_three_stages_on_an_xlmr_tokenizer(xlmr_backbones, run, data, tmp_path):
    from mmbert.inference import infer
    from mmbert.loading import load_model
    from mmbert.train import train_stage

    config = copy.deepcopy(run)
    config["model"].update(backbone=xlmr_backbones["e5"], backbone_layers=1)
    previous = None
    for stage in (1, 2, 3):
        out = str(tmp_path / f"s{stage}")
        train_stage(stage, config, str(data / "train.jsonl"), str(data / "dev.jsonl"), out, previous, progress=False)
        if stage == 1:  # the glyph CNN's images: one a piece, a piece of several characters drawn whole
            model, featurizer = load_model(out)
            i, piece = several_characters(featurizer.tokenizer)
            np.testing.assert_array_equal(model.mmbert.vision_encoder.glyphs[i].numpy(),
                                          255 - _render(piece, model.config.glyph_size))
        previous = out
    model, featurizer = load_model(previous)
    assert model.config.stage == 3 and len(model.mmbert.layers) == 1
    rows = read_jsonl(data / "dev.jsonl")
    assert featurizer.encode(rows[:1])[0]["input_ids"][0] == featurizer.tokenizer.cls_token_id  # <s>
    probs = infer(model, featurizer, rows)["probs"]
    assert probs.shape == (len(rows), 2) and np.allclose(probs.sum(1), 1)
    long_post = [{"text": "黑人都是垃圾，" * 100}]  # cut to max_length, inside the position table
    assert infer(model, featurizer, long_post)["probs"].shape == (1, 2)
