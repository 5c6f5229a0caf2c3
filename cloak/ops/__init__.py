"""Perturbation operations. Importing this package registers the built-in ops."""
from .base import (Op, available_ops, cloakable, default_ops, example_specs, foreign_ops, make_op, parse_ops,
                   register_op)
from .emoji import Emoji
from .english import English
from .foreign import Dialect, JionlpHomophone, NlpcdaHomophone, Zhuyin
from .homophone import Homophone
from .radical import Radical
from .romanize import Abbrev, Pinyin
from .script import Traditional, Variant
from .similar import Similar
from .split import Split
from .typography import FullWidth, Noise, Shuffle, ZeroWidth

__all__ = [
    "Op", "available_ops", "cloakable", "default_ops", "example_specs", "foreign_ops", "make_op", "parse_ops",
    "register_op", "Abbrev", "Dialect", "Emoji", "English", "FullWidth", "Homophone", "JionlpHomophone",
    "NlpcdaHomophone", "Noise", "Pinyin", "Radical", "Shuffle", "Similar",
    "Split", "Traditional", "Variant", "ZeroWidth", "Zhuyin",
]
