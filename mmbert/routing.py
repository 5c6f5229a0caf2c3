"""The routing analysis of Xue et al. (2025)'s Fig. 3: mean routing weight per layer per expert, grouped by the
records' cloaking op, as a JSON table and a PNG heat map.

The figure averages over every token of a post, and a cloak edits a few of its text tokens among the
post's text, speech and glyph tokens: so the table also splits the weights by kind of token
(``TOKEN_KINDS``), the edited ones apart, which is where a router that leans on speech under homophones
would show it."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np
import torch

from cloak.edits import output_spans
from cloak.common.io import write_atomic
from cloak.common.progress import progress_bar

from .inference import op_groups
from .modeling import SPEECH, TEXT, VISION

# What each post's weights are averaged over: all its real tokens (Xue et al.'s figure), each modality's,
# and the text tokens a cloak edited with their glyph tokens (which share the text token's position).
TOKEN_KINDS = ("all", "text", "speech", "vision", "text_edited", "vision_edited")


def edited_positions(featurizer, records: Sequence[dict]) -> list[list[bool]]:
    """Per record, per text input position: does the token cover a character a cloak edit wrote
    (``cloak.edits``; an edit that wrote nothing covers none)?"""
    flags = []
    for record, spans in zip(records, featurizer.token_spans([r["text"] for r in records])):
        written = [(at, end) for _, at, end in output_spans(record.get("cloak", {}).get("edits", [])) if end > at]
        flags.append([span is not None and any(span[0] < end and at < span[1] for at, end in written)
                      for span in spans])
    return flags


def kind_masks(out, edited: torch.Tensor) -> torch.Tensor:
    """(batch, kinds, tokens) masks of ``TOKEN_KINDS`` over a forward pass's tokens; ``edited`` (batch, text
    width) flags the edited text positions. The text block and the glyph block hold one token per text
    position, in order, so the flags fill both."""
    real, types = out.attention_mask.bool(), out.token_types
    spread = torch.zeros_like(real)
    for block in (TEXT, VISION):
        if (types == block).any():
            spread[types == block] = edited.reshape(-1)
    masks = [real, real & (types == TEXT), real & (types == SPEECH), real & (types == VISION),
             real & spread & (types == TEXT), real & spread & (types == VISION)]
    return torch.stack(masks, 1)


@torch.no_grad()
def token_routing(model, featurizer, records: Sequence[dict], batch_size: int = 32,
                  progress: bool | None = None) -> np.ndarray:
    """(n, kinds, layers, experts): each record's mean routing weight over each of ``TOKEN_KINDS``, NaN
    for a kind the record has none of."""
    model.eval()
    examples = featurizer.encode(records, progress=progress)
    edited = edited_positions(featurizer, records)
    found = []
    for start in progress_bar(range(0, len(examples), batch_size), desc="routing", unit="batch", progress=progress):
        batch = {k: v.to(model.device) for k, v in featurizer.collate(examples[start:start + batch_size]).items()
                 if k != "labels"}
        flags = torch.zeros_like(batch["input_ids"], dtype=torch.bool)
        for i, row in enumerate(edited[start:start + batch_size]):
            flags[i, :len(row)] = torch.tensor(row, dtype=torch.bool)
        out = model(**batch)
        masks = kind_masks(out, flags).float()  # (b, kinds, tokens)
        weights = torch.stack(out.routing, 1).float()  # (b, layers, tokens, experts)
        summed = torch.einsum("bkt,blte->bkle", masks, weights)
        counts = masks.sum(-1)[:, :, None, None]
        found.append((summed / counts).cpu())  # 0/0: NaN where a record has no token of a kind
    return torch.cat(found).numpy()


def routing_table(records: Sequence[dict], routing: np.ndarray, experts: Sequence[str]) -> dict:
    """{"experts", "layers", "groups": {group: {"n", "weights": [[mean weight per expert] per layer]}},
    "tokens": {group: {kind: {"n", "weights"}}}} from per-record routing (n, kinds, layers, experts); "n"
    counts the records with a token of that kind."""
    rows: dict[str, list[int]] = {"all": list(range(len(records)))}
    for i, record in enumerate(records):
        for group in op_groups(record):
            rows.setdefault(group, []).append(i)

    def mean(r: list[int], kind: int) -> dict:
        have = [i for i in r if not np.isnan(routing[i, kind]).any()]
        return {"n": len(have), "weights": routing[have, kind].mean(0).round(4).tolist() if have else None}

    return {"experts": list(experts), "layers": int(routing.shape[2]),
            "groups": {g: mean(r, 0) for g, r in rows.items()},
            "tokens": {g: {kind: mean(r, k) for k, kind in enumerate(TOKEN_KINDS)} for g, r in rows.items()}}


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
    routing = token_routing(model, featurizer, records, batch_size, progress)
    table = routing_table(records, routing, model.config.modalities)
    os.makedirs(out_dir, exist_ok=True)
    write_atomic(os.path.join(out_dir, "routing.json"), json.dumps(table, indent=1).encode())
    plot_routing(table, os.path.join(out_dir, "routing.png"))
    return table
