"""cloak: synthesise cloaked Chinese text the way posters write it, with a record of every edit."""
from .edits import Edit, EditError, apply_edits, invert_edits
from .ops import Op, available_ops, make_op, parse_ops, register_op
from .perturber import Cloaked, Perturber
from .rng import Rng
from .targets import Lexicon, default_lexicon
from .unveil import Unveiled, Unveiler

__all__ = [
    "Cloaked", "Edit", "EditError", "Lexicon", "Op", "Perturber", "Rng", "Unveiled", "Unveiler", "apply_edits",
    "available_ops", "default_lexicon", "invert_edits", "make_op", "parse_ops", "register_op",
]
