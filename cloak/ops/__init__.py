"""Perturbation operations. Importing this package registers the built-in ops."""
from .base import Op, available_ops, cloakable, example_specs, make_op, parse_ops, register_op
from .emoji import Emoji
from .english import English
from .homophone import Homophone
from .radical import Radical
from .romanize import Abbrev, Pinyin
from .script import Traditional, Variant
from .similar import Similar
from .split import Split
from .typography import FullWidth, Noise, Shuffle, ZeroWidth

__all__ = [
    "Op", "available_ops", "cloakable", "example_specs", "make_op", "parse_ops", "register_op",
    "Abbrev", "Emoji", "English", "FullWidth", "Homophone", "Noise", "Pinyin", "Radical", "Shuffle", "Similar",
    "Split", "Traditional", "Variant", "ZeroWidth",
]
