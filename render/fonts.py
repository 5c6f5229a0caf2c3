"""Finding real fonts: a CJK font for Chinese (and Latin), a colour-emoji font for emoji.

Fontconfig is asked first (``fc-match``: the font the desktop would use), then the usual install
paths of Debian, Fedora, Arch, macOS and Windows. For the CJK font the Simplified Chinese face is
taken inside a collection: NotoSansCJK-Regular.ttc holds JP, KR, SC, TC and HK faces, and only the SC
face draws 骨 or 门 the way mainland readers (and posters) see them.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
from dataclasses import dataclass

CJK_INSTALL_HINT = ("install one, e.g. `apt-get install fonts-noto-cjk` (Debian/Ubuntu), "
                    "`dnf install google-noto-sans-cjk-fonts` (Fedora), or pass a font file with --font")
EMOJI_INSTALL_HINT = "install one, e.g. `apt-get install fonts-noto-color-emoji` (Debian/Ubuntu)"

# Preferred CJK families, best first: fontconfig names.
CJK_FAMILIES = ("Noto Sans CJK SC", "Source Han Sans SC", "Source Han Sans CN", "WenQuanYi Zen Hei",
                "WenQuanYi Micro Hei", "AR PL UMing CN", "AR PL UKai CN", "Droid Sans Fallback",
                "PingFang SC", "Microsoft YaHei")
EMOJI_FAMILIES = ("Noto Color Emoji", "Apple Color Emoji", "Segoe UI Emoji", "Twemoji")
FALLBACK_FAMILIES = ("DejaVu Sans", "Noto Sans", "Liberation Sans", "Arial")

_CJK_PATHS = (
    "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
    "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/arphic/uming.ttc",
    "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf",
    "/System/Library/Fonts/PingFang.ttc",
    "C:/Windows/Fonts/msyh.ttc",
)
_FALLBACK_PATHS = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "C:/Windows/Fonts/arial.ttf",
)
_EMOJI_PATHS = (
    "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf",
    "/usr/share/fonts/noto/NotoColorEmoji.ttf",
    "/usr/share/fonts/google-noto-emoji/NotoColorEmoji.ttf",
    "/System/Library/Fonts/Apple Color Emoji.ttc",
    "C:/Windows/Fonts/seguiemj.ttf",
)


class FontNotFoundError(RuntimeError):
    """No usable font of a kind is installed."""


@dataclass(frozen=True)
class FontFile:
    """A font face to draw with: a font file and, in a collection, which face (``find_cjk_font`` and
    ``find_emoji_font`` find one through fontconfig; ``font_file`` names one)."""

    path: str
    """The font file (.ttf, .otf, .ttc)."""
    index: int = 0
    """The face inside a .ttc collection (0 for a single-face file)."""

    @property
    def key(self) -> str:
        """Identifies the face in cache keys (path, face and file size)."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            size = -1
        return f"{os.path.basename(self.path)}#{self.index}:{size}"


def _fc_match(pattern: str) -> tuple[str, int, str] | None:
    if shutil.which("fc-match") is None:
        return None
    try:
        out = subprocess.run(["fc-match", "-f", "%{file}|%{index}|%{family}", pattern],
                             capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    parts = out.split("|")
    if len(parts) != 3 or not os.path.isfile(parts[0]):
        return None
    return parts[0], int(parts[1] or 0), parts[2]


def _face_index(path: str, wanted: str = " SC") -> int:
    """The face of a collection whose name says Simplified Chinese (index 0 otherwise)."""
    from PIL import ImageFont

    if not path.lower().endswith(".ttc"):
        return 0
    for index in range(16):
        try:
            family, _ = ImageFont.truetype(path, 16, index=index).getname()
        except OSError:
            break
        if family.endswith(wanted) or family.endswith(" CN"):
            return index
    return 0


def _find(families: tuple[str, ...], paths: tuple[str, ...]) -> FontFile | None:
    for family in families:
        found = _fc_match(family)
        if found and found[2].split(",")[0] == family:
            return FontFile(found[0], found[1])
    for path in paths:
        for match in glob.glob(os.path.expanduser(path)):
            return FontFile(match, _face_index(match))
    return None


@functools.cache
def find_cjk_font() -> FontFile:
    """The installed CJK font to draw Chinese with, or FontNotFoundError saying what to install."""
    found = _find(CJK_FAMILIES, _CJK_PATHS)
    if found is None:
        fallback = _fc_match(":lang=zh-cn")
        if fallback and any(k in fallback[2] for k in ("CJK", "Hei", "Ming", "Song", "Kai", "Han")):
            found = FontFile(fallback[0], fallback[1])
    if found is None:
        raise FontNotFoundError(f"no Chinese (CJK) font found; {CJK_INSTALL_HINT}")
    return found


@functools.cache
def find_emoji_font() -> FontFile | None:
    """The installed colour-emoji font, or None (emoji are then drawn with the CJK font)."""
    return _find(EMOJI_FAMILIES, _EMOJI_PATHS)


@functools.cache
def find_fallback_font() -> FontFile | None:
    """A font for what the CJK font has no glyph for (Cyrillic, Thai, math ...), or None."""
    return _find(FALLBACK_FAMILIES, _FALLBACK_PATHS)


def font_file(path: str) -> FontFile:
    """A font the user names; the SC face of a collection."""
    if not os.path.isfile(path):
        raise FontNotFoundError(f"font file not found: {path}")
    return FontFile(path, _face_index(path))
