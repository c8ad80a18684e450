"""The side-by-side table of `tests/fidelity_filter.py` (the readers' strength per fold)."""
from tests.fidelity_filter import side_by_side


def _summary(rates: list[float], overall: float) -> dict:
    folds = [{"fold": k, "triples": 100 + k, "training_triples": 400 - k, "random_baseline": 0.125,
              "answered_rate": rate} for k, rate in enumerate(rates)]
    return {"folds": folds, "in": 201, "random_baseline": 0.125, "answered_rate": overall}


def test_one_row_per_fold_with_each_readers_rate_and_the_training_size():
    lines = side_by_side({"lexical": _summary([0.5, 0.25], 0.375),
                          "cross-encoder": _summary([0.75, 0.0], 0.375)})
    assert lines == [
        "| fold | triples | trained on | random | lexical answered | cross-encoder answered |",
        "|---|---|---|---|---|---|",
        "| 0 | 100 | 400 | 12.5% | 50.0% | 75.0% |",
        "| 1 | 101 | 399 | 12.5% | 25.0% | 0.0% |",
        "| all | 201 | | 12.5% | 37.5% | 37.5% |",
        "| paper (SAN) | 770k | about 616,000 | | 68% |",
    ]
