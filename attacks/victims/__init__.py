"""The detectors the attacks are run on: the contract every one follows (``base``: ``Victim``, saving,
loading, fingerprints) and each detector, one module a kind: ``conventional`` (scikit-learn pipelines),
``neural`` (what every torch detector shares: training loop, embeddings for FGM), ``bert``,
``chinesebert``, ``habertor``, ``multimodal`` (MMBERT) and ``llm``. A new detector is one module here
with a ``@register_victim`` class and a line in ``base.LAZY_KINDS``."""
