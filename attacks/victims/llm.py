"""``llm``: a large language model behind any OpenAI-compatible chat-completions endpoint, asked with
the Appendix B prompt (task definition, output format, instructions, one hateful and one benign example)
of MMBERT (Xue et al., "MMBERT: Scaled Mixture-of-Experts Multimodal BERT for Robust Chinese Hate Speech
Detection under Cloaking Perturbations", 2025, arXiv:2508.00760), its LLM baseline.

The answer must name one label (``仇恨言论`` / ``非仇恨言论``, or the English prompt's ``Hate Speech`` /
``Non-Hate Speech``); anything else is counted as unparseable and never guessed: its row of
``predict_proba`` is NaN and ``predict`` gives -1 for it.

``scoring: logprob`` reads the answer's probabilities instead of its words: a post's score is the
probability the model gives the hateful label's first answer token against the benign label's (the
endpoint's ``logprobs`` / ``top_logprobs``), and the decision threshold on it is chosen by ``fit`` for the
highest macro-F1 on the labelled posts it is given (a validation split), so a model that answers "hate" to
almost every post still ranks them. ``prompt: pinyin`` gives the post with its pinyin and a note that posters
write offensive words by their sound (after Guo et al. 2025, "Lost in Pronunciation: Detecting Chinese
Offensive Language Disguised by Phonetic Cloaking Replacement", arXiv:2507.07640, where the pinyin in the
prompt recovered much of what phonetic cloaks take from LLMs). Requests run concurrently, are retried
with exponential backoff on timeouts, 429 and 5xx answers, and every answer is cached on disk by
(endpoint model, prompt, text), so a rerun asks only what it has not asked. The API key is read from
an environment variable (``key_env``) and never saved.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from cloak.common.params import InstanceOf, Interval, Options

from .base import NoSettings, Settings, Victim, check_texts, labels_of, register_victim

PROMPTS = {
    "zh": (
        "任务定义:\n您的任务是将中文文本分类为\"仇恨言论\"或\"非仇恨言论\"。仇恨言论的定义是基于种族、民族、国籍、宗教、"
        "性取向、性别、残疾或严重疾病等属性,攻击或贬低某个群体的语言。\n输出格式:\n请只输出以下标签之一:`仇恨言论`或"
        "`非仇恨言论`。\n预测要求:\n仔细分析提供的中文文本,判断其是否符合仇恨言论的定义。考虑语言针对的对象以及攻击或"
        "贬低内容的性质。\n示例:\n示例1(仇恨言论):\n输入: 这群人真是社会的败类,应该被清除!\n输出: 仇恨言论\n"
        "示例2(非仇恨言论):\n输入: 今天天气真好。\n输出: 非仇恨言论\n现在,请对以下文本进行分类:\n输入: {text}\n输出:"),
    "en": (
        "Task Definition\nYour task is to classify a Chinese text as either \"Hate Speech\" or \"Non-Hate Speech\". "
        "Hate speech is defined as language that attacks or degrades a group based on attributes such as race, "
        "ethnicity, nationality, religion, sexual orientation, gender, disability, or serious illness.\n"
        "Output Format\nPlease output only one of the following labels: Hate Speech or Non-Hate Speech.\n"
        "Prediction Instructions\nCarefully analyze the given Chinese text and determine whether it meets the "
        "definition of hate speech. Consider the target of the language and the nature of any attacking or "
        "degrading content.\nExamples\nExample 1 (Hate Speech):\nInput: 这群人真是社会的败类,应该被清除!\n"
        "Output: Hate Speech\nExample 2 (Non-Hate Speech):\nInput: 今天天气真好。\nOutput: Non-Hate Speech\n"
        "Now, please classify the following text:\nInput: {text}\nOutput:"),
}
# The benign label first: "非仇恨言论" contains "仇恨言论", "Non-Hate Speech" contains "Hate Speech".
ANSWERS = {"zh": (("非仇恨言论", 0), ("仇恨言论", 1)), "en": (("non-hate speech", 0), ("hate speech", 1))}
# prompt: pinyin: a note before the post (where each template turns to it) and its pinyin after it
PINYIN = {
    "zh": ("现在,请对以下文本进行分类:", "注意:发帖者常用同音字、拼音或表情符号替换冒犯性词语来躲避审核;文本的拼音附在其后,"
           "请按读音理解其本意。\n", "\n拼音: "),
    "en": ("Now, please classify the following text:", "Note: posters often write offensive words by their sound "
           "(homophones, pinyin, emoji) to evade moderation; the text's pinyin follows it: read it by its sound.\n",
           "\nPinyin: "),
}
# What may come before the label in an answer (whitespace, quotes, markdown), skipped to reach its first token.
LEADING = b" \t\r\n`'\"*:"


def prompt_text(text: str, language: str, pinyin: bool) -> str:
    """The prompt asking about ``text``: the Appendix B template, with (``pinyin``) the note and the pinyin."""
    template = PROMPTS[language]
    if pinyin:
        from pypinyin import Style, lazy_pinyin

        anchor, note, label = PINYIN[language]
        template = template.replace(anchor, note + anchor)
        text = text + label + " ".join(lazy_pinyin(text, style=Style.TONE))
    return template.replace("{text}", text)


def label_probabilities(tokens: list[dict], language: str) -> tuple[float, float]:
    """(benign, hateful) probability of an answer's first label token: at the first generated position whose
    token is more than ``LEADING`` characters, the summed probabilities of the alternatives (``top_logprobs``)
    that begin each label, compared as bytes (a token may hold part of a character)."""
    labels = {label: name.encode() for name, label in ANSWERS[language]}
    for position in tokens:
        if not _token_bytes(position).lstrip(LEADING):
            continue
        found = [0.0, 0.0]
        for alternative in position.get("top_logprobs") or [position]:
            piece = _token_bytes(alternative).lstrip(LEADING).lower()
            for label, name in labels.items():
                if piece and (name.startswith(piece) or piece.startswith(name)):
                    found[label] += float(np.exp(alternative["logprob"]))
        return found[0], found[1]
    return 0.0, 0.0


def _token_bytes(token: dict) -> bytes:
    raw = token.get("bytes")
    return bytes(raw) if raw is not None else str(token.get("token", "")).encode()


def best_threshold(labels: np.ndarray, scores: np.ndarray) -> float:
    """The threshold on ``scores`` (hateful above it) with the highest macro-F1 on ``labels``, among the
    midpoints of the distinct scores and both ends; a post without a score (NaN) is wrong whatever it is."""
    from ..bootstrap import macro_f1

    seen = np.unique(scores[np.isfinite(scores)])
    if not len(seen):
        raise ValueError("no post got a score: the endpoint gave no log-probabilities for either label")
    candidates = np.concatenate([[max(0.0, np.nextafter(seen[0], -1.0))], (seen[:-1] + seen[1:]) / 2, [seen[-1]]])
    every = np.arange(len(labels))[None]
    figures = [macro_f1(labels, np.where(np.isfinite(scores), scores > t, -1).astype(np.int64), 2, every)[0]
               for t in candidates]
    return float(candidates[int(np.argmax(figures))])


def parse_answer(answer: str, language: str) -> int | None:
    """The label an answer names, or None when it names none (or both)."""
    text = answer.strip().strip("`'\"。. ").lower()
    for name, label in ANSWERS[language]:
        if name in text:
            rest = text.replace(name, "")
            other = [n for n, lab in ANSWERS[language] if lab != label and n in rest]
            return None if other else label
    return None


@dataclasses.dataclass
class LLMConfig(Settings):
    """endpoint: base URL of an OpenAI-compatible API (``.../v1``); model: the model name it serves;
    key_env: the environment variable holding the API key (empty: no key); language: the prompt's;
    prompt: ``appendix-b`` (the post alone) or ``pinyin`` (the post and its pinyin); scoring: ``answer``
    (the label the answer names) or ``logprob`` (the probability of the label's first answer token, asking
    for ``top_logprobs`` alternatives); threshold: ``logprob``'s decision threshold on that probability
    (None: ``fit`` chooses it on the posts it is given); max_tokens, temperature: of each request;
    concurrency, retries, timeout: of the client; cache: the folder of cached answers (default
    ``~/.cache/mmcloak/llm``)."""

    endpoint: str = "http://localhost:8000/v1"
    model: str = "gpt-4o"
    key_env: str = "OPENAI_API_KEY"
    language: str = "zh"
    prompt: str = "appendix-b"
    scoring: str = "answer"
    threshold: float | None = None
    top_logprobs: int = 20
    max_tokens: int = 10
    temperature: float = 0.0
    concurrency: int = 4
    retries: int = 5
    timeout: float = 60.0
    cache: str | None = None
    _parameter_constraints = {"endpoint": InstanceOf(str), "model": InstanceOf(str), "key_env": InstanceOf(str),
                              "language": Options("zh", "en"), "prompt": Options("appendix-b", "pinyin"),
                              "scoring": Options("answer", "logprob"), "threshold": [Interval(float, 0, 1), None],
                              "top_logprobs": Interval(int, 2, 20), "max_tokens": Interval(int, 1),
                              "temperature": Interval(float, 0), "concurrency": Interval(int, 1),
                              "retries": Interval(int, 0), "timeout": Interval(float, 0, closed="neither")}


class AnswerCache:
    """Answers by (model, prompt, text) in an append-only JSONL file: safe to interrupt, shared by runs."""

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        self.path = os.path.join(folder, "answers.jsonl")
        self.lock = threading.Lock()
        self.answers: dict[str, str] = {}
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    try:
                        entry = json.loads(line)
                        self.answers[entry["key"]] = entry["answer"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        continue  # a line cut short by a kill: asked again

    @staticmethod
    def key(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\x00{prompt}".encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> str | None:
        return self.answers.get(key)

    def put(self, key: str, answer: str) -> None:
        with self.lock:
            self.answers[key] = answer
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "answer": answer}, ensure_ascii=False) + "\n")


class EndpointError(RuntimeError):
    """The endpoint failed for good (after the retries), or refused the request."""


@register_victim
class LLMVictim(Victim):
    """An LLM asked one post at a time (see the module docstring). Nothing to train."""

    kind = "llm"
    summary = "an LLM behind an OpenAI-compatible endpoint, MMBERT's Appendix B prompt"
    differentiable = False
    Config = LLMConfig
    Training = NoSettings
    num_labels_ = 2  # the prompt's: nothing to fit

    def __init__(self, config=None, training=None) -> None:
        super().__init__(config, training)
        self.unparseable = 0  # answers that named no label, so far
        self.asked = 0  # requests sent (cache misses)
        self._answers: AnswerCache | None = None  # opened at the first question
        self.threshold_: float | None = self.config.threshold  # logprob's, given or chosen by fit

    @property
    def name(self) -> str:
        return f"llm:{self.config.model}"

    def fitted_config(self) -> dict:
        """The config, with the threshold ``fit`` chose where it chose one."""
        return {**self.config.to_dict(), **({"threshold": self.threshold_} if self.threshold_ is not None else {})}

    def fit(self, train: Sequence[dict], dev: Sequence[dict] | None = None, *, out_dir: str | None = None,
            resume: bool = False, progress: bool | None = None) -> LLMVictim:
        """Nothing to learn: the prompt's two examples are all the model sees. Labels are checked; with
        ``scoring: logprob`` and no threshold given, the threshold is chosen for the highest macro-F1 on
        ``dev`` (else on ``train``), the posts asked for their scores."""
        labels = labels_of(train, "the training records")
        if labels.max() > 1:
            raise ValueError("the LLM prompt has two labels (0: not hate speech, 1: hate speech)")
        if self.config.scoring == "logprob" and self.config.threshold is None:
            posts = dev if dev is not None else train
            self.threshold_ = best_threshold(labels_of(posts, "the posts the threshold is chosen on"),
                                             self.scores([r["text"] for r in posts]))
        return self

    def _cache(self) -> AnswerCache:
        if self._answers is None:
            from cloak.common.cache import cache_dir

            self._answers = AnswerCache(os.path.expanduser(self.config.cache or str(cache_dir() / "llm")))
        return self._answers

    def complete(self, prompt: str, **options) -> dict:
        """One chat completion's first choice (``options`` added to the request), retried with exponential
        backoff on timeouts, 429 and 5xx."""
        c = self.config
        body = json.dumps({"model": c.model, "messages": [{"role": "user", "content": prompt}],
                           "temperature": c.temperature, "max_tokens": c.max_tokens, **options}).encode()
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(c.key_env) if c.key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = c.endpoint.rstrip("/") + "/chat/completions"
        for attempt in range(c.retries + 1):
            try:
                request = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(request, timeout=c.timeout) as response:
                    reply = json.loads(response.read().decode("utf-8"))
                self.asked += 1
                return dict(reply["choices"][0])
            except urllib.error.HTTPError as e:
                if e.code != 429 and e.code < 500:
                    raise EndpointError(f"{url} refused the request: HTTP {e.code} {e.reason}") from None
                failure = f"HTTP {e.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                failure = str(getattr(e, "reason", e))
            except (json.JSONDecodeError, KeyError, IndexError, TypeError) as e:
                raise EndpointError(f"{url} answered something that is not a chat completion: {e}") from None
            if attempt < c.retries:
                time.sleep(min(30.0, 0.5 * 2 ** attempt))
        raise EndpointError(f"{url} failed {c.retries + 1} times, last: {failure}")

    def ask(self, prompt: str) -> str:
        """The answer's words (``scoring: answer``) or, as JSON, its label probabilities (``logprob``:
        [benign, hateful], ``label_probabilities``)."""
        if self.config.scoring == "answer":
            return str(self.complete(prompt)["message"]["content"] or "")
        choice = self.complete(prompt, logprobs=True, top_logprobs=self.config.top_logprobs)
        try:
            tokens = choice["logprobs"]["content"] or []
        except (KeyError, TypeError):
            raise EndpointError(f"{self.config.endpoint} gave no log-probabilities: scoring 'logprob' needs an "
                                "endpoint that returns them (logprobs / top_logprobs)") from None
        return json.dumps(label_probabilities(tokens, self.config.language))

    def answers(self, texts: Sequence[str]) -> list[str]:
        """What ``ask`` gives for each text's prompt, from the cache where asked before (kept by model,
        scoring and prompt)."""
        c, cache = self.config, self._cache()
        prompts = [prompt_text(t, c.language, c.prompt == "pinyin") for t in texts]
        model = c.model if c.scoring == "answer" else f"{c.model}\x00logprob:{c.top_logprobs}"
        keys = [cache.key(model, p) for p in prompts]
        todo = sorted({i for i, k in enumerate(keys) if cache.get(k) is None}, key=lambda i: keys[i])
        unique = list({keys[i]: i for i in todo}.values())

        def ask_and_keep(i: int) -> None:
            cache.put(keys[i], self.ask(prompts[i]))

        with ThreadPoolExecutor(c.concurrency) as pool:
            list(pool.map(ask_and_keep, unique))
        return [cache.get(k) for k in keys]  # type: ignore[misc]

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """``scoring: logprob``: each post's probability of the hateful label against the benign one, NaN where
        the answer's first token began neither."""
        if self.config.scoring != "logprob":
            raise ValueError("scores need scoring: logprob")
        pairs = np.array([json.loads(a) for a in self.answers(check_texts(texts))], dtype=float).reshape(-1, 2)
        total = pairs.sum(1)
        return np.divide(pairs[:, 1], total, out=np.full(len(pairs), np.nan), where=total > 0)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """``answer``: one-hot rows of the labels the answers name. ``logprob``: the score, its log-odds shifted
        by the threshold's so that a post is hateful (the larger column) where its score is above the
        threshold. NaN rows where an answer names no label."""
        if self.config.scoring == "logprob":
            if self.threshold_ is None:
                raise ValueError(f"{self.name}: scoring logprob needs a threshold: fit it on labelled posts "
                                 "or give config.threshold")
            score = np.clip(self.scores(texts), 1e-9, 1 - 1e-9)
            edge = np.clip(self.threshold_, 1e-9, 1 - 1e-9)
            hateful = 1 / (1 + np.exp(-(np.log(score / (1 - score)) - np.log(edge / (1 - edge)))))
            self.unparseable += int(np.isnan(score).sum())
            return np.stack([1 - hateful, hateful], axis=1)
        labels = [parse_answer(a, self.config.language) for a in self.answers(check_texts(texts))]
        self.unparseable += sum(label is None for label in labels)
        out = np.full((len(labels), 2), np.nan)
        for i, label in enumerate(labels):
            if label is not None:
                out[i] = np.eye(2)[label]
        return out

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """Labels, -1 where the answer named none."""
        proba = self.predict_proba(texts)
        return np.where(np.isnan(proba).any(1), -1, np.nan_to_num(proba).argmax(1))

    def _save_weights(self, directory: str) -> list[str]:
        return []

    def _load_weights(self, directory: str) -> None:
        pass
