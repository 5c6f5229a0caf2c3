"""render: glyph images of tokens, and the visual similarity of characters."""
from .fonts import FontFile, FontNotFoundError, find_cjk_font, find_emoji_font, font_file
from .glyphs import GlyphRenderer, clip_images, glyph_tokens

__all__ = ["FontFile", "FontNotFoundError", "GlyphRenderer", "clip_images", "find_cjk_font",
           "find_emoji_font", "font_file", "glyph_tokens"]
