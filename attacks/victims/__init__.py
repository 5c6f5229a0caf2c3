"""The detectors the attacks are run on: the contract every one follows and the one registry of them
(``base``: ``Victim``, ``register_victim``, ``make_victim``, saving, loading, fingerprints) and each detector,
one module a kind: ``conventional`` (scikit-learn pipelines), ``neural`` (what every torch detector shares:
training loop, embeddings for FGM), ``bert``, ``chinesebert``, ``habertor``, ``multimodal`` (MMBERT) and
``llm``. A new detector is one module with a ``@register_victim`` class; one of ours is also registered
by its module's path in ``base`` (``register_victim(kind=..., module=...)``), so that it is imported only
when needed."""
