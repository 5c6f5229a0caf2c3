"""MMBERT's vision table from an open_clip image encoder.

A tiny ViT (one layer, 32 px images) is registered here with random weights saved to a file, or laid
out as an open_clip ``local-dir:`` folder with its own preprocessing: no download, as on a machine
without a model hub. ``make test-all`` runs this file in ``.venv-open-clip``, the venv that has open_clip.
"""
import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

if importlib.util.find_spec("open_clip") is None:
    pytest.skip("open_clip_torch is not installed (pip install 'mmcloak[open-clip]'; make test-all runs this file "
                "in .venv-open-clip)", allow_module_level=True)

import open_clip  # noqa: E402
import torch  # noqa: E402

from mmbert import MMBertForSequenceClassification  # noqa: E402
from mmbert.loading import load_model  # noqa: E402
from mmbert.presets import load_run_config  # noqa: E402
from mmbert.loading import load_tokenizer  # noqa: E402
from mmbert.tokenization import build_tokenizer, piece_texts  # noqa: E402
from mmbert.vision import OpenCLIP, vision_table  # noqa: E402

from .conftest import ROOT, cli_in_fresh_python, read_jsonl, train_stages  # noqa: E402

TINY = "mmcloak-tiny-vit"
TINY_CONFIG = {"embed_dim": 16,
               "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
               "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 1, "layers": 1}}


@pytest.fixture(scope="module")
def tiny_vit(tmp_path_factory) -> tuple[str, str]:
    """(model name, checkpoint file): the tiny ViT registered with open_clip, its random weights saved."""
    folder = tmp_path_factory.mktemp("open_clip")
    (folder / f"{TINY}.json").write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(folder / f"{TINY}.json")
    torch.manual_seed(0)
    model = open_clip.create_model(TINY)
    torch.save(model.state_dict(), folder / "tiny.pt")
    return TINY, str(folder / "tiny.pt")


@pytest.fixture(scope="module")
def tiny_vit_dir(tiny_vit, tmp_path_factory) -> str:
    """The same weights as an open_clip ``local-dir:`` folder whose preprocessing is SigLIP's (mean and
    std 0.5), not OpenAI CLIP's: nothing registered, so another process can load it too."""
    folder = tmp_path_factory.mktemp("open_clip_dir")
    (folder / "open_clip_config.json").write_text(json.dumps(
        {"model_cfg": TINY_CONFIG, "preprocess_cfg": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}}))
    (folder / "open_clip_pytorch_model.bin").write_bytes(open(tiny_vit[1], "rb").read())
    return str(folder)


def test_the_table_has_one_row_per_vocabulary_entry_from_the_models_own_transform(tiny_vit_dir):
    from render import GlyphRenderer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "黑", "人", "##人", "默", "🐶"]
    encoder = OpenCLIP(f"local-dir:{tiny_vit_dir}")
    table = vision_table(vocab, encoder)
    assert table.shape == (10, 16)
    assert not table[:5].any() and table[5:].abs().sum(1).min() > 0  # special tokens have no picture
    torch.testing.assert_close(table[6], table[7])  # 人 and ##人 look the same
    assert not torch.equal(table[5], table[8])
    # The folder's own mean and std (0.5), not OpenAI CLIP's that a hand-written transform would use.
    image = torch.from_numpy(GlyphRenderer(size=32, mode="RGB").render("黑").copy()).float().div(255)
    pixels = ((image.permute(2, 0, 1) - 0.5) / 0.5)[None]
    with torch.no_grad():
        torch.testing.assert_close(table[5], encoder.model.encode_image(pixels)[0], atol=1e-5, rtol=1e-4)
    assert encoder.source["preprocess"]["mean"] == [0.5, 0.5, 0.5]


def test_a_wrong_model_name_fails_in_one_line_with_open_clips_names(tiny_vit):
    with pytest.raises(ValueError) as info:
        OpenCLIP("ViT-B-99")
    message = str(info.value)
    assert "\n" not in message and message.startswith("open_clip has no model 'ViT-B-99'")
    assert "did you mean 'ViT-B-32'?" in message
    assert all(name in message for name in ("ViT-B-32", "RN50", TINY))  # its list, registered ones included
    with pytest.raises(ValueError, match="not a known tag or valid file path.*its tags: .*laion2b_s34b_b79k"):
        OpenCLIP("ViT-B-32", "/no/such/weights.pt")


@pytest.fixture(scope="module")
def posts_backbone(data, tmp_path_factory) -> str:
    """A tiny random BERT folder whose vocabulary is the characters of the test posts and their ##
    pieces: a vision table of a few hundred glyphs, not bert-base-chinese's 23,045 (30 s each here)."""
    from transformers import BertConfig, BertModel

    texts = [r["text"] for name in ("train", "dev") for r in read_jsonl(data / f"{name}.jsonl")]
    chars = sorted({c for text in texts for c in text if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *(f"##{c}" for c in chars)]
    tokenizer = build_tokenizer({t: i for i, t in enumerate(vocab)}, add_emoji=False)
    folder = tmp_path_factory.mktemp("posts_backbone")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def open_clip_run(tiny_vit, tmp_path_factory) -> dict:
    """The tiny preset, text + vision, the vision table from the tiny ViT's saved weights."""
    name, weights = tiny_vit
    run = load_run_config({"preset": "tiny", "model": {"modalities": ["text", "vision"]},
                           "features": {"vision": {"encoder": "open_clip", "model": name, "pretrained": weights},
                                        "speech_cache": str(tmp_path_factory.mktemp("speech"))}})
    run["train"]["stage2"]["head_warmup_epochs"] = 0
    for stage in ("stage1", "stage2", "stage3"):
        run["train"][stage]["epochs"] = 1
    return run


@pytest.fixture(scope="module")
def open_clip_stages(open_clip_run, data, posts_backbone, tmp_path_factory) -> dict[int, str]:
    return train_stages(open_clip_run, data, tmp_path_factory.mktemp("open_clip_stages"), posts_backbone)


def test_three_stages_train_on_a_frozen_open_clip_table(open_clip_stages, tiny_vit, posts_backbone):
    name, weights = tiny_vit
    models = {s: MMBertForSequenceClassification.from_pretrained(d) for s, d in open_clip_stages.items()}
    # the model's own tokenizer: the backbone's characters, and the emoji added to it as whole tokens
    tokens = piece_texts(load_tokenizer(open_clip_stages[1]))
    expected = vision_table(tokens, OpenCLIP(name, weights))
    assert expected.shape == (len(tokens), 16) and len(tokens) > len(load_tokenizer(posts_backbone)) > 300
    for stage, model in models.items():
        assert model.config.stage == stage and model.config.vision_encoder == "table"
        assert model.config.vision_dim == 16 == TINY_CONFIG["embed_dim"]  # the encoder's width
        # the encoder's features, frozen through the stages
        torch.testing.assert_close(model.mmbert.vision_encoder.features[:len(tokens)], expected)
        source = model.config.vision_source
        assert (source["encoder"], source["model"], source["pretrained"]) == ("open_clip", name, weights)
        assert len(source["pretrained_sha256"]) == 64 and source["open_clip"] == open_clip.__version__
    assert not torch.equal(models[1].mmbert.vision_aligner[0].weight, models[3].mmbert.vision_aligner[0].weight)
    log = json.loads(open(f"{open_clip_stages[2]}/log.json").read())
    assert 0 <= log[0]["dev_f1_vision"] <= 1


PREDICT_WITHOUT_OPEN_CLIP = """
import json, sys
sys.modules["open_clip"] = None  # any import of it fails
from mmbert.inference import infer
from mmbert.loading import load_model
model, featurizer = load_model(sys.argv[1])
records = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8")]
print(json.dumps(infer(model, featurizer, records)["probs"].tolist()))
"""


def test_a_saved_model_predicts_the_same_without_open_clip(open_clip_stages, data, tmp_path):
    from mmbert.inference import infer

    records = read_jsonl(data / "dev.jsonl")
    model, featurizer = load_model(open_clip_stages[3])
    first = infer(model, featurizer, records)["probs"]
    model.save_pretrained(tmp_path / "copy")
    featurizer.tokenizer.save_pretrained(tmp_path / "copy")
    again, featurizer2 = load_model(str(tmp_path / "copy"))
    np.testing.assert_array_equal(first, infer(again, featurizer2, records)["probs"])
    result = subprocess.run([sys.executable, "-c", PREDICT_WITHOUT_OPEN_CLIP, str(tmp_path / "copy"),
                             str(data / "dev.jsonl")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.array(json.loads(result.stdout.splitlines()[-1]), dtype=np.float32), first)


def run_mmbert(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmbert.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


def test_cli_vision_flag_builds_the_table_and_names_a_wrong_model(tiny_vit_dir, posts_backbone, data, tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(json.dumps({"preset": "tiny", "model": {"modalities": ["text", "vision"]},
                                  "train": {"stage1": {"epochs": 1}}}))
    common = ["train", "--stage", "1", "--config", config, "--train", data / "train.jsonl", "--dev",
              data / "dev.jsonl", "--from", posts_backbone, "-q"]
    result = run_mmbert(*common, "--out", tmp_path / "s1", "--vision", f"open_clip:model=local-dir:{tiny_vit_dir}")
    assert result.returncode == 0, result.stderr
    saved = json.loads((tmp_path / "s1" / "config.json").read_text())
    assert saved["vision_encoder"] == "table" and saved["vision_source"]["model"] == f"local-dir:{tiny_vit_dir}"
    assert saved["vision_source"]["preprocess"]["std"] == [0.5, 0.5, 0.5]

    from click.testing import CliRunner

    from mmbert.cli import main

    def fails(vision: str) -> str:  # in this process: the same command, without another torch import
        result = CliRunner().invoke(main, [*map(str, common), "--out", str(tmp_path / "bad"), "--vision", vision])
        assert result.exit_code == 1 and result.stderr.count("\n") == 1, result.output
        return result.stderr

    assert fails("open_clip:model=ViT-B-99").startswith(
        "mmbert: error: open_clip has no model 'ViT-B-99'; did you mean 'ViT-B-32'? its models: coca_base, ")
    assert "--vision open_clip:modle=ViT-B-32: unknown parameter 'modle'; did you mean 'model'?" in fails(
        "open_clip:modle=ViT-B-32")


def test_help_does_not_import_open_clip():
    for args in (["--help"], ["train", "--help"]):
        code, imported, _ = cli_in_fresh_python("mmbert.cli", args, ("open_clip", "torchvision", "torch"))
        assert code == 0 and imported == [False, False, False], (args, imported)
