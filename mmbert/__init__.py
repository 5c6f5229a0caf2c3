"""mmbert: the multimodal mixture-of-experts BERT (text + speech + glyph images) and its trainer."""
from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

from .configuration import MMBertConfig
from .loading import load_model, model_for_stage
from .metrics import classification_metrics
from .modeling import MMBertForSequenceClassification, MMBertModel, load_balancing_loss, upcycle_from_bert
from .presets import PRESETS, load_run_config
from .tokenization import build_tokenizer

AutoConfig.register("mmbert", MMBertConfig)
AutoModel.register(MMBertConfig, MMBertModel)
AutoModelForSequenceClassification.register(MMBertConfig, MMBertForSequenceClassification)

__all__ = ["MMBertConfig", "MMBertForSequenceClassification", "MMBertModel", "PRESETS", "build_tokenizer",
           "classification_metrics", "load_balancing_loss", "load_model", "load_run_config", "model_for_stage",
           "upcycle_from_bert"]
