"""Speech: speakable text, the tone backend, caches, Whisper features and the CLI.

Real weights (Kokoro ONNX, Whisper base) are used only where MMCLOAK_WEIGHTS points at the folder
that ``make weights`` fills (``mmcloak-weights``); CI runs the rest with the tone backend and a tiny
random Whisper made here.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from speech import AudioCache, ToneBackend, make_backend, speakable
from speech.text import pinyin_syllables

from .conftest import read_jsonl

WEIGHTS = os.environ.get("MMCLOAK_WEIGHTS")


def test_speakable_reads_code_mixed_posts_aloud():
    assert speakable("黑人都是laji") == "黑人都是拉机"  # pinyin is read as pinyin
    assert speakable("txl滚") == "踢艾克斯艾勒滚"  # an abbreviation is spelled out
    assert speakable("我520你") == "我五二零你"
    assert speakable("你这个🐶东西") == "你这个狗脸东西"
    assert speakable("同\u200b性\u200d恋") == "同性恋"
    assert speakable("吉林有震感[酷]") == "吉林有震感"  # a Weibo emoticon is a picture, not words
    # symbols a poster inserts into a word are not said (eSpeak NG would read "~" as "tilde"); pauses stay
    assert speakable("黑~人和女/性都是垃|圾") == "黑人和女性都是垃圾"
    assert speakable("《红楼梦》好看，真的！") == "红楼梦好看，真的！"
    assert pinyin_syllables("heiren") == ["hei", "ren"] and pinyin_syllables("txl") is None


def test_tone_backend_makes_homophones_sound_alike():
    tone = ToneBackend()
    same, also = tone.synthesize(["是", "事"])  # shi4, shi4
    assert np.array_equal(same, also)
    a, b, c = tone.synthesize(["白人都是垃圾", "拜仁都是拉级", "今天天气真好"])
    assert a.shape == b.shape == c.shape
    corr = lambda x, y: float(np.corrcoef(x, y)[0, 1])  # noqa: E731
    assert corr(a, b) > corr(a, c) + 0.3
    assert np.array_equal(tone.synthesize(["白人"])[0], tone.synthesize(["白人"])[0])
    long_post = tone.synthesize(["你好。" * 80])[0]
    assert len(long_post) > 80 * 2 * ToneBackend.SYLLABLE_S * 16000  # long texts are spoken whole
    assert tone.synthesize(["🐶abc 123", "？！"])[0].size > 0  # nothing crashes synthesis


class CountingTone(ToneBackend):
    calls = 0

    def synthesize(self, texts):
        CountingTone.calls += len(texts)
        return super().synthesize(texts)


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="needs the espeak-ng program (.ci/run installs it)")
def test_espeak_backend_speaks_mandarin_and_code_mixed_posts():
    espeak = make_backend("espeak-ng")
    he, she, other, mixed = espeak.synthesize(["他是垃圾", "她是垃圾", "白人都是垃圾", "txl好恶心🐒"])
    assert espeak.sample_rate == 22050 and he.dtype == np.float32 and 0.01 < np.abs(he).max() <= 1
    assert np.array_equal(he, she)  # ta1 and ta1: a reader cannot tell them apart, nor can the audio
    assert not np.array_equal(he, other) and mixed.size > he.size  # txl and the monkey are spelled out
    fast = make_backend("espeak-ng", speed=1.5)
    assert fast.synthesize(["白人都是垃圾"])[0].size < 0.8 * other.size
    assert len({espeak.cache_key, fast.cache_key, make_backend("espeak-ng", voice="cmn-latn-pinyin+f3").cache_key}) == 3
    with pytest.raises(ValueError, match="voice does not exist"):
        make_backend("espeak-ng", voice="zf_xiaobei")  # a Kokoro voice given to eSpeak NG


def test_cache_hits_do_no_work(tmp_path):
    cache = AudioCache(tmp_path)
    backend = CountingTone()
    first = cache.synthesize(backend, ["黑人", "白人", "黑人"])
    assert CountingTone.calls == 3 and [c for _, _, c in first] == [False, False, False]
    again = cache.synthesize(backend, ["黑人", "白人"])
    assert CountingTone.calls == 3 and [c for _, _, c in again] == [True, True]
    assert np.allclose(first[0][1], again[0][1])
    assert cache.key(backend, "黑人") != cache.key(ToneBackend(speed=1.5), "黑人")
    # keyed by what is said, so posts that read alike share the entry
    assert cache.synthesize(backend, ["黑~人"])[0][2] and CountingTone.calls == 3


def run_cloak(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "cloak.cli", *map(str, args)], capture_output=True,
                          text=True, **kwargs)


@pytest.mark.slow
def test_speak_resumes_and_reports_bad_records(tmp_path, sample_path):
    small = tmp_path / "small.jsonl"
    lines = sample_path.read_text(encoding="utf-8").splitlines()[:20]
    small.write_text("\n".join(lines[:8]) + "\n", encoding="utf-8")
    out = tmp_path / "speech"
    first = run_cloak("speak", "--in", small, "--out", out)  # a run that stopped after 8 records
    assert first.returncode == 0, first.stderr
    assert "synthesised 8" in first.stderr
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rerun = run_cloak("speak", "--in", small, "--out", out)
    assert "synthesised 12, cached 8" in rerun.stderr
    index = read_jsonl(out / "index.jsonl")
    assert len(index) == 20 and all(e["seconds"] > 0 for e in index)
    parallel = run_cloak("speak", "--in", small, "--out", tmp_path / "parallel", "--workers", 2)
    assert parallel.returncode == 0, parallel.stderr
    assert read_jsonl(tmp_path / "parallel" / "index.jsonl") == index  # same audio, any worker count
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "黑人"}\n{"text": ""}\n', encoding="utf-8")
    result = run_cloak("speak", "--in", bad, "--out", tmp_path / "x")
    assert result.returncode == 1 and "line 2: field 'text': is empty" in result.stderr
    missing = run_cloak("speak", "--in", small, "--out", out, "--backend", "kokoro-onnx")
    assert missing.returncode == 1 and "kokoro-onnx needs --model" in missing.stderr


def test_trimmed_features_cover_the_utterance_only(tiny_whisper):
    from speech.features import WhisperEncoder

    audio = ToneBackend().synthesize(["白人都是垃圾"])[0]  # 1.32 s at 16 kHz
    trimmed = WhisperEncoder(str(tiny_whisper)).encode(audio)
    padded = WhisperEncoder(str(tiny_whisper), mode="padded").encode(audio)
    assert trimmed.shape == padded.shape and trimmed.shape[1] == 64
    assert trimmed.shape[0] == pytest.approx(len(audio) / 16000 * 50, abs=1)
    with pytest.raises(ValueError, match="mode must be"):
        WhisperEncoder(str(tiny_whisper), mode="half")


@pytest.mark.slow
def test_synth_writes_cached_features(tmp_path, sample_path, tiny_whisper):
    small = tmp_path / "small.jsonl"
    small.write_text("\n".join(sample_path.read_text(encoding="utf-8").splitlines()[:5]) + "\n",
                     encoding="utf-8")
    out = tmp_path / "speech"
    result = run_cloak("synth", "--in", small, "--speech-out", out, "--whisper", tiny_whisper)
    assert result.returncode == 0, result.stderr
    assert "features encoded 5" in result.stderr
    again = run_cloak("synth", "--in", small, "--speech-out", out, "--whisper", tiny_whisper)
    assert "synthesised 0, cached 5" in again.stderr and "features encoded 0, features cached 5" in again.stderr
    from speech.features import FeatureCache

    entry = read_jsonl(out / "index.jsonl")[0]
    feats = FeatureCache(out / "features").get(entry["features"])
    assert feats.shape == (entry["frames"], 64)


@pytest.mark.skipif(not WEIGHTS, reason="set MMCLOAK_WEIGHTS to the folder `make weights` fills")
def test_real_kokoro_speech_is_understood_by_real_whisper():
    import whisper

    from speech.features import resample

    kokoro = make_backend("kokoro-onnx", os.path.join(WEIGHTS, "kokoro", "kokoro-v1.0.int8.onnx"))
    audio = resample(kokoro.synthesize(["白人都是垃圾"])[0], kokoro.sample_rate)
    model = whisper.load_model(os.path.join(WEIGHTS, "whisper-base.pt"))
    text = model.transcribe(audio, language="zh", fp16=False)["text"]
    assert text.strip("。，,. ") == "白人都是垃圾"


@pytest.mark.slow
def test_a_killed_speak_run_resumes(tmp_path, sample_path):
    import signal
    import time

    out = tmp_path / "speech"
    proc = subprocess.Popen([sys.executable, "-m", "cloak.cli", "speak", "--in", str(sample_path),
                             "--out", str(out)], stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(list((out / "audio").rglob("*.npz"))) < 40:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    done = len(list((out / "audio").rglob("*.npz")))
    assert 40 <= done < 300 and not (out / "index.jsonl").exists()
    rerun = run_cloak("speak", "--in", sample_path, "--out", out)
    assert rerun.returncode == 0, rerun.stderr
    assert f"synthesised {300 - done}, cached {done}" in rerun.stderr
    assert len(read_jsonl(out / "index.jsonl")) == 300


def test_a_long_post_is_spoken_up_to_the_limit():
    """A 1 MB post once asked numpy for 4 GiB; now only its first max_chars characters are spoken,
    and a post of that length and the long one share their audio (and cache key)."""
    tone = make_backend("tone", max_chars=40)
    post = "黑人都是垃圾，白人也是。" * 100_000
    assert len(post) > 1_000_000
    long_audio, = tone.synthesize([post])
    short_audio, = tone.synthesize([post[:40]])
    np.testing.assert_array_equal(long_audio, short_audio)
    cache = AudioCache.__new__(AudioCache)
    assert cache.key(tone, post) == cache.key(tone, post[:40]) != cache.key(make_backend("tone"), post)
    assert make_backend("tone").max_chars == 500


def test_text_functions_take_long_inputs():
    assert pinyin_syllables("heiren" * 20_000) == ["hei", "ren"] * 20_000
    assert pinyin_syllables("heirenx" * 1000) is None
    from speech.text import sentences

    pieces = sentences("黑" * 250_001)
    assert [len(p) for p in pieces[-2:]] == [100, 1] and len(pieces) == 2501
