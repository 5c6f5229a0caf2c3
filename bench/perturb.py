"""Benchmark of ``cloak`` perturbation: speed, realism and memory, against JioNLP and nlpcda.

Run from the repository root::

    .venv/bin/python -m bench.perturb            # full run (a few minutes), writes bench/results/perturb.json
    .venv/bin/python -m bench.perturb --quick    # smoke run on smaller sizes

What it measures (all on COLD, read with ``cloak.convert.read_dataset``):

1. Speed, texts/s on COLD test: each op alone (targets=lexicon), homophone with targets=all, the default
   mix, and in the same process, back to back on the same texts, JioNLP's ``homophone_substitution``
   and nlpcda's ``Homophone``. Every runner gets one untimed warm-up pass (its outputs feed the realism
   figures) and then ``--rounds`` timed samples of about a second or more each (the pass repeated),
   interleaved round by round so that noise on this shared machine hits every runner alike; best and
   median rates are reported, ratios from both and within each round.
2. Realism on COLD test: for homophone (and radical) edits, the share of substituted Han characters
   whose new character can be read with the replaced character's toneless syllable (in context, from
   ``lazy_pinyin`` of the source text); for every op, the share of introduced Han characters that are
   among ``common_chars()``; per op, texts changed and edits per changed text. JioNLP and nlpcda get
   the same character-level measures on their outputs, aligned to their inputs.
3. Memory: ``cloak perturb`` as a child process over 1,000,000 records (COLD train, cycled), peak
   resident memory of the child (``ru_maxrss`` of a fresh wrapper process's children, and VmHWM polled
   from /proc), wall time and records/s.
4. ``--workers 2`` against ``--workers 1`` on a 100,000-record file: throughput and byte-identity.
5. The whole command against the engine: ``cloak perturb --ops homophone --targets all --rate 0.3`` on
   50,000 COLD train posts (cycled) as a child process, start to exit, as a user runs it (one worker per
   CPU) and with ``--workers 1``, beside the same perturber in this
   process on the same posts (its first pass, memos empty as the command has them, and a warm pass),
   three rounds back to back: the figure a user sees next to the engine's.
6. Realism of every style the ops' ``examples`` show (``pinyin:mode=word:tones=marks``, ``radical``,
   ``homophone:common_share=0`` ...) on COLD test, lexicon targets: texts changed, same-sound share
   (``homophone`` and ``radical`` edits), common-character share.

Speed is measured here, realism in ``bench/perturb_realism.py``, the child processes (3-5) in
``bench/perturb_command.py``. The homophone tables are built into a fresh temporary cache
(``MMCLOAK_CACHE``) so that the figures are for the code as it is, never for tables a previous version
left in ``~/.cache/mmcloak``.
"""
from __future__ import annotations

import contextlib
import io
import os
import statistics
import tempfile
import time

from bench.common import MIX, REPO, RESULTS, cold_records, log, machine_info, parser, ratio, write_result
from bench.perturb_command import bench_cli, bench_command_vs_engine
from bench.perturb_realism import Reader, realism_cloak, realism_peer, realism_styles

SPEED_TARGET_TEXTS_PER_S = 5000
SPEED_TARGET_VS_JIONLP = 100
REALISM_TARGET = 0.95
MIN_SAMPLE_S = 1.0  # each timed sample of a runner lasts at least about this long
OURS, PEERS = ("homophone", "homophone[all]", "mix"), ("jionlp", "nlpcda")


@contextlib.contextmanager
def quiet():
    """Silence the banners and progress lines that JioNLP, nlpcda and jieba print."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


# ------------------------------------------------------------------------------------------------
# 1 + 2: speed and realism in process


def our_runners(texts: list[str]) -> tuple[list[tuple[str, str, str]], dict, dict]:
    """(label, ops, targets) of every configuration timed (each op alone, homophone on every word, the
    default mix), a runner for each (a pass over ``texts``) and what each is."""
    from cloak import Perturber, available_ops

    configs: list[tuple[str, str, str]] = [(op, op, "lexicon") for op in sorted(available_ops())]
    configs.append(("homophone[all]", "homophone", "all"))
    configs.append(("mix", MIX, "lexicon"))
    runners, meta = {}, {}
    for label, ops, targets in configs:
        p = Perturber(ops=ops, targets=targets, seed=0)
        t = time.perf_counter()
        p.prepare()
        meta[label] = {"ops": ops, "targets": targets, "rate": p.rate,
                       "prepare_s": round(time.perf_counter() - t, 3)}

        def run(p=p):
            return [p(text, key=i) for i, text in enumerate(texts)]
        runners[label] = run
    return configs, runners, meta


def peer_runners(texts: list[str], meta: dict) -> dict:
    """JioNLP's ``homophone_substitution`` and nlpcda's ``Homophone``, loaded (into ``meta``, with what each is)."""
    log("loading JioNLP (its first call loads data, ~15 s) and nlpcda ...")
    with quiet():
        import logging

        import jieba
        jieba.setLogLevel(logging.WARNING)  # nlpcda builds jieba's prefix dictionary and says so
        t = time.perf_counter()
        import jionlp
        jionlp.homophone_substitution("白人都是垃圾", seed=1)
        meta["jionlp"] = {"call": "jionlp.homophone_substitution(text, seed=i)",
                          "defaults": "augmentation_num=3, homo_ratio=0.02, allow_mispronounce=True",
                          "note": "one call returns up to 3 augmented texts; rate counts input texts",
                          "prepare_s": round(time.perf_counter() - t, 3)}
        t = time.perf_counter()
        import nlpcda
        nl = nlpcda.Homophone(create_num=2, change_rate=0.3, seed=1)
        nl.replace("白人都是垃圾")
        meta["nlpcda"] = {"call": "nlpcda.Homophone(create_num=2, change_rate=0.3, seed=1).replace(text)",
                          "note": "returns [input, one augmented text]",
                          "prepare_s": round(time.perf_counter() - t, 3)}
    return {"jionlp": lambda: [jionlp.homophone_substitution(text, seed=i) for i, text in enumerate(texts)],
            "nlpcda": lambda: [nl.replace(text) for text in texts]}


def freeze_gc() -> dict:
    """JioNLP and nlpcda load millions of long-lived objects; every full garbage collection then walks
    them, a cost that lands on whichever runner happens to allocate. Freezing what is loaded moves it out
    of the collector's way, for every runner alike."""
    import gc

    gc.collect()
    gc.freeze()
    return {"frozen_objects": gc.get_freeze_count()}


def warm_up(runners: dict, texts: list[str], meta: dict) -> tuple[dict, dict]:
    """A pass of each runner: memos fill, lazily loaded tables load; its outputs are the realism sample.
    Returns them and the passes a timed sample repeats, so that it lasts about MIN_SAMPLE_S: the fast
    runners are not timed over a few tens of milliseconds (a best-of over such short samples would be
    optimistic next to JioNLP's seconds-long passes, which always absorb some of the machine's noise)."""
    outputs, reps = {}, {}
    for label, run in runners.items():
        t = time.perf_counter()
        with quiet():
            outputs[label] = run()
        dt = time.perf_counter() - t
        reps[label] = max(1, round(MIN_SAMPLE_S / dt))
        meta[label]["warmup_texts_per_s"] = round(len(texts) / dt, 1)
        meta[label]["passes_per_sample"] = reps[label]
        log(f"  warm-up {label:15} {meta[label]['warmup_texts_per_s']:>10,.0f} texts/s")
    return outputs, reps


def timed_rates(runners: dict, reps: dict, n_texts: int, rounds: int) -> dict[str, list[float]]:
    """Texts a second of every runner, a sample each round, the runners interleaved round by round so
    that noise on this shared machine hits every runner alike."""
    rates: dict[str, list[float]] = {label: [] for label in runners}
    for r in range(rounds):
        for label, run in runners.items():
            with quiet():
                t = time.perf_counter()
                for _ in range(reps[label]):
                    run()
                dt = time.perf_counter() - t
            rates[label].append(reps[label] * n_texts / dt)
        log(f"  round {r + 1}/{rounds}: " + ", ".join(
            f"{k} {v[-1]:,.0f}" for k, v in rates.items() if v and k in (*OURS, *PEERS)))
    return rates


def realism_of(configs: list, outputs: dict, texts: list[str]) -> dict:
    """The realism of every configuration's warm-up outputs and of the peers'."""
    reader = Reader()
    realism = {label: realism_cloak(outputs[label], reader) for label, *_ in configs}
    realism["jionlp"] = realism_peer(list(zip(texts, outputs["jionlp"])), reader)
    # nlpcda strips the text and drops newlines first; its first output is that input, unchanged.
    realism["nlpcda"] = realism_peer(
        [(t.replace("\n", "").strip(), out[1:]) for t, out in zip(texts, outputs["nlpcda"])], reader)
    realism["_method"] = {
        "homophone_sound": "per homophone edit with len(src) == len(dst), each position where the "
                           "character changed and the old one is Han: the old character's toneless "
                           "reading from lazy_pinyin(source_text) at that position (else its first "
                           "reading); a match if any reading of the new character, tone digits "
                           "stripped, equals it. Peers: their outputs aligned to the input by position.",
        "common_chars": "share of Han characters of each edit's dst that are in cloak.hanzi.common_chars() "
                        "(3,500); changed_positions_only skips dst characters equal to the src character "
                        "at the same position (equal-length edits). Peers: changed positions.",
        "lazy_pinyin_misaligned_texts": reader.misaligned,
    }
    return realism


def bench_in_process(texts: list[str], rounds: int) -> tuple[dict, dict, dict, dict]:
    """Speed of every runner (best, median and all rates), the median over rounds of our rate over a
    peer's within the round (the least sensitive to noise that comes and goes), what the garbage
    collector was spared, and the realism of every runner's outputs."""
    configs, runners, meta = our_runners(texts)
    runners.update(peer_runners(texts, meta))
    gc_info = freeze_gc()
    outputs, reps = warm_up(runners, texts, meta)
    rates = timed_rates(runners, reps, len(texts), rounds)
    speed = {label: {**meta[label], "texts_per_s_best": round(max(rs), 1),
                     "texts_per_s_median": round(statistics.median(rs), 1),
                     "texts_per_s_all": [round(x, 1) for x in rs], "timed_passes": len(rs)}
             for label, rs in rates.items()}
    per_round = {f"{ours}_vs_{peer}": round(statistics.median(a / b for a, b in zip(rates[ours], rates[peer])), 2)
                 for ours in OURS for peer in PEERS}
    return speed, per_round, gc_info, realism_of(configs, outputs, texts)


# ------------------------------------------------------------------------------------------------
# figures, targets and the table


def ratios_of(speed: dict, per_round: dict) -> dict:
    best = {k: v["texts_per_s_best"] for k, v in speed.items()}
    med = {k: v["texts_per_s_median"] for k, v in speed.items()}
    hom, hom_all, jio, nlp = "homophone", "homophone[all]", "jionlp", "nlpcda"
    return {
        "homophone_lexicon_vs_jionlp": ratio(best[hom], best[jio]),
        "homophone_all_vs_jionlp": ratio(best[hom_all], best[jio]),
        "homophone_lexicon_vs_nlpcda": ratio(best[hom], best[nlp]),
        "homophone_all_vs_nlpcda": ratio(best[hom_all], best[nlp]),
        "mix_vs_jionlp": ratio(best["mix"], best[jio]),
        "median_based": {
            "homophone_lexicon_vs_jionlp": ratio(med[hom], med[jio]),
            "homophone_all_vs_jionlp": ratio(med[hom_all], med[jio]),
            "homophone_lexicon_vs_nlpcda": ratio(med[hom], med[nlp]),
            "homophone_all_vs_nlpcda": ratio(med[hom_all], med[nlp]),
        },
        "per_round_median": per_round,
        "note": "top-level ratios divide best rates; median_based divides median rates; per_round_median "
                "is the median over rounds of the ratio within a round",
    }


def targets_of(result: dict) -> tuple[dict, dict]:
    """The targets on best rates, and the speed targets on median rates (this machine is shared and
    noisy: best-of is optimistic)."""
    speed, ratios, realism = result["speed"], result["ratios"], result["realism"]
    best = {k: v["texts_per_s_best"] for k, v in speed.items()}
    med = {k: v["texts_per_s_median"] for k, v in speed.items()}
    hom, hom_all = "homophone", "homophone[all]"
    command = result["command_vs_engine"]

    def sound(label):
        return (realism[label].get("homophone_sound") or {}).get("share")

    def common(label):
        return realism[label]["common_chars"]["share"]

    targets = {
        "homophone_lexicon_100x_jionlp": (ratios["homophone_lexicon_vs_jionlp"] or 0) >= SPEED_TARGET_VS_JIONLP,
        "homophone_all_100x_jionlp": (ratios["homophone_all_vs_jionlp"] or 0) >= SPEED_TARGET_VS_JIONLP,
        "homophone_lexicon_5000_texts_per_s": best[hom] >= SPEED_TARGET_TEXTS_PER_S,
        "homophone_all_5000_texts_per_s": best[hom_all] >= SPEED_TARGET_TEXTS_PER_S,
        "homophone_lexicon_sound_95pct": (sound(hom) or 0) >= REALISM_TARGET,
        "homophone_all_sound_95pct": (sound(hom_all) or 0) >= REALISM_TARGET,
        "homophone_lexicon_common_95pct": (common(hom) or 0) >= REALISM_TARGET,
        "homophone_all_common_95pct": (common(hom_all) or 0) >= REALISM_TARGET,
        "homophone_all_command_5000_records_per_s": command["whole_command"]["records_per_s_best"]
        >= SPEED_TARGET_TEXTS_PER_S,
        "homophone_all_command_workers_1_5000_records_per_s":
        command["whole_command_workers_1"]["records_per_s_best"] >= SPEED_TARGET_TEXTS_PER_S,
        "memory_under_500mb": result["memory"]["meets_target"],
        "workers_byte_identical": result["workers"]["byte_identical"],
    }
    by_median = {
        "homophone_lexicon_100x_jionlp": (ratios["median_based"]["homophone_lexicon_vs_jionlp"] or 0)
        >= SPEED_TARGET_VS_JIONLP,
        "homophone_all_100x_jionlp": (ratios["median_based"]["homophone_all_vs_jionlp"] or 0)
        >= SPEED_TARGET_VS_JIONLP,
        "homophone_lexicon_5000_texts_per_s": med[hom] >= SPEED_TARGET_TEXTS_PER_S,
        "homophone_all_5000_texts_per_s": med[hom_all] >= SPEED_TARGET_TEXTS_PER_S,
    }
    return targets, by_median


def pct(x):
    return f"{100 * x:5.1f}%" if x is not None else "    - "


def print_speed_table(result: dict) -> None:
    speed, realism, ratios = result["speed"], result["realism"], result["ratios"]
    per_round = ratios["per_round_median"]
    machine = result["machine"]
    print(f"\nCOLD test, {result['data']['texts']:,} texts; best of {result['settings']['rounds']} samples of "
          f">= ~{MIN_SAMPLE_S:g} s (texts/s); {machine['cpu_count']} CPUs, Python {machine['python']}")
    print(f"{'runner':16}{'texts/s':>11}{'median':>11}{'changed':>9}{'edits/chg':>10}"
          f"{'sound':>8}{'common':>8}")
    for label, s in speed.items():
        r = realism[label]
        per = r.get("mean_edits_per_changed_text", r.get("mean_changed_chars_per_changed_output"))
        print(f"{label:16}{s['texts_per_s_best']:>11,.0f}{s['texts_per_s_median']:>11,.0f}"
              f"{pct(r['texts_changed_share']):>9}{per if per is not None else '-':>10}"
              f"{pct((r.get('homophone_sound') or {}).get('share')):>8}{pct(r['common_chars']['share']):>8}")
    print("(peers: edits/chg = changed characters per changed output)\n")
    for peer, name in (("jionlp", "JioNLP"), ("nlpcda", "nlpcda")):
        print(f"homophone / {name}: lexicon {ratios[f'homophone_lexicon_vs_{peer}']}x "
              f"(median {ratios['median_based'][f'homophone_lexicon_vs_{peer}']}x, per round "
              f"{per_round[f'homophone_vs_{peer}']}x), all {ratios[f'homophone_all_vs_{peer}']}x "
              f"(median {ratios['median_based'][f'homophone_all_vs_{peer}']}x, per round "
              f"{per_round[f'homophone[all]_vs_{peer}']}x)")


def print_table(result: dict, out) -> None:
    print_speed_table(result)
    print(f"\nstyles (lexicon targets): {'style':44}{'changed':>9}{'sound':>8}{'common':>8}")
    for spec, r in result["realism_styles"].items():
        print(f"{'':26}{spec:44}{pct(r['texts_changed_share']):>9}"
              f"{pct((r.get('homophone_sound') or {}).get('share')):>8}{pct(r['common_chars']['share']):>8}")
    c, memory, workers = result["command_vs_engine"], result["memory"], result["workers"]
    print(f"\n{c['command']} on {c['records']:,} COLD posts: whole command "
          f"{c['whole_command']['records_per_s_best']:,.0f} records/s (median "
          f"{c['whole_command']['records_per_s_median']:,.0f}; --workers 1: "
          f"{c['whole_command_workers_1']['records_per_s_best']:,.0f}); the engine in process: "
          f"first pass {c['engine_first_pass']['records_per_s_best']:,.0f}/s, warm "
          f"{c['engine_warm']['records_per_s_best']:,.0f}/s")
    print(f"memory: {memory['records']:,} records, peak RSS {memory['peak_rss_mb']} MB, "
          f"{memory['wall_s']} s, {memory['records_per_s']:,.0f} records/s")
    print(f"workers: {workers['records']:,} records, 1 -> {workers['workers_1']['records_per_s_best']:,.0f}/s, "
          f"2 -> {workers['workers_2']['records_per_s_best']:,.0f}/s (x{workers['speedup_best']}), "
          f"byte-identical: {workers['byte_identical']}")
    print("targets (best rates): " + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in result["targets"].items()))
    print("speed targets on median rates: " + ", ".join(
        f"{k}={'yes' if v else 'NO'}" for k, v in result["speed_targets_by_median"].items()))
    print(f"wrote {out} in {result['elapsed_s']} s")


# ------------------------------------------------------------------------------------------------


def measure_all(args, sizes: dict) -> dict:
    """Every measurement, with the homophone tables in a fresh temporary cache unless ``--user-cache``."""
    with contextlib.ExitStack() as stack:
        if not args.user_cache:
            os.environ["MMCLOAK_CACHE"] = stack.enter_context(tempfile.TemporaryDirectory(prefix="mmcloak-cache-"))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
        info = machine_info(("jionlp", "nlpcda", "pypinyin", "jieba", "numpy", "ahocorasick-rs"))
        test, train = cold_records(args.cold, "test"), cold_records(args.cold, "train")
        texts = [r["text"] for r in test][:sizes["texts"]]
        log(f"COLD: {len(test):,} test texts ({len(texts):,} used), {len(train):,} train texts")
        speed, per_round, gc_info, realism = bench_in_process(texts, sizes["rounds"])
        styles = realism_styles(texts, Reader())
        command = bench_command_vs_engine(train, sizes["command"], sizes["command_rounds"], env)
        memory, workers = bench_cli(train, sizes["memory"], sizes["workers"], sizes["worker_rounds"], env)
    return {
        "benchmark": "bench/perturb.py", "quick": args.quick, "machine": info,
        "data": {"cold_dir": os.path.abspath(args.cold), "test_texts_total": len(test),
                 "texts": len(texts), "train_texts": len(train)},
        "settings": {"gc_frozen_before_timing": gc_info, "seed": 0, "key": "i (index of the text)",
                     "rounds": sizes["rounds"], "mix": MIX, "min_sample_s": MIN_SAMPLE_S,
                     "table_cache": "user" if args.user_cache else "fresh temporary",
                     # cloak's homophone character table is built in frozenset order (see the report):
                     # with a fresh cache, outputs depend on the hash seed of the process that built it.
                     "python_hash_seed": os.environ.get("PYTHONHASHSEED", "random")},
        "speed": speed, "ratios": ratios_of(speed, per_round), "realism": realism, "realism_styles": styles,
        "command_vs_engine": command, "memory": memory, "workers": workers}


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "perturb.json", cold=True)
    ap.add_argument("--quick", action="store_true", help="Smaller sizes, for a smoke run.")
    ap.add_argument("--rounds", type=int, default=None, help="Timed passes per runner [7; quick 3].")
    ap.add_argument("--user-cache", action="store_true",
                    help="Use the user's table cache instead of a fresh temporary one.")
    args = ap.parse_args()
    sizes = ({"texts": 1000, "memory": 100_000, "workers": 20_000, "command": 10_000, "worker_rounds": 1,
              "command_rounds": 1} if args.quick else
             {"texts": None, "memory": 1_000_000, "workers": 100_000, "command": 50_000, "worker_rounds": 2,
              "command_rounds": 3})
    sizes["rounds"] = args.rounds or (3 if args.quick else 7)
    started = time.perf_counter()
    result = measure_all(args, sizes)
    result["targets"], result["speed_targets_by_median"] = targets_of(result)
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    write_result(args.out, result, indent=2)
    print_table(result, args.out)


if __name__ == "__main__":
    main()
