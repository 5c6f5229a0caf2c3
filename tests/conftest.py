import json
import subprocess
import sys
from pathlib import Path

import pytest

# Session fixtures that train models for minutes on 2 CPU cores: a test that needs one is slow (make test-all's).
SLOW_FIXTURES = {"stages"}


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "cold" / "cold_test_300.jsonl"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def sample_path() -> Path:
    return SAMPLE


@pytest.fixture(scope="session")
def sample_texts() -> list[str]:
    with open(SAMPLE, encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def cli_in_fresh_python(cli: str, args: list[str], modules: tuple[str, ...]) -> tuple[int, list[bool], str]:
    """Run ``cli``'s click group (``mmbert.cli``) on ``args`` in a new interpreter: its exit code, which
    of ``modules`` it imported, and what it wrote to stderr."""
    code = (f"import sys, json; from click.testing import CliRunner; from {cli} import main; "
            "r = CliRunner().invoke(main, sys.argv[2:]); "
            "print(json.dumps([r.exit_code, [m in sys.modules for m in sys.argv[1].split(',')], r.stderr]))")
    result = subprocess.run([sys.executable, "-c", code, ",".join(modules), *args], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return tuple(json.loads(result.stdout.splitlines()[-1]))


def interrupted_after(calls: int, real):
    """A stand-in for ``real`` (``cloak.run._cloak_chunk``, ``attacks.evaluate.run_attack``) that is Ctrl-C on its
    ``calls``-th call."""
    made = []

    def stand_in(*args):
        made.append(1)
        if len(made) == calls:
            raise KeyboardInterrupt
        return real(*args)

    return stand_in


def perturb_interrupted_then_resumed(in_path: Path, out: Path, perturber, monkeypatch, variants: int = 1,
                                     calls: int = 3):
    """``cloak.run.perturb_file`` from ``in_path`` into ``out``, Ctrl-C'd on its ``calls``-th chunk of 8 lines
    (only the JSONL ``out.partial`` left, ``out`` not made), then resumed: the resumed run's RunStats."""
    import cloak.run as run

    monkeypatch.setattr(run, "CHUNK", 8)
    monkeypatch.setattr(run, "_cloak_chunk", interrupted_after(calls, run._cloak_chunk))
    with pytest.raises(KeyboardInterrupt):
        run.perturb_file(str(in_path), str(out), perturber, variants=variants, progress=False)
    assert not out.exists() and Path(f"{out}.partial").exists()  # JSONL until complete
    monkeypatch.undo()
    return run.perturb_file(str(in_path), str(out), perturber, variants=variants, resume=True, progress=False)


def write_cold(folder: Path, splits: dict[str, list[dict]]) -> Path:
    """A COLD folder (``train.csv``, ``dev.csv``, ``test.csv`` as COLD writes them) of the records given by split."""
    import csv

    for split, rows in splits.items():
        with open(folder / f"{split}.csv", "w", encoding="utf-8-sig", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["", "split", "topic", "label", "fine-grained-label", "TEXT"])
            writer.writerows([i, split, "race", r["label"], r["label"], r["text"]] for i, r in enumerate(rows))
    return folder


def cloak_quietly(*args: str) -> None:
    """``cloak ARGS --workers 1 -q`` in this process, which must succeed."""
    from click.testing import CliRunner

    from cloak.cli import main

    result = CliRunner().invoke(main, [*args, "--workers", "1", "-q"])
    assert result.exit_code == 0, result.output


def read_jsonl(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def tiny_whisper(tmp_path_factory):
    """A random Whisper (64-wide, 2 encoder layers) saved as an openai-whisper checkpoint."""
    torch = pytest.importorskip("torch")
    whisper = pytest.importorskip("whisper")
    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=4,
                                         n_audio_layer=2, n_vocab=51865, n_text_ctx=448, n_text_state=64,
                                         n_text_head=4, n_text_layer=1)
    model = whisper.model.Whisper(dims)
    path = tmp_path_factory.mktemp("whisper") / "tiny.pt"
    torch.save({"dims": dims.__dict__, "model_state_dict": model.state_dict()}, path)
    return path


@pytest.fixture(scope="session")
def data(tmp_path_factory, sample_path):
    """Records from the bundled COLD sample: clean posts and their cloaks, labels of both kinds."""
    records = [r for r in read_jsonl(sample_path) if len(r["text"]) <= 30]
    records = [r for r in records if r["label"] == 1][:16] + [r for r in records if r["label"] == 0][:16]
    from cloak import Perturber
    from cloak.run import cloak_record

    perturber = Perturber(ops="homophone,emoji", seed=0)
    cloaked = [json.loads(cloak_record(perturber, i, r, 1)[0][0]) for i, r in enumerate(records)]
    folder = tmp_path_factory.mktemp("data")
    train = records[:12] + records[16:28] + cloaked[:12] + cloaked[16:28]
    dev = records[12:16] + records[28:] + cloaked[12:16] + cloaked[28:]
    for name, rows in (("train", train), ("dev", dev)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                             encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def run(tiny_whisper, tmp_path_factory):
    """The tiny preset with a tiny random Whisper, one epoch a stage."""
    from mmbert.presets import load_run_config

    config = load_run_config("tiny")
    config["features"].update(whisper=str(tiny_whisper), speech_cache=str(tmp_path_factory.mktemp("speech")))
    config["train"]["stage2"]["head_warmup_epochs"] = 0  # so that one epoch trains every expert
    for stage in ("stage1", "stage2", "stage3"):
        config["train"][stage]["epochs"] = 1
    return config


def train_stages(run: dict, data: Path, root: Path, backbone: str | None = None) -> dict[int, str]:
    """Stage 1 (from ``backbone``, if given), 2 and 3 of MMBERT trained in turn on ``data`` into ``root``:
    {stage: output folder}."""
    from mmbert.train import train_stage

    dirs, previous = {}, backbone
    for stage in (1, 2, 3):
        dirs[stage] = str(root / f"s{stage}")
        train_stage(stage, run, str(data / "train.jsonl"), str(data / "dev.jsonl"), dirs[stage], previous,
                    progress=False)
        previous = dirs[stage]
    return dirs


@pytest.fixture(scope="session")
def stages(run, data, tmp_path_factory):
    """Stage 1, 2 and 3 of a tiny MMBERT trained in turn on ``data``: {stage: output folder}."""
    return train_stages(run, data, tmp_path_factory.mktemp("stages"))


@pytest.fixture(scope="session")
def backbone(tmp_path_factory):
    """A tiny random BERT masked-LM folder with mmcloak's tokenizer, as `mmbert pretrain` writes one."""
    pytest.importorskip("torch")
    from mmbert.tokenization import build_tokenizer

    return save_tiny_backbone(tmp_path_factory.mktemp("backbone"), build_tokenizer())


def save_tiny_backbone(folder: Path, tokenizer) -> str:
    """A tiny random BERT masked-LM (seeded) over ``tokenizer``'s vocabulary, saved with it into ``folder``."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    BertForMaskedLM(BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                               intermediate_size=64, max_position_embeddings=64)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def xlmr_tokenizer(texts: list[str]):
    """An XLM-R tokenizer (SentencePiece unigram, XLM-R's special tokens and ids) over pieces trained on
    ``texts``: pieces of several characters (就是, 黑人) as in multilingual-e5's 250k vocabulary."""
    import io

    import sentencepiece as spm
    from transformers import XLMRobertaTokenizerFast

    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=proto, model_type="unigram",
                                   vocab_size=2000, character_coverage=1.0, hard_vocab_limit=False, bos_id=0,
                                   pad_id=1, eos_id=2, unk_id=3, minloglevel=2)
    pieces = spm.SentencePieceProcessor(model_proto=proto.getvalue())
    vocab = [(pieces.id_to_piece(i), pieces.get_score(i)) for i in range(pieces.get_piece_size())]
    return XLMRobertaTokenizerFast(vocab=[*vocab, ("<mask>", 0.0)], model_max_length=64)


@pytest.fixture(scope="session")
def xlmr_backbones(sample_path, tmp_path_factory):
    """Two tiny random encoders with an XLM-R tokenizer trained on the sample posts, as folders:
    ``e5`` a BertModel without a pooler (multilingual-e5-small's make), ``xlm-roberta`` an
    XLMRobertaModel (positions numbered from 2) with one."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertModel, XLMRobertaConfig, XLMRobertaModel

    tokenizer = xlmr_tokenizer([r["text"] for r in read_jsonl(sample_path)])
    shape = {"vocab_size": len(tokenizer), "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
             "intermediate_size": 64, "pad_token_id": tokenizer.pad_token_id}
    folders = {}
    for name, make in (("e5", lambda: BertModel(BertConfig(max_position_embeddings=64, **shape),
                                                add_pooling_layer=False)),
                       ("xlm-roberta", lambda: XLMRobertaModel(XLMRobertaConfig(max_position_embeddings=66,
                                                                                **shape)))):
        torch.manual_seed(0)
        folders[name] = tmp_path_factory.mktemp(name)
        make().save_pretrained(folders[name])
        tokenizer.save_pretrained(folders[name])
    return {k: str(v) for k, v in folders.items()}


HABERTOR_TINY = {"embedding_size": 16, "hidden_size": 32, "num_layers": 2, "num_heads": 2, "attention_size": 16,
                 "intermediate_size": 8, "feedforward_size": 64, "max_position": 64}


@pytest.fixture(scope="session")
def habertor_backbone(sample_path, tmp_path_factory):
    """A tiny HABERTOR pre-trained by the command on the sample posts."""
    from click.testing import CliRunner

    from attacks.cli import main

    out = tmp_path_factory.mktemp("habertor-lm")
    config = out / "pretrain.yaml"
    config.write_text(json.dumps({"model": HABERTOR_TINY, "training": {"max_length": 48, "batch_size": 16}}))
    result = CliRunner().invoke(main, [
        "pretrain-habertor", "--corpus", str(sample_path), "--out", str(out), "--config", str(config),
        "--vocab-size", "300", "--tau", "2", "--epochs", "2", "-q"])
    assert result.exit_code == 0, result.output
    return out
