"""mmbert: the multimodal mixture-of-experts BERT (text + speech + glyph images) and its trainer.

The names below are imported on first use, so that ``mmbert --help`` (and a command that finds its
input missing) does not wait for torch and transformers to load.
"""
from __future__ import annotations

from cloak.common.lazy import lazy_exports

_EXPORTS = {
    "MMBertConfig": "configuration", "MMBertForSequenceClassification": "modeling", "MMBertModel": "modeling",
    "load_balancing_loss": "modeling", "upcycle_from_bert": "modeling", "load_model": "loading",
    "model_for_stage": "loading", "classification_metrics": "metrics", "PRESETS": "presets",
    "load_run_config": "presets", "build_tokenizer": "tokenization",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
