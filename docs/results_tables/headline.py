"""README's headline table: the figures that answer the toolkit's question, each with its results page."""
from __future__ import annotations

from . import f3, mean, pct, share, with_interval

LEFT_OUT = ("fullwidth",)  # barely applies to Chinese posts: out of the means, as on the results pages


def protocol_so_far(v: dict) -> str:
    """Where the committed protocol stands: its choice on validation, until its test is read."""
    held = [name for name, c in v["candidates"].items() if c["claim"]["holds"]]
    c = v["candidates"][v["chosen"]]["claim"]
    verdict = f"the claim holds at {', '.join(held)}" if held else "no candidate setting meets the whole claim"
    return (f"on its validation split (one seed) {verdict}; "
            f"at the one chosen, MMBERT's homophone drop {f3(c['drop'])} against {f3(c['baseline_drop'])}, clean "
            f"{f3(c['clean'])} against {f3(c['baseline_clean'])}; its one test is still to run")


def protocol_result(v: dict) -> str:
    """The committed protocol's one test (``bench.mmbert_verdict --protocol``), plainly: met or not."""
    c, fusion = v["claim"], v["mixture_over_fusion"]
    return (f"under a protocol committed before its one test ({v['test_posts']:,} fresh posts, "
            f"{len(v['seeds'])} seeds), MMBERT's homophone drop {f3(c['drop'])} against the twin's "
            f"{f3(c['baseline_drop'])}, {share(c['ratio'], c['ratio_interval'])} of it (the goal: at most half); "
            f"clean {f3(c['clean'])} against {f3(c['baseline_clean'])}: the claim is "
            f"**{'met' if c['holds'] else 'not met'}** ({c['parts_met']} of 3 parts)"
            + (f"; fusion without experts loses {f3(fusion['baseline_drop'])}: the mixture "
               f"{'earns' if fusion['holds'] else 'does not earn'} its place" if fusion else "")
            + (f"; bert + augmentation with `cloak unveil` in front loses {f3(unveiled['drop']['homophone']['value'])} "
               f"to homophones (clean {f3(unveiled['macro_f1']['clean']['value'])}), on cloaks made by the tables "
               "it reads back with"
               if (unveiled := v["models"].get("bert_unveil")) else ""))


def headline_rows(r) -> list[tuple[str, str, str, str]]:
    """(question, answer, link text, link) rows."""
    realism = r("realism.json")
    default = realism["settings"]["lexicon+mined/poster"]
    plain = [v for name, v in default["victims"].items() if name != realism["augmented"]]
    drop = mean(mean(a["drop_f1"] for op, a in v["attacks"].items() if op not in LEFT_OUT) for v in plain)
    augmentation = r("cloak_augmentation.json")["summary"]
    tox = r("external_defences.json")["sets"]["toxicloakcn"]["detectors"]
    seen = r("seen_in_training.json")["ops"]
    flattery = mean(e["unseen"]["drop_accuracy"] for e in seen.values()) / mean(e["seen"]["drop_accuracy"]
                                                                                 for e in seen.values())
    flipped = [v["values"]["10"]["success_rate"] for v in r("search_candidates.json")["victims"].values()
               if "10" in v["values"]]
    first, masked = r("mmbert_e5_verdict.json")["claim"], r("mmbert_e5_term80_verdict.json")["claim"]  # test-tuned
    restored = r("unveil.json")
    shares = {op: v["terms"]["share"] for op, v in restored["styles"].items()}
    short = sorted((op for op, share in shares.items() if share < 0.9), key=shares.get)
    one_reading = {op: v["read_back_by_cloak"]["neither"]["share"] for op, v in r("unveil_scorers.json")["ops"].items()}
    defence = r("unveil_defence.json")["views"]
    unveiled = {name: {row["row"]: row for row in view["rows"]} for name, view in defence.items()}
    seen_rows, held_rows = unveiled["seen"], unveiled["held out"]
    c2tu = r("c2tu_sets.json")["sets"]

    def method(name: str) -> dict:
        return {s: c2tu[s]["methods"][name] for s in c2tu}

    ours, lexicon = method("cloak unveil --lexicon, chosen on COLD dev"), method("cloak unveil --lexicon (the set's)")
    best, bert = method("C²TU, LLM filter (Baichuan2-13B), iterated"), method("C²TU, BERT filter, iterated")
    llm = r("llm_detector_test.json")
    llm_drops = [d["value"] for d in llm["drop"].values()]
    return [
        ("How much does a detector lose when posters cloak? (7 conventional detectors, COLD test, each op alone)",
         f"{f3(drop)} macro-F1 on average; the cloaks reach {pct(default['coverage_offensive'], 0)} of the "
         "offensive posts", "Attacks", "docs/results/attacks.md#realism-of-the-attacks"),
        ("Does training on cloaked posts help? (tfidf-lr trained on COLD train, ToxiCloakCN's real homophone "
         "cloaks, toxic recall they take)",
         f"a little, at a cost: cloaking takes {f3(tox['none']['recall_lost']['difference'])}; trained on cloaked "
         f"copies it loses {f3(tox['copies']['recall_lost']['difference'])} but calls "
         f"{f3(tox['copies']['fp_gold_over_none']['difference'])} more non-toxic posts toxic "
         f"(`--no-balance`: {f3(tox['copies, no balance']['recall_lost']['difference'])}, "
         f"{f3(tox['copies, no balance']['fp_gold_over_none']['difference'])}); `cloak unveil` in front instead loses "
         f"{f3(tox['unveil']['recall_lost']['difference'])} at {f3(tox['unveil']['fp_gold_over_none']['difference'])}, "
         "the recipe C²TU's COLD dev cloaks choose. On the project's own cloaks copies win back "
         f"{pct(augmentation['augmented_closes_mean'], 0)} of what cloaking takes", "Cloaking",
         "docs/results/cloak.md#every-defence-on-cloaks-others-made-toxicloakcn"),
        ("Is a detector judged by the cloaks it was trained on judged fairly?",
         f"no: unseen cloaks take {flattery:.1f}x the accuracy its own take", "Attacks",
         "docs/results/attacks.md#an-augmented-detector-attacked-by-its-own-ops"),
        ("Can a search that picks its cloaks against the detector break it?",
         f"it flips {pct(min(flipped), 0)} to {pct(max(flipped), 0)} of the posts a detector gets right", "Attacks",
         "docs/results/attacks.md#the-search-attack"),
        ("Can `cloak unveil` read the cloaks back? (COLD test, each op alone, share of cloaked terms)",
         f"{pct(min(shares.values()), 0)} to {pct(max(shares.values()), 0)}; under 90%: "
         + ", ".join(f"{op} {pct(shares[op], 0)}" for op in short)
         + f"; {pct(restored['clean']['unchanged']['share'], 1)} of clean posts left as they are. The "
         + " and ".join(one_reading) + " misses are mostly cloaks that read as something else too (其实 for 歧视, zb "
         "for 资本 or 这帮); on COLD dev, those that do not are read back "
         + " and ".join(pct(v, 0) for v in one_reading.values()),
         "Cloaking", "docs/results/cloak.md#cloak-unveil-the-projects-own-cloaks-read-back"),
        ("Can `cloak unveil` read back cloaks others made? (C²TU's test sets, sentence-level correction F1)",
         f"with no weights, given the set's lexicon: on C²TU's COLD test posts {f3(lexicon['cold']['test']['f1'])} "
         f"at the defaults, {f3(ours['cold']['test']['f1'])} with the settings chosen on its COLD dev posts, "
         f"against C²TU's {f3(best['cold']['test']['f1'])} (Baichuan2-13B filter) and "
         f"{f3(bert['cold']['test']['f1'])} (BERT filter); on ToxiCloakCN {f3(lexicon['toxicloakcn']['all']['f1'])} "
         f"and {f3(ours['toxicloakcn']['all']['f1'])}, against {f3(best['toxicloakcn']['all']['f1'])} and "
         f"{f3(bert['toxicloakcn']['all']['f1'])}",
         "Cloaking", "docs/results/cloak.md#cloak-unveil-on-c2tus-test-sets-beside-every-published-method"),
        ("Does `cloak unveil` in front of a detector take the cloaks off? (tfidf-lr, mean over the cloak attacks)",
         f"its drop falls from {f3(seen_rows['victim_plain']['mean_drop'])} to "
         f"{f3(seen_rows['victim_plain+unveil']['mean_drop'])} ({f3(held_rows['victim_plain']['mean_drop'])} to "
         f"{f3(held_rows['victim_plain+unveil']['mean_drop'])} on cloaks its settings were not chosen on), clean "
         f"{seen_rows['victim_plain+unveil']['against']['clean_change']:+.3f}; the search, adapting to it, still "
         f"flips {pct(seen_rows['victim_plain+unveil']['search']['search']['success_rate'], 0)}", "Attacks",
         "docs/results/attacks.md#cloak-unveil-in-front-of-a-detector-seen-cloaks"),
        ("Can a small LLM tell hateful posts, cloaked or not? (Qwen2.5-Coder-0.5B, its prompt and threshold chosen "
         "on validation)",
         f"barely: macro-F1 {with_interval(llm['macro_f1']['clean'])} "
         f"on {llm['test_posts']:,} fresh COLD test posts, and no lower on their cloaks (drops "
         f"{min(llm_drops):+.3f} to {max(llm_drops):+.3f})",
         "Detectors", "docs/results/detectors.md#the-llm-victim-as-a-detector-on-the-fresh-test-posts-read-once"),
        ("Does MMBERT (text + speech + glyphs) lose less than its text-only twin under homophones? (3 seeds)",
         protocol_result(r("mmbert_claim_verdict.json")) + "; the earlier runs chose their setting on their test posts"
         if r.has("mmbert_claim_verdict.json") else
         f"as Xue et al. train it, {f3(first['mmbert_homophone_drop'])} against {f3(first['twin_homophone_drop'])}; "
         f"with whole terms masked, {f3(masked['mmbert_homophone_drop'])} against "
         f"{f3(masked['twin_homophone_drop'])} (clean {f3(masked['mmbert_clean_f1'])} against "
         f"{f3(masked['twin_clean_f1'])}); that setting was chosen on the test posts, so the claim is being settled "
         f"again under a protocol committed before the test: {protocol_so_far(r('mmbert_claim_validation.json'))}",
         "the MMBERT study", "docs/studies/mmbert.md"),
    ]
