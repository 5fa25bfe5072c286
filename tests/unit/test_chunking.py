"""Chunking, as a pure function of blocks: sections, sizes, overlap, positions, scraps."""

from __future__ import annotations

import itertools

from citadel.domain.chunking import (
    ChunkingPolicy,
    chunk_blocks,
    embedding_text,
    estimate_tokens,
)
from citadel.domain.document import Block

SENTENCE = "The workers restart one at a time after a deploy, and each one drains its queue first. "


def chunks_of(*blocks: Block, policy: ChunkingPolicy | None = None) -> list[str]:
    _, chunks = chunk_blocks(blocks, "src1", 1, policy, tenant="t1")
    return [c.text for c in chunks]


def test_a_chunk_never_crosses_a_section() -> None:
    _, chunks = chunk_blocks(
        [
            Block("Alpha text about restarts.", ("Ops", "Restarts"), page=1),
            Block("Beta text about queues.", ("Ops", "Queues"), page=1),
        ],
        "src1",
        1,
        tenant="t1",
    )
    assert [(c.text, c.section) for c in chunks] == [
        ("Alpha text about restarts.", "Restarts"),
        ("Beta text about queues.", "Queues"),
    ]
    assert [c.ordinal for c in chunks] == [0, 1]


def test_long_sections_are_packed_within_the_limit_with_overlap() -> None:
    policy = ChunkingPolicy(max_tokens=60, overlap_tokens=20, min_tokens=5)
    canon, chunks = chunk_blocks(
        [Block(SENTENCE * 12, ("Ops",), page=3)], "src1", 1, policy, tenant="t1"
    )
    assert len(chunks) > 3
    for chunk in chunks:
        assert estimate_tokens(chunk.text) <= policy.max_tokens
        assert canon.text[chunk.char_start : chunk.char_end] == chunk.text
    # Consecutive chunks share trailing sentences: each starts before the last one ended.
    for before, after in itertools.pairwise(chunks):
        assert after.char_start < before.char_end


def test_letterless_scraps_make_no_chunk() -> None:
    texts = chunks_of(
        Block("6", ("6 Lists and data frames",), page=29),
        Block("A data frame is a list of variables of the same length.", ("6.1 Frames",), page=30),
        Block("6.3.2", ("6.3 Attaching",), page=31),
        Block("—", ("Notes",), page=31),
    )
    assert texts == ["A data frame is a list of variables of the same length."]


def test_short_text_with_letters_and_long_letterless_text_are_kept() -> None:
    table = " ".join(str(n) for n in range(100, 160))  # a table of numbers: citable
    texts = chunks_of(
        Block("See ALTER TABLE.", ("See Also",), page=1),
        Block("x² ≤ 1", ("Bounds",), page=1),
        Block("中文", ("Other scripts",), page=2),
        Block(table, ("Table 3.2",), page=2),
    )
    assert texts == ["See ALTER TABLE.", "x² ≤ 1", "中文", table]


def test_the_embedded_text_names_title_and_headings_once() -> None:
    assert embedding_text("R", ("R", "Data frames"), "Text.") == "R > Data frames. Text."
    assert embedding_text("", (), "Text.") == "Text."


def test_chunk_ids_are_scoped_to_the_tenant() -> None:
    """Two tenants may each have a source ``guide``: their chunks never share an id."""
    block = Block("The workers restart one at a time after a deploy.", ("Ops",), page=1)
    _, ours = chunk_blocks([block], "guide", 1, tenant="acme")
    _, theirs = chunk_blocks([block], "guide", 1, tenant="globex")
    _, again = chunk_blocks([block], "guide", 1, tenant="acme")
    assert [c.text for c in ours] == [c.text for c in theirs]
    assert {c.chunk_id for c in ours}.isdisjoint(c.chunk_id for c in theirs)
    assert [c.chunk_id for c in ours] == [c.chunk_id for c in again]
