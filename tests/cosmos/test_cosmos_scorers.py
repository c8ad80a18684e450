"""The MiniLM coherence runtimes (`coherence.runtime`) and the fixed-shape encoding (loads MiniLM: slow)."""
from __future__ import annotations

import numpy as np
import pytest

from data_specs import load_spec
from tests.conftest import loaded_modules
from transforms.core.models.minilm import MiniLMEncoder, fixed_length
from transforms.cosmos.scorers import MiniLMCoherence, make_coherence_scorer

pytestmark = pytest.mark.slow

SENTENCES = [
    "I planted tomatoes for the first time this spring.",
    "The seedlings grew tall and green on the windowsill.",
    "My phone battery died halfway through lunch, so I never got the message.",
    "",
    "Café au lait, naïve résumés and “curly quotes” — all tokenised alike.",
    " ".join(["word"] * 200),          # over max_length: truncated
]
STORY_A = SENTENCES[:3]
STORY_B = ["We drove to the coast on Saturday.", "The sea was grey and the wind was cold.",
           "I planted tomatoes for the first time this spring."]


@pytest.fixture(scope="module")
def encoders() -> dict[str, MiniLMEncoder]:
    return {runtime: MiniLMEncoder(8, 128, "cpu", runtime) for runtime in ("transformers", "torch", "int8")}


def test_fixed_lengths():
    assert [fixed_length(n, 128) for n in (1, 8, 9, 17, 33, 97, 128)] == [8, 8, 16, 24, 48, 128, 128]
    assert fixed_length(40, 40) == 40


def test_torch_runtime_is_transformers_without_importing_it(encoders):
    hf, plain = encoders["transformers"], encoders["torch"]
    assert [list(map(int, r)) for r in hf._batch(SENTENCES)["input_ids"]] == \
        [list(map(int, r)) for r in plain._batch(SENTENCES)["input_ids"]]
    assert np.array_equal(hf.encode_fixed(SENTENCES), plain.encode_fixed(SENTENCES))
    assert np.abs(hf.encode(SENTENCES) - plain.encode(SENTENCES)).max() < 1e-6
    code = ("from transforms.core.models.minilm import MiniLMEncoder; "
            "MiniLMEncoder(4, 32, 'cpu', 'torch').encode_fixed(['a kite'])")
    assert loaded_modules(code, ["transformers"]) == []


def test_a_vector_does_not_depend_on_its_batch_mates(encoders):
    # Not so for int8: dynamic quantisation scales the activations of a whole batch at once.
    for runtime in ("transformers", "torch"):
        encoder = encoders[runtime]
        together = encoder.encode_fixed(SENTENCES)
        alone = np.stack([encoder.encode_fixed([s])[0] for s in SENTENCES])
        shuffled = encoder.encode_fixed(SENTENCES[::-1] + ["one more line", SENTENCES[0]])
        assert np.array_equal(together, alone), runtime
        assert np.array_equal(together, shuffled[:len(SENTENCES)][::-1]), runtime
        assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_a_storys_gaps_do_not_depend_on_the_other_stories():
    scorer = make_coherence_scorer(load_spec("cosmos", ["coherence.device=cpu"]).coherence)
    assert isinstance(scorer, MiniLMCoherence) and scorer.encoder.runtime == "torch"
    alone = scorer.score([STORY_A])[0]
    together = scorer.score([STORY_B, STORY_A, STORY_B[::-1]])[1]
    assert alone == together and len(alone) == 2


def test_int8_is_close_but_not_the_float_model(encoders):
    plain, int8 = encoders["torch"].encode_fixed(SENTENCES), encoders["int8"].encode_fixed(SENTENCES)
    alone = np.stack([encoders["int8"].encode_fixed([s])[0] for s in SENTENCES])
    assert encoders["int8"].runtime == "int8"
    for vectors in (int8, alone):
        cosines = (plain * vectors).sum(axis=1)
        assert cosines.min() > 0.8 and not np.array_equal(plain, vectors)


def test_unknown_runtime():
    with pytest.raises(ValueError, match="runtime"):
        MiniLMEncoder(8, 32, "cpu", "fp16")
