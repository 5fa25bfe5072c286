"""The support checker adapters: quotations, the learned combiner, the weights file."""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

import numpy as np
import pytest

from citadel.adapters.support import (
    FEATURES,
    FeatureSupportChecker,
    default_checker,
    lexical_checker,
    load_combiner,
)
from citadel.domain.support import SupportLabel

PASSAGE = (
    "Aspirin reduces the risk of stroke in adults over 50.  The trial ran\n"
    "from 2001 to 2005 and enrolled 4,000 patients. Side effects were rare."
)
PAIRS = [
    ("The trial ran from 2001 to 2005", PASSAGE),
    ("Aspirin lowers the risk of stroke in adults over 50.", PASSAGE),
    ("Quantum gravity remains an unsolved problem of physics.", PASSAGE),
]


def test_the_weights_file_names_the_features_this_code_computes() -> None:
    document = json.loads(files("citadel.adapters.support").joinpath("weights.json").read_text())
    for kind, names in FEATURES.items():
        model = document["models"][kind]
        assert tuple(model["features"]) == names
        assert len(model["coef"]) == len(model["mean"]) == len(model["scale"]) == len(names)
        assert 0 < model["thresholds"]["partial"] <= model["thresholds"]["supported"] < 1
        assert model["cv"]["folds"] == 5


def test_the_shipped_weights_were_fitted_on_the_projects_own_pairs_never_scifact() -> None:
    """SciFact (CC BY-NC) may measure the checker, never train what ships."""
    document = json.loads(files("citadel.adapters.support").joinpath("weights.json").read_text())
    assert document["grouped_by"] == "book"  # leave one book out: the figures are held out
    trained_on = document["trained_on"].split(" (")[0].split(", ")
    assert trained_on and all(name.endswith(".jsonl") for name in trained_on)
    assert not any(
        "scifact" in name.lower() or name == "support_train.jsonl" for name in trained_on
    )
    assert {path.name for path in Path("data/support").glob("*.jsonl")} == set(trained_on)


def test_weights_for_other_features_are_refused() -> None:
    combiner = load_combiner("lexical")
    with pytest.raises(ValueError, match="other features"):
        FeatureSupportChecker(
            type(combiner)(**{**_fields(combiner), "features": ("coverage",)})  # type: ignore[arg-type]
        )


def _fields(combiner: object) -> dict[str, object]:
    return {name: getattr(combiner, name) for name in combiner.__slots__}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("make", "paraphrased"),
    [
        # Word overlap alone calls the one-word paraphrase "reduces" -> "lowers" supported
        # by a hair (0.505; it was partial before the weights were refitted with the
        # failure-shaped rows of 2026-12-03, where short faithful sentences are SUPPORT).
        (lexical_checker, SupportLabel.SUPPORTED),
        (default_checker, SupportLabel.SUPPORTED),
    ],
    ids=["lexical", "static"],
)
def test_quotation_related_and_unrelated(
    make: type[FeatureSupportChecker], paraphrased: SupportLabel
) -> None:
    checker = make()
    quote, paraphrase, unrelated = checker.check(PAIRS)
    assert quote.label is SupportLabel.VERBATIM and quote.score == 1.0
    assert quote.span is not None
    assert PASSAGE[quote.span[0] : quote.span[1]] == "The trial ran\nfrom 2001 to 2005"
    assert paraphrase.label is paraphrased
    assert unrelated.label is SupportLabel.UNSUPPORTED
    assert 0.0 <= unrelated.score < paraphrase.score < 1.0
    assert checker.check(PAIRS) == [quote, paraphrase, unrelated]  # deterministic
    assert checker.check([]) == []


def test_the_static_checker_is_named_for_its_weights() -> None:
    assert default_checker().name == "support/2/static"
    assert lexical_checker().name == "support/2/lexical"


def test_the_embedder_checker_adds_the_cosine_and_caches_vectors() -> None:
    from citadel.adapters.embedding.hashing import HashingEmbedder

    class Counting(HashingEmbedder):
        calls = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().embed(texts)

    checker = default_checker(Counting())
    first = checker.check(PAIRS[1:])
    embedded = Counting.calls
    assert embedded > 0
    assert checker.check(PAIRS[1:]) == first
    assert Counting.calls == embedded  # every vector came from the cache
    assert checker.name.startswith("support/2/embedder+hashing")
    assert checker.features(PAIRS).shape == (3, len(FEATURES["embedder"]))
    assert np.all(np.isfinite(checker.features(PAIRS)))


def test_a_pairs_score_does_not_depend_on_its_batch_or_its_memory_layout() -> None:
    # A matrix product sums a row's terms in an order that depends on the batch; the
    # contract suite caught a score moving in its last bits with its answer.
    combiner = load_combiner("static")
    rng = np.random.default_rng(28)
    rows = rng.normal(size=(300, len(combiner.features)))
    alone = np.array([combiner.score(rows[i : i + 1])[0] for i in range(len(rows))])
    assert np.array_equal(combiner.score(rows), alone)
    assert np.array_equal(combiner.score(np.asfortranarray(rows)), alone)
    assert np.array_equal(combiner.score(rows[::-1])[::-1], alone)
