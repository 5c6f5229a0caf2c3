"""Results: glyph rendering, speech (Kokoro, eSpeak NG, Whisper) and MMBERT's vision table."""
from __future__ import annotations

from . import Table, f3, f4, num, pct

PAGE = "render-speech.md"
TITLE = "Glyphs and speech"
INTRO = """
How fast glyphs are drawn, how well the synthetic speech says a post (Whisper must hear it back), whether a
homophone cloak sounds like its post, and what a frozen CLIP costs as MMBERT's vision encoder.

Guide: [render, speak, synth](../guide/render-speech.md). The speech benchmarks need real weights
(`make weights`, see [Real weights](../guide/weights.md)).
"""


def render(r) -> list[Table]:
    d = r("render.json")
    g, c, s = d["gb2312_224px_rgb"], d["cold_test_64px"], d["similarity_index"]
    rows = [[f"all {g['glyphs']:,} GB2312 characters at 224 px RGB, uncached", num(g["uncached_s"], 2),
             num(g["uncached_glyphs_per_s"], 1)],
            ["the same from the memory cache", "", num(g["memory_cache_glyphs_per_s"], 1)],
            ["the same from the disk cache", "", num(g["disk_cache_glyphs_per_s"], 1)],
            [f"the {c['tokens']:,} tokens of COLD test at 64 px ({c['distinct_tokens_drawn']:,} distinct images drawn)",
             num(c["seconds"], 2), num(c["tokens_per_s"], 0) + " tokens/s"],
            [f"the look-alike index over {s['characters']:,} GB2312 characters, from scratch",
             num(s["build_s"], 2), ""]]
    return [Table("Rendering", ["render.json"], ["", "seconds", "glyphs/s"], rows)]


def speech(r) -> list[Table]:
    d = r("speech.json")
    cer = d["cer"]["cer_vs_speakable"]
    h = d["homophones"]
    enc = d["speed"]["whisper_encoder"]
    rows = [[f"Kokoro ({d['weights']['voice']}) heard back by Whisper base: character error rate, mean / median "
             f"over {cer['n']} posts", f"{f3(cer['mean'])} / {f3(cer['median'])}", "<= 0.15"],
            ["Kokoro's real-time factor on the machine's CPUs", f3(d["speed"]["kokoro_tts"]["rtf"]), ""]]
    for backend in ("kokoro-onnx", "tone"):
        e = h[backend]
        rows.append([f"{backend}: cosine of a post's pooled Whisper features to its homophone cloak vs to another "
                     f"post ({e['n_pairs']} pairs)", f"{f4(e['cos_cloak_mean'])} vs {f4(e['cos_other_mean'])}",
                     "cloak nearer"])
        rows.append([f"{backend}: the same after subtracting the set's mean; share of posts whose cloak is nearer",
                     f"{f3(e['centred']['cos_cloak_mean'])} vs {f3(e['centred']['cos_other_mean'])}; "
                     f"{pct(e['share_cloak_nearer'], 0)}", ""])
    for key, label in (("cropped_3s", "3 s utterances"), ("natural_length", "whole posts")):
        e = enc[key]
        rows.append([f"Whisper base encoder on {label}: trimmed vs padded to 30 s, seconds an utterance",
                     f"{f3(e['trimmed_s_per_utterance'])} vs {f3(e['padded_s_per_utterance'])} "
                     f"({e['speedup_total']:.1f}x)", f"{enc['target_speedup']}x faster"])
    return [Table("Speech", ["speech.json"], ["", "measured", "target"], rows,
                  f"Real Kokoro-82M int8 ONNX and Whisper base; {d['selection']}.")]


def _cer(cer: dict) -> str:
    return f"{f3(cer['mean'])} / {f3(cer['median'])}"


def _cosines(h: dict) -> list[str]:
    """A post's pooled Whisper features against its homophone cloak's and another post's, raw and centred."""
    return [f"{f4(h['cos_cloak_mean'])} vs {f4(h['cos_other_mean'])}",
            f"{f3(h['centred']['cos_cloak_mean'])} vs {f3(h['centred']['cos_other_mean'])}"]


def backends(r) -> list[Table]:
    d = r("speech_backends.json")
    k = r("speech.json")
    rows = []
    for name, e in d["backends"].items():
        h = e["homophones"]
        rows.append([f"`{name}`", num(1000 * e["synth_s_per_post"]), _cer(e["cer_vs_speakable"]), *_cosines(h)])
    if "kokoro-onnx" not in d["backends"]:
        kh, cer = k["homophones"]["kokoro-onnx"], k["cer"]["cer_vs_speakable"]
        tts = k["speed"]["kokoro_tts"]
        rows.append(["`kokoro-onnx` (`bench.speech`)", num(1000 * tts["synth_s"] / tts["n_sentences"]), _cer(cer),
                     *_cosines(kh)])
    return [Table("eSpeak NG as the TTS", ["speech_backends.json", "speech.json"],
                  ["backend", "ms a post", "Whisper base CER (mean / median)", "homophone cloak vs other post: cosine",
                   "centred"], rows,
                  f"The same {d['cer_posts']} posts and {d['pairs']} homophone pairs for both. Whisper base cannot "
                  "transcribe eSpeak NG's robotic Mandarin (a CER above 1 writes more than was said), but in its "
                  "encoder's space a homophone cloak still lands by its post: what MMBERT's speech needs.")]


def workers(r) -> list[Table]:
    d = r("speech_workers.json")
    rows = [[f"{n} process{'es' if n != '1' else ''}", ", ".join(num(s, 1) for s in d["seconds"][n]),
             num(d["posts_per_second"][n], 2)] for n in d["seconds"]]
    return [Table("Speech features in several processes", ["speech_workers.json"],
                  ["", "seconds (each round)", "texts/s"], rows,
                  f"{d['texts']:,} texts ({d['posts']} COLD test posts and their homophone cloaks), {d['tts']} and "
                  f"Whisper {d['whisper']}, a fresh cache each time, {d['rounds']} rounds, order alternating: "
                  f"{d['speedup']}x; the features agree to float16 rounding (largest difference "
                  f"{d['max_abs_feature_difference']}).")]


def vision_table(r) -> list[Table]:
    d = r("vision_table.json")
    v, s = d["vocabulary"], d["seconds"]
    rows = [["vocabulary entries / distinct pictures", f"{v['entries']:,} / {v['distinct pictures']:,}"],
            ["CPU-seconds, all threads", num(s["CPU (all threads)"], 1)],
            ["wall seconds (of which the ViT's forward passes)",
             f"{num(s['vision table'], 1)} ({num(s['of which ViT forward'], 1)})"],
            ["drawing the glyphs / open_clip's transform, seconds", f"{num(s['of which draw glyphs'], 1)} / "
             f"{num(s['of which open_clip transform'], 1)}"],
            ["the table", f"{d['table']['shape'][0]:,} x {d['table']['shape'][1]} {d['table']['dtype']}, "
             f"{d['table']['megabytes']} MB"],
            ["peak memory, MB", num(d["peak_rss_megabytes"])]]
    e = d["encoder"]
    return [Table("MMBERT's vision table from open_clip", ["vision_table.json"], ["", ""], rows,
                  f"MMBERT's vocabulary through open_clip's `{e['model']}` ({e['visual_parameters']:,} parameters "
                  f"in the image tower, {e['weights']} weights: the same cost as pretrained ones). Wall time on a "
                  "shared machine; the CPU-seconds are the figure to read.")]


TABLES = [render, speech, backends, workers, vision_table]
