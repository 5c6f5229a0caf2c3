"""Benchmark of MMBERT's frozen vision table from open_clip: seconds to build it for the whole vocabulary.

Run from the repository root in the venv that has open_clip (``make test`` or ``make bench-mmbert``
makes it): ``.venv-open-clip/bin/python bench.vision_table`` (``--quick`` for a smoke run); writes
``bench/results/vision_table.json``.

The vocabulary is MMBERT's own (bert-base-chinese's 21,128 entries plus emoji, ``mmbert.build_tokenizer``)
and the encoder open_clip's ``ViT-B-32`` with random weights (seeded): the same architecture and so
the same cost as ``pretrained: laion2b_s34b_b79k`` or ``openai``, which this machine cannot download.
The table is built by the code ``mmbert train --stage 1 --vision open_clip:model=ViT-B-32:...`` runs
(``mmbert.vision.vision_table``), and its time split into drawing the glyphs, open_clip's transform and
the ViT's forward passes.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time

import torch

from bench.common import RESULTS, machine_info, parser, write_result
from mmbert.tokenization import build_tokenizer, vocabulary
from mmbert.vision import OpenCLIP, drawable, vision_table


class TimedOpenCLIP(OpenCLIP):
    """OpenCLIP whose ``encode`` also adds up the time of open_clip's transform and of the forward pass."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = {"transform": 0.0, "forward": 0.0}
        self.pictures = 0

    def encode(self, images):
        start = time.perf_counter()
        pixels = self.pixels(images)
        middle = time.perf_counter()
        features = self.model.encode_image(pixels)
        self.seconds["transform"] += middle - start
        self.seconds["forward"] += time.perf_counter() - middle
        self.pictures += len(images)
        return features


def main() -> None:
    ap = parser(__doc__, out=RESULTS / "vision_table.json")
    ap.add_argument("--model", default="ViT-B-32", help="open_clip model name.")
    ap.add_argument("--pretrained", default=None, help="Tag or file (default: random weights, the same cost).")
    ap.add_argument("--batch-size", type=int, default=64, help="Glyphs a forward pass (vision_table's default).")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads (default: every core).")
    ap.add_argument("--quick", action="store_true", help="The first 1,000 vocabulary entries only.")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    machine = machine_info(("torch", "torchvision", "open_clip_torch", "transformers", "pillow"))

    tokens = vocabulary(build_tokenizer())[:1000 if args.quick else None]
    start = time.perf_counter()
    encoder = TimedOpenCLIP(args.model, args.pretrained)
    load_seconds = time.perf_counter() - start

    start, cpu_start = time.perf_counter(), time.process_time()
    table = vision_table(tokens, encoder, batch_size=args.batch_size)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start

    drawn = sum(drawable(t) for t in tokens)
    parameters = sum(p.numel() for p in encoder.model.visual.parameters())
    result = {
        "benchmark": "bench/vision_table.py", "quick": args.quick,
        "command": " ".join([".venv-open-clip/bin/python -m bench.vision_table", *sys.argv[1:]]),
        "machine": {**machine, "torch_threads": torch.get_num_threads(), "loadavg_at_end": os.getloadavg()},
        "encoder": {**encoder.source, "visual_parameters": parameters, "weights": args.pretrained or "random"},
        "vocabulary": {"entries": len(tokens), "drawn": drawn, "special (zero rows)": len(tokens) - drawn,
                       "distinct pictures": encoder.pictures},
        "table": {"shape": list(table.shape), "dtype": str(table.dtype).removeprefix("torch."),
                  "megabytes": round(table.numel() * table.element_size() / 2**20, 1)},
        "seconds": {"load encoder": round(load_seconds, 2), "vision table": round(seconds, 1),
                    "of which draw glyphs": round(seconds - sum(encoder.seconds.values()), 1),
                    "of which open_clip transform": round(encoder.seconds["transform"], 1),
                    "of which ViT forward": round(encoder.seconds["forward"], 1),
                    # what the process ran on the CPUs: on a shared machine the wall time above also holds
                    # the other processes' turns, this does not
                    "CPU (all threads)": round(cpu_seconds, 1)},
        "pictures_per_second": round(encoder.pictures / seconds, 1),
        "peak_rss_megabytes": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    write_result(args.out, result)
    print(json.dumps({k: result[k] for k in ("vocabulary", "seconds", "pictures_per_second")}, ensure_ascii=False))


if __name__ == "__main__":
    main()
