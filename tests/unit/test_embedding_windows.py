"""Long chunks are read in windows: no word piece of an embedded text goes unseen.

The window rules on their own, the MiniLM embedder reading a text's tail, and a
real shared book: every chunk's embedded text, tokenized with the model's own
tokenizer, is covered by windows that each fit the model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from citadel.adapters.embedding import minilm
from citadel.adapters.embedding.minilm import MAX_TOKENS, MiniLmEmbedder
from citadel.adapters.embedding.model_files import read_pinned
from citadel.adapters.embedding.windows import combine, split_windows
from citadel.adapters.parsers.pdf import PdfParser
from citadel.domain.chunking import chunk_blocks, embedding_text

BOOKS = Path(__file__).resolve().parents[2] / ".." / "shared" / "books"
CLS, SEP = 101, 102


def ids(n: int) -> np.ndarray:
    return np.asarray([CLS, *range(1000, 1000 + n), SEP], dtype=np.int64)


def covered(row: np.ndarray, window: int) -> None:
    """Every window fits, framed by [CLS] and [SEP]; together they hold every piece."""
    windows = split_windows(row, window)
    assert all(len(w) <= window and w[0] == CLS and w[-1] == SEP for w in windows)
    seen = {int(i) for w in windows for i in w[1:-1]}
    assert seen == {int(i) for i in row[1:-1]}


def test_a_text_within_the_window_is_one_window_as_it_is() -> None:
    row = ids(254)
    (only,) = split_windows(row, 256)
    assert only is row


@pytest.mark.parametrize("pieces", [255, 300, 508, 509, 1000, 4000])
def test_longer_texts_are_covered_by_full_windows(pieces: int) -> None:
    row = ids(pieces)
    windows = split_windows(row, 256)
    covered(row, 256)
    assert len(windows) == -(-pieces // 254)  # the fewest that cover it
    assert all(len(w) == 256 for w in windows)  # spread so that none is a short tail


def test_a_window_must_hold_a_piece() -> None:
    with pytest.raises(ValueError, match="window"):
        split_windows(ids(10), 2)


def test_windows_combine_into_the_normalised_mean() -> None:
    vectors = np.asarray([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    out = combine(vectors, [0, 0, 1], 2)
    np.testing.assert_allclose(out, [[2**-0.5, 2**-0.5], [0.6, 0.8]], atol=1e-6)


def test_the_tail_of_a_long_text_changes_its_vector() -> None:
    head = "apple " * (MAX_TOKENS - 2)
    texts = [head + "banana " * 200, head + "tractor engine " * 100]
    windowed = MiniLmEmbedder().embed(texts)
    truncated = MiniLmEmbedder(windows=False).embed(texts)
    np.testing.assert_allclose(truncated[0], truncated[1], atol=1e-6)  # the tail was unseen
    assert float(windowed[0] @ windowed[1]) < 0.95
    np.testing.assert_allclose(np.linalg.norm(windowed, axis=1), 1.0, atol=1e-5)


def test_windowing_is_in_the_name() -> None:
    assert MiniLmEmbedder().name == "all-MiniLM-L6-v2-w8a8-win"
    assert MiniLmEmbedder(windows=False).name == "all-MiniLM-L6-v2-w8a8"
    assert MiniLmEmbedder(precision="float").name == "all-MiniLM-L6-v2-int8-win"


def test_no_embedded_text_of_a_real_book_runs_past_the_window_unseen() -> None:
    book = BOOKS / "pdf" / "R-intro.pdf"
    if not book.exists():
        pytest.skip(f"the shared books are not here ({book}); they live in ../shared/books")
    document = PdfParser().parse(book, None)
    _, chunks = chunk_blocks(document.blocks, "r-intro", 1, tenant="t")
    vocabulary = read_pinned(
        None, minilm.TOKENIZER_PACKAGE, ("model", "tokenizer.json"), minilm.TOKENIZER_SHA256
    )
    tokenizer = Tokenizer.from_str(vocabulary.decode("utf-8"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    texts = [embedding_text(document.title, c.section_path, c.text) for c in chunks]
    rows = [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch_fast(texts)]
    longer = [row for row in rows if len(row) > MAX_TOKENS]
    assert len(longer) >= 10  # R-intro has such chunks (27 of 319 when this was written)
    for row in rows:
        covered(row, MAX_TOKENS)
