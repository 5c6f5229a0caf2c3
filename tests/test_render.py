"""Glyph rendering, the similarity index and the `similar` op."""
import functools
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from cloak import Perturber, apply_edits
from cloak.hanzi import common_chars
from cloak.ops.similar import similar_chars

LOOKALIKES = ["己已巳", "未末", "土士", "人入", "日曰", "戊戌戍", "大太犬", "王玉主", "今令", "间问"]


@pytest.fixture(scope="module")
def render():
    """The render package with a CJK font; CI installs one, so there a missing font fails."""
    import render
    from render import FontNotFoundError

    try:
        render.find_cjk_font()
    except FontNotFoundError:
        if os.environ.get("CI"):
            raise
        pytest.skip("no CJK font installed (apt-get install fonts-noto-cjk fonts-noto-color-emoji)")
    return render


@pytest.mark.slow
def test_every_chinese_character_leaves_ink(render, sample_texts):
    renderer = render.GlyphRenderer(size=32)
    chars = sorted({ch for text in sample_texts for ch in text if ch in common_chars()})
    images = renderer.render_batch(chars)
    assert images.shape == (len(chars), 32, 32) and images.dtype == np.uint8
    assert len(chars) > 500
    assert (images.reshape(len(chars), -1).min(axis=1) < 100).all()  # dark ink on every glyph
    assert (images[:, 0, :] > 200).all() and (images[:, -1, :] > 200).all()  # a white margin


def test_tokens_of_every_kind(render):
    renderer = render.GlyphRenderer(size=48, mode="RGB")
    tokens = ["人", "同性恋", "##人", "nmsl", "123", "🐶", "黑🐶人", "👩‍👩‍👧"]
    images = renderer.render_batch(tokens)
    assert images.shape == (8, 48, 48, 3)
    assert (images.reshape(8, -1).min(axis=1) < 128).all()
    assert (images[2] == images[0]).all()  # a wordpiece is drawn without its ##
    dog = images[5].astype(int)
    colourful = (np.abs(dog[..., 0] - dog[..., 1]) > 40) | (np.abs(dog[..., 1] - dog[..., 2]) > 40)
    assert colourful.sum() > 100  # emoji come out in colour
    grey = render.GlyphRenderer(size=48).render("🐶")
    assert grey.shape == (48, 48) and grey.min() < 200
    from render.glyphs import has_glyph

    if renderer.fallback_font:  # what the CJK font lacks comes from the fallback, not as a box
        assert not has_glyph(renderer.font, "ש") and has_glyph(renderer.fallback_font, "ש")
        assert (renderer.render("ש") != renderer.render("\U0010fffd")).any()
    assert render.glyph_tokens("黑人🐶nmsl 123，[机智]") == \
        ["黑", "人", "🐶", "nmsl", "123", "，", "[", "机", "智", "]"]


def test_any_string_renders_a_paragraph_separator_as_the_space_it_leaves(render):
    """XLM-R's vocabulary holds U+0085 (NEXT LINE) as a piece: libraqm refuses any text holding a
    paragraph separator, so drawing it failed with a raw ``raqm_layout() failed``."""
    import unicodedata

    from render.glyphs import PARAGRAPH_SEPARATORS

    separators = {c for c in range(0x110000) if unicodedata.bidirectional(chr(c)) == "B"}
    assert set(PARAGRAPH_SEPARATORS) == separators  # every one Unicode has
    renderer = render.GlyphRenderer(size=24)
    for c in separators:
        assert (renderer.render(chr(c)) == 255).all()  # blank, like a space
        np.testing.assert_array_equal(renderer.render(f"黑{chr(c)}人"), renderer.render("黑 人"))
    assert (renderer.render("垃圾\r\n都是") < 128).any()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=12))
def test_every_string_renders(text):
    import render

    try:
        renderer = _renderer()
    except render.FontNotFoundError:
        pytest.skip("no CJK font installed")
    image = renderer.render(text)
    assert image.shape == (24, 24) and image.dtype == np.uint8


@functools.cache
def _renderer():
    import render

    return render.GlyphRenderer(size=24)


def test_same_input_same_bytes_and_cache_hits_draw_nothing(render, tmp_path):
    a = render.GlyphRenderer(size=40, cache_dir=tmp_path)
    first = a.render_batch(["黑人", "🐶", "垃圾"]).tobytes()
    assert a.renders == 3
    assert a.render_batch(["黑人", "🐶", "垃圾"]).tobytes() == first and a.renders == 3
    b = render.GlyphRenderer(size=40, cache_dir=tmp_path)  # a new process would find them on disk
    assert b.render_batch(["黑人", "🐶", "垃圾"]).tobytes() == first and b.renders == 0
    c = render.GlyphRenderer(size=40)
    assert c.render_batch(["黑人", "🐶", "垃圾"]).tobytes() == first and c.renders == 3


def test_clip_ready_images(render):
    images = render.clip_images(["黑", "🐶"])
    assert images.shape == (2, 224, 224, 3) and images.dtype == np.uint8


def test_a_missing_font_says_what_to_install(render, monkeypatch):
    from render import fonts

    monkeypatch.setattr(fonts, "_fc_match", lambda pattern: None)
    monkeypatch.setattr(fonts, "_CJK_PATHS", ())
    fonts.find_cjk_font.cache_clear()
    try:
        with pytest.raises(fonts.FontNotFoundError, match="apt-get install fonts-noto-cjk"):
            fonts.find_cjk_font()
    finally:
        fonts.find_cjk_font.cache_clear()
    with pytest.raises(fonts.FontNotFoundError, match="font file not found"):
        fonts.font_file("/nonexistent/font.ttf")


def test_shipped_index_puts_lookalikes_in_each_others_top_five():
    table = similar_chars()
    assert len(table) == 6763
    for group in LOOKALIKES:
        for a in group:
            for b in group:
                if a != b:
                    assert b in table[a][:5], f"{b} not in the top 5 of {a}: {table[a]}"


def test_index_rebuilt_from_the_font_agrees(render):
    from render.similarity import build_similarity_index

    chars = "".join(LOOKALIKES) + "".join(sorted(common_chars())[:400])
    index = build_similarity_index(chars)
    for group in LOOKALIKES:
        for a in group:
            top = [n for n, _ in index[a][:5]]
            assert all(b in top for b in group if b != a), (a, top)


def test_similar_op_swaps_for_common_lookalikes(sample_texts):
    p = Perturber(ops="similar", targets="all", rate=0.5, seed=2)
    n = 0
    for text in sample_texts[:100]:
        out = p(text)
        assert apply_edits(text, out.edits) == out.text
        for e in out.edits:
            assert e.dst in similar_chars()[e.src][:10] and e.dst in common_chars()
            n += 1
    assert n > 200


def run_render(*args):
    return subprocess.run([sys.executable, "-m", "cloak.cli", "render", *map(str, args)],
                          capture_output=True, text=True)


def test_preview_rows_have_ink_where_the_text_is(render, tmp_path):
    out = tmp_path / "preview.png"
    result = run_render("--preview", "黑人都是垃圾", "-o", out, "--variants", 2)
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()
    assert rows[0] == "黑人都是垃圾" and len(rows) == 3
    image = np.asarray(Image.open(out).convert("L"))
    from render.preview import GAP

    size = 48
    for r, text in enumerate(rows):
        y = GAP + r * (size + GAP)
        for t, token in enumerate(render.glyph_tokens(text)):
            cell = image[y:y + size, GAP + t * size:GAP + (t + 1) * size]
            # colour emoji can be light: 🗑️ is grey, its darkest pixel 132 in greyscale
            assert cell.min() < 200, f"row {r} token {token!r} has no ink"
        after = image[y:y + size, GAP + len(render.glyph_tokens(text)) * size:]
        assert after.size == 0 or after.min() > 250  # and none past the text


def test_preview_cloaks_the_targets_chosen_as_perturb_chooses_them(render, tmp_path, sample_path):
    """--targets, --lexicon and --mine-from choose the preview's targets as they do cloak perturb's."""
    from click.testing import CliRunner

    from cloak.cli import main

    text = "今天天气很好，都是垃圾"
    path = tmp_path / "terms.txt"
    path.write_text("天气\n", encoding="utf-8")
    chosen = {"lexicon": ([], {}), "file": (["--lexicon", path], {"lexicon": str(path)}),
              "mined": (["--targets", "mined", "--mine-from", sample_path],
                        {"targets": "mined", "mine_from": sample_path})}
    rows = {}
    for name, (args, options) in chosen.items():
        expected = Perturber(ops="homophone", seed=1, **options)
        result = CliRunner().invoke(main, ["render", "--preview", text, "-o", str(tmp_path / f"{name}.png"), "--ops",
                                           "homophone", "--seed", 1, "--variants", 2, *map(str, args)])
        assert result.exit_code == 0, result.output
        rows[name] = result.stdout.splitlines()
        assert rows[name] == [text, *(expected(text, variant=v).text for v in range(2))]
    assert rows["file"][1].endswith("都是垃圾") and "天气" in rows["lexicon"][1]
    assert rows["file"] != rows["lexicon"]


@pytest.mark.slow
def test_render_a_corpus(render, tmp_path, sample_path):
    from render.corpus import load_record_images
    from tests.conftest import read_jsonl

    out = tmp_path / "glyphs"
    result = run_render("--in", sample_path, "--out", out, "--size", 32, "--shard-size", 100)
    assert result.returncode == 0, result.stderr
    index = read_jsonl(out / "index.jsonl")
    records = read_jsonl(sample_path)
    assert len(index) == 300 and sorted(os.listdir(out))[:3] == ["index.jsonl", "meta.json", "shard-00000.npz"]
    tokens, images = load_record_images(str(out), index[123]["shard"], index[123]["row"])
    assert tokens == index[123]["tokens"] == render.glyph_tokens(records[123]["text"])
    assert images.shape == (len(tokens), 32, 32)
    assert (images == render.GlyphRenderer(size=32).render_batch(tokens)).all()
    usage = run_render("--in", sample_path)
    assert usage.returncode != 0 and "--in needs --out" in usage.stderr


@pytest.mark.slow
def test_resume_refuses_a_folder_rendered_from_other_input_or_options(render, tmp_path, sample_path):
    lines = sample_path.read_text(encoding="utf-8").splitlines(keepends=True)
    a, b = tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    a.write_text("".join(lines[:5]), encoding="utf-8")
    b.write_text("".join(lines[99:104]), encoding="utf-8")
    out = tmp_path / "gr"
    assert run_render("--in", a, "--out", out, "--size", 32).returncode == 0
    other_input = run_render("--in", b, "--out", out, "--size", 32, "--resume")
    assert other_input.returncode == 1 and "rendered with other input or options" in other_input.stderr
    other_size = run_render("--in", a, "--out", out, "--size", 64, "--resume")
    assert other_size.returncode == 1 and "size 32 (now 64)" in other_size.stderr
    same = run_render("--in", a, "--out", out, "--size", 32, "--resume")
    assert same.returncode == 0 and "0 distinct images drawn" in same.stderr  # every shard kept
    # Without --resume a folder is rendered afresh, whatever it held.
    assert run_render("--in", b, "--out", out, "--size", 64).returncode == 0
    from render.corpus import load_record_images
    from tests.conftest import read_jsonl

    index = read_jsonl(out / "index.jsonl")
    tokens, images = load_record_images(str(out), index[0]["shard"], 0)
    assert tokens == render.glyph_tokens(read_jsonl(b)[0]["text"]) and images.shape[1:] == (64, 64)


@pytest.mark.slow
def test_a_longer_earlier_run_leaves_no_stale_shards(render, tmp_path, sample_path):
    out = tmp_path / "gr"
    assert run_render("--in", sample_path, "--out", out, "--size", 16, "--shard-size", 100).returncode == 0
    small = tmp_path / "small.jsonl"
    small.write_text("".join(sample_path.read_text(encoding="utf-8").splitlines(keepends=True)[:150]), encoding="utf-8")
    assert run_render("--in", small, "--out", out, "--size", 16, "--shard-size", 100).returncode == 0
    assert sorted(p.name for p in out.glob("shard-*")) == ["shard-00000.npz", "shard-00001.npz"]


@pytest.mark.slow
def test_ctrl_c_says_how_to_resume(render, tmp_path, sample_path):
    import signal
    import time

    import json

    from tests.conftest import read_jsonl

    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps({**r, "id": f"{r['id']}-{k}"}, ensure_ascii=False) + "\n"
                           for k in range(20) for r in read_jsonl(sample_path)), encoding="utf-8")
    out = tmp_path / "gr"
    # a shell that runs the tests in the background ignores SIGINT, and a child inherits an ignored
    # signal; with a handler here the child starts with the default, as from a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "cloak.cli", "render", "--in", str(big), "--out", str(out),
                                 "--size", "64", "--shard-size", "100"], stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    deadline = time.time() + 120
    while time.time() < deadline and not list(out.glob("shard-*.npz")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "rerun with --resume" in err and "Traceback" not in err, err
    resumed = run_render("--in", big, "--out", out, "--size", 64, "--shard-size", 100, "--resume")
    assert resumed.returncode == 0 and "6000 records" in resumed.stderr


@pytest.mark.slow
def test_the_similarity_index_is_built_where_the_user_says_and_read_back(render, tmp_path):
    shipped = similar_chars()
    result = subprocess.run([sys.executable, "-m", "cloak.cli", "render", "--build-similarity-index"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    built = tmp_path / "similar_chars.tsv"  # in the current folder, not over the installed package's file
    assert built.exists() and similar_chars.__wrapped__() == shipped
    text = "未来的人都是己方"
    ours = Perturber(ops=f"similar:table={built}", targets="all", rate=1.0, seed=0)(text)
    assert ours.edits and all(e.dst in similar_chars(str(built))[e.src] for e in ours.edits)
    with pytest.raises(ValueError, match="'table' must be an index file that exists"):
        Perturber(ops="similar:table=/nonexistent.tsv")


def test_a_cache_dir_under_home_is_expanded(render, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    render.GlyphRenderer(size=16, cache_dir="~/glyphs").render("黑")
    assert list((tmp_path / "home" / "glyphs").rglob("*.png")) and not (tmp_path / "~").exists()
