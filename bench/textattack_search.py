"""TextAttack's side of ``bench.search_attack``; runs in TextAttack's own virtual environment.

TextAttack 0.3.11's greedy search with deletion importance (``GreedyWordSwapWIR("delete")``) and its
``ChineseMorphonymCharacterSwap``, the constraints of its Chinese recipe (no word modified twice, no
stop word modified), untargeted against the gold label with a query budget, on one of our saved
victims (loaded with ``attacks.load_victim`` and wrapped by ``attacks.textattack_bridge.VictimModelWrapper``,
which adds up the seconds spent inside it). Writes one JSON: a result per post (status, queries, adversarial
text), the attack loop's wall time and the part of it spent inside the victim. Run from the repository root in TextAttack's virtual environment (``make
.venv-textattack/.installed``; ``bench.search_attack`` runs it)::

    NLTK_DATA=DIR .venv-textattack/bin/python -m bench.textattack_search \\
        --victim DIR --data posts.jsonl --budget 200 --out result.json
"""
from __future__ import annotations

import argparse
import json
import string
import time

STATUS = {"SuccessfulAttackResult": "success", "FailedAttackResult": "failure",
          "SkippedAttackResult": "skipped", "MaximizedAttackResult": "failure"}


def textattack_search(model, budget: int):
    import textattack
    from textattack.constraints.pre_transformation import RepeatModification, StopwordModification
    from textattack.goal_functions import UntargetedClassification
    from textattack.search_methods import GreedyWordSwapWIR
    from textattack.shared.data import CHN_STOPWORD
    from textattack.transformations import ChineseMorphonymCharacterSwap

    goal = UntargetedClassification(model, query_budget=budget)
    constraints = [RepeatModification(), StopwordModification(stopwords=CHN_STOPWORD | set(string.punctuation))]
    return textattack.Attack(goal, constraints, ChineseMorphonymCharacterSwap(), GreedyWordSwapWIR("delete"))


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.textattack_search", description=__doc__.split("\n\n")[0])
    ap.add_argument("--victim", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import jieba
    import textattack

    from attacks import load_victim
    from attacks.textattack_bridge import VictimModelWrapper

    with open(args.data, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    model = VictimModelWrapper(load_victim(args.victim))
    attack = textattack_search(model, args.budget)
    jieba.initialize()  # its word splitter's dictionary (0.8 s), loaded before the clock as our word matcher is
    results = []
    started = time.perf_counter()
    for record in records:
        result = attack.attack(record["text"], int(record["label"]))
        results.append({"id": record["id"], "status": STATUS[type(result).__name__], "queries": result.num_queries,
                        "text": result.perturbed_result.attacked_text.text})
    seconds = time.perf_counter() - started
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"textattack": textattack.__version__ if hasattr(textattack, "__version__") else "0.3.11",
                   "seconds": seconds, "victim_seconds": model.seconds, "results": results},
                  f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
