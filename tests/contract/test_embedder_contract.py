"""One contract for the Embedder port, run against every adapter (the hashing fake included).

The adapters are the composition root's table (``bootstrap/families.py``): an embedder
registered there is under this contract without a line here.

As ``citadel.app.ports.Embedder`` describes it: float32 rows of the declared
dimension, each unit length, the same text always the same vector whatever
batch it came in, and the caller's order kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

from citadel.adapters.embedding.minilm import MiniLmEmbedder
from citadel.app.ports import Embedder
from citadel.bootstrap.families import EMBEDDERS
from citadel.config import Settings

SETTINGS = Settings()
FACTORIES: dict[str, Callable[[], Embedder]] = {
    # Every embedder CITADEL_EMBEDDER names, as the composition root builds it ...
    **{
        name: functools.partial(build, SETTINGS)
        for name, build in EMBEDDERS.items()
        if build is not None
    },
    # ... and MiniLM in small batches (batch_size=4, so the tests cross batches), with
    # fused attention (the default) and with the exported graph as it is (what a model
    # that does not match the fusion pattern runs).
    "minilm-batches": lambda: MiniLmEmbedder(batch_size=4),
    "minilm-unfused": lambda: MiniLmEmbedder(batch_size=4, fuse_attention=False),
}
# The model's vectors may differ in the last float32 bits between batch shapes.
TOLERANCE = {"hashing": 1e-6}
MODEL_TOLERANCE = 1e-5

SHORT = "Vectors index."
MEDIUM = "read.table reads a data frame from a text file, one line per row."
LONG = " ".join(
    ["A data frame is a list of variables of the same number of rows with unique row names."] * 12
)


@pytest.fixture(scope="module", params=list(FACTORIES))
def adapter(request: pytest.FixtureRequest) -> tuple[Embedder, float]:
    """The embedder and the tolerance its vectors are compared with."""
    return FACTORIES[request.param](), TOLERANCE.get(request.param, MODEL_TOLERANCE)


def test_identity_is_declared(adapter: tuple[Embedder, float]) -> None:
    embedder, _ = adapter
    assert isinstance(embedder.name, str)
    assert embedder.name
    assert embedder.dimension == 384


def test_shape_and_dtype(adapter: tuple[Embedder, float]) -> None:
    embedder, _ = adapter
    vectors = embedder.embed([SHORT, MEDIUM, LONG])
    assert vectors.shape == (3, embedder.dimension)
    assert vectors.dtype == np.float32


def test_empty_list_gives_no_rows(adapter: tuple[Embedder, float]) -> None:
    embedder, _ = adapter
    vectors = embedder.embed([])
    assert vectors.shape == (0, embedder.dimension)
    assert vectors.dtype == np.float32


@pytest.mark.parametrize(
    "text", [SHORT, MEDIUM, LONG, "", "   ", "?!", "Ελληνικά και 中文 ∑ x² ≤ 1", "\x00\n\t"]
)
def test_rows_have_unit_length(adapter: tuple[Embedder, float], text: str) -> None:
    embedder, _ = adapter
    vectors = embedder.embed([text, MEDIUM])
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_same_text_same_vector_in_any_batch_or_order(adapter: tuple[Embedder, float]) -> None:
    embedder, tolerance = adapter
    alone = embedder.embed([MEDIUM])[0]
    again = embedder.embed([MEDIUM])[0]
    with_long = embedder.embed([LONG, SHORT, MEDIUM, LONG, LONG])[2]
    last = embedder.embed([SHORT, LONG, MEDIUM])[2]
    among_many = embedder.embed([SHORT] * 9 + [MEDIUM] + [LONG] * 9)[9]
    for other in (again, with_long, last, among_many):
        np.testing.assert_allclose(other, alone, atol=tolerance, rtol=0)


def test_order_is_kept_when_lengths_differ(adapter: tuple[Embedder, float]) -> None:
    embedder, tolerance = adapter
    # Lengths from 1 to ~300 words in a shuffled order, across several batches.
    rng = np.random.default_rng(7)
    words = "matrix vector frame factor level model table column row list index".split()
    texts = [
        " ".join(rng.choice(words, size=int(n)))
        for n in rng.permutation([1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 300])
    ]
    together = embedder.embed(texts)
    one_by_one = np.vstack([embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(together, one_by_one, atol=tolerance, rtol=0)
    # And the rows really are different texts, not one vector repeated.
    assert len({row.tobytes() for row in together}) == len(texts)


def test_a_very_long_text_is_embedded(adapter: tuple[Embedder, float]) -> None:
    embedder, _ = adapter
    text = " ".join(f"word{i % 997} analysis" if i % 2 else "data" for i in range(10_000))
    vectors = embedder.embed([text, SHORT])
    assert vectors.shape == (2, embedder.dimension)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_related_texts_are_closer_than_unrelated(adapter: tuple[Embedder, float]) -> None:
    embedder, _ = adapter
    query, related, unrelated = embedder.embed(
        [
            "How do I read a CSV file into a data frame?",
            "read.table reads a data frame from a text file",
            "The Fourier transform of a Gaussian is a Gaussian",
        ]
    )
    assert float(query @ related) > float(query @ unrelated)
