"""The routing analysis of the paper's Fig. 3: mean routing weight per layer per expert, grouped by the
records' cloaking op, as a JSON table and a PNG heat map."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np

from cloak.io import write_atomic

from .inference import infer, op_groups


def routing_table(records: Sequence[dict], routing: np.ndarray, experts: Sequence[str]) -> dict:
    """{"experts", "layers", "groups": {group: {"n", "weights": [[mean weight per expert] per layer]}}}
    from per-record routing (n, layers, experts)."""
    rows: dict[str, list[int]] = {"all": list(range(len(records)))}
    for i, record in enumerate(records):
        for group in op_groups(record):
            rows.setdefault(group, []).append(i)
    return {"experts": list(experts), "layers": int(routing.shape[1]),
            "groups": {g: {"n": len(r), "weights": routing[r].mean(0).round(4).tolist()} for g, r in rows.items()}}


def plot_routing(table: dict, path: str) -> None:
    """One heat map per group (layers down, experts across), on one colour scale spanning the weights
    seen (routing differences are a few hundredths; a 0-1 scale would hide them), its range written on
    the colour bar. Cells are drawn as shapes, not as an image: a report's page, whose policy loads no
    images, shows them."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm

    groups = list(table["groups"])
    every = np.array([table["groups"][g]["weights"] for g in groups])
    low, high = float(every.min()), float(every.max())
    high = max(high, low + 1e-3)
    # a few discrete steps: a colour bar of 50 or more is drawn as a bitmap
    norm = BoundaryNorm(np.linspace(low, high, 11), plt.get_cmap("viridis").N)
    fig, axes = plt.subplots(1, len(groups), figsize=(1.6 + 1.6 * len(groups), max(2.2, 1.1 + 0.35 * table["layers"])),
                             squeeze=False, constrained_layout=True)
    for ax, group in zip(axes[0], groups):
        weights = np.array(table["groups"][group]["weights"])
        cells = ax.pcolormesh(weights, cmap="viridis", norm=norm, edgecolors="white", linewidth=0.5)
        ax.invert_yaxis()
        ax.set_title(f"{group}\n(n={table['groups'][group]['n']})", fontsize=9)
        ax.set_xticks(np.arange(len(table["experts"])) + 0.5, table["experts"], rotation=45, fontsize=8)
        ax.set_yticks(np.arange(table["layers"]) + 0.5, [str(i + 1) for i in range(table["layers"])], fontsize=8)
        for (layer, expert), w in np.ndenumerate(weights):
            ax.text(expert + 0.5, layer + 0.5, f"{w:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if w < (low + high) / 2 else "black")
    axes[0][0].set_ylabel("layer")
    bar = fig.colorbar(cells, ax=axes[0].tolist(), shrink=0.8, ticks=[low, (low + high) / 2, high], format="%.3f",
                       label="mean routing weight")
    bar.solids.set_rasterized(False)
    fig.savefig(path, dpi=120, metadata={"Date": None} if path.endswith(".svg") else None)
    plt.close(fig)


def routing_analysis(model, featurizer, records: Sequence[dict], out_dir: str, batch_size: int = 32,
                     progress: bool | None = None) -> dict:
    """Write ``routing.json`` and ``routing.png`` into ``out_dir``; returns the table."""
    if model.config.num_experts < 2:
        raise ValueError("the model has a single expert (text only): there is no routing to analyse")
    routing = infer(model, featurizer, records, batch_size, routing=True, progress=progress)["routing"]
    table = routing_table(records, routing, model.config.modalities)
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "routing.json"), json.dumps(table, indent=1).encode())
    plot_routing(table, os.path.join(out_dir, "routing.png"))
    return table
