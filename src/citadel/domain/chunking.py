"""Chapter-aware chunking: sentence-packed chunks that never cross a section.

Sizes are counted in estimated word pieces, because the embedding model reads
at most 256 of them; overlap repeats trailing sentences, only inside a section.
A chunk that would hold only a few letterless characters (a chapter number on
its own page, a stray section number) is not made: nobody can cite it, and
its embedded text would be the title and headings alone, which ranked such
scraps near the top of dense search for questions about their chapter.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from citadel.domain.document import Block, Chunk
from citadel.domain.text import split_sentences

CHUNKER_VERSION = "sections-sentences/3"

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class ChunkingPolicy:
    max_tokens: int = 240
    overlap_tokens: int = 40
    min_tokens: int = 12


def estimate_tokens(text: str) -> int:
    """Word pieces, approximately: punctuation counts one, long words a little more."""
    count = 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        count += 1 + len(token) // 8
    return count


@dataclass(frozen=True, slots=True)
class CanonicalText:
    """The version's text, and where each block sits in it."""

    text: str
    spans: tuple[tuple[int, int], ...]


def canonical_text(blocks: Sequence[Block]) -> CanonicalText:
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    offset = 0
    for block in blocks:
        if parts:
            parts.append(_BLOCK_SEPARATOR)
            offset += len(_BLOCK_SEPARATOR)
        spans.append((offset, offset + len(block.text)))
        parts.append(block.text)
        offset += len(block.text)
    return CanonicalText("".join(parts), tuple(spans))


def chapter_and_section(path: Sequence[str]) -> tuple[str, str]:
    """The chapter (skipping a leading "Part ...") and the innermost section under it."""
    if not path:
        return "", ""
    index = 1 if len(path) > 1 and path[0].lstrip().lower().startswith("part") else 0
    chapter = path[index]
    section = path[-1] if len(path) > index + 1 else ""
    return chapter, section


def chunk_id(source_id: str, version: int, ordinal: int, sha256: str, *, tenant: str) -> str:
    """Deterministic from (tenant, source, version, position, content hash).

    Source ids are scoped to their tenant, so two tenants' ``guide`` v1 must not
    share chunk ids. Ids stored before the tenant joined the key stay as stored.
    """
    key = f"{tenant}\x00{source_id}\x00{version}\x00{ordinal}\x00{sha256}".encode()
    return "c" + hashlib.sha256(key).hexdigest()[:31]


@dataclass(frozen=True, slots=True)
class _Piece:
    """A sentence (or a slice of an over-long one) located in the canonical text."""

    start: int
    end: int
    tokens: int
    block: int


def chunk_blocks(
    blocks: Sequence[Block],
    source_id: str,
    version: int,
    policy: ChunkingPolicy | None = None,
    *,
    tenant: str,
) -> tuple[CanonicalText, tuple[Chunk, ...]]:
    """Split blocks into chunks; consecutive blocks with one section path form a section.

    ``tenant`` is the source's: a source id names a source within its tenant only."""
    policy = policy or ChunkingPolicy()
    canon = canonical_text(blocks)
    chunks: list[Chunk] = []
    for section_blocks in _sections(blocks):
        pieces = _pieces(canon, section_blocks, blocks, policy)
        for group in _pack(pieces, policy):
            start, end = group[0].start, group[-1].end
            text = canon.text[start:end]
            if _scrap(text, policy):
                continue
            first, last = blocks[group[0].block], blocks[group[-1].block]
            sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
            ordinal = len(chunks)
            chapter, section = chapter_and_section(first.section_path)
            chunks.append(
                Chunk(
                    chunk_id=chunk_id(source_id, version, ordinal, sha, tenant=tenant),
                    source_id=source_id,
                    version=version,
                    ordinal=ordinal,
                    text=text,
                    sha256=sha,
                    section_path=first.section_path,
                    chapter=chapter,
                    section=section,
                    page_start=first.page,
                    page_end=last.page,
                    page_label_start=first.page_label,
                    page_label_end=last.page_label,
                    char_start=start,
                    char_end=end,
                    location=first.location,
                )
            )
    return canon, tuple(chunks)


def _scrap(text: str, policy: ChunkingPolicy) -> bool:
    """Shorter than a chunk may be and without a single letter: "6", "6.3.2", "—"."""
    return estimate_tokens(text) < policy.min_tokens and not any(c.isalpha() for c in text)


def _sections(blocks: Sequence[Block]) -> list[list[int]]:
    groups: list[list[int]] = []
    for index, block in enumerate(blocks):
        if not block.text.strip():
            continue
        previous = blocks[groups[-1][-1]] if groups else None
        # A chunk never spans a gap of dropped pages (an index, a figure-only page).
        contiguous = previous is not None and (
            previous.page is None or block.page is None or block.page - previous.page <= 1
        )
        if previous is not None and contiguous and previous.section_path == block.section_path:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _pieces(
    canon: CanonicalText, indexes: Sequence[int], blocks: Sequence[Block], policy: ChunkingPolicy
) -> list[_Piece]:
    pieces: list[_Piece] = []
    for index in indexes:
        base = canon.spans[index][0]
        text = blocks[index].text
        for sentence_start, end in split_sentences(text):
            # Trim leading whitespace so chunk boundaries sit on text.
            start = sentence_start
            while start < end and text[start].isspace():
                start += 1
            tokens = estimate_tokens(text[start:end])
            if tokens <= policy.max_tokens:
                pieces.append(_Piece(base + start, base + end, tokens, index))
                continue
            pieces.extend(_slice_long(text, start, end, base, index, policy))
    return pieces


def _slice_long(
    text: str, start: int, end: int, base: int, block: int, policy: ChunkingPolicy
) -> list[_Piece]:
    """Cut a sentence longer than a chunk at word boundaries."""
    out: list[_Piece] = []
    words = [m.span() for m in re.finditer(r"\S+", text[start:end])]
    piece_start: int | None = None
    piece_end = 0
    tokens = 0
    for ws, we in words:
        t = estimate_tokens(text[start + ws : start + we])
        if piece_start is not None and tokens + t > policy.max_tokens:
            out.append(_Piece(base + start + piece_start, base + start + piece_end, tokens, block))
            piece_start, tokens = None, 0
        if piece_start is None:
            piece_start = ws
        piece_end = we
        tokens += t
    if piece_start is not None:
        out.append(_Piece(base + start + piece_start, base + start + piece_end, tokens, block))
    return out


def _pack(pieces: Sequence[_Piece], policy: ChunkingPolicy) -> list[list[_Piece]]:
    """Greedy packing with trailing-sentence overlap; a tiny tail joins the previous chunk."""
    groups: list[list[_Piece]] = []
    current: list[_Piece] = []
    tokens = 0
    fresh = 0  # pieces in `current` that are not overlap from the previous chunk
    for piece in pieces:
        if current and tokens + piece.tokens > policy.max_tokens and fresh:
            groups.append(current)
            overlap: list[_Piece] = []
            kept = 0
            for prior in reversed(current):
                if kept + prior.tokens > policy.overlap_tokens or len(overlap) + 1 >= len(current):
                    break
                overlap.insert(0, prior)
                kept += prior.tokens
            if kept + piece.tokens > policy.max_tokens:
                overlap, kept = [], 0
            current, tokens, fresh = overlap, kept, 0
        current.append(piece)
        tokens += piece.tokens
        fresh += 1
    if current and fresh:
        if groups and tokens < policy.min_tokens:
            tail = [p for p in current if p not in groups[-1]]
            merged_tokens = sum(p.tokens for p in groups[-1]) + sum(p.tokens for p in tail)
            if merged_tokens <= policy.max_tokens + policy.min_tokens:
                groups[-1].extend(tail)
                return groups
        groups.append(current)
    return groups


def embedding_text(title: str, section_path: Sequence[str], text: str) -> str:
    """What the dense model reads for a chunk: where it sits, then what it says.

    The title and headings disambiguate short passages ("Vectors" in an R
    manual vs. a physics book); headings that repeat the title are dropped.
    """
    context = [title.strip()] if title.strip() else []
    for raw in section_path:
        heading = raw.strip()
        if heading and heading not in context:
            context.append(heading)
    prefix = " > ".join(context)
    return f"{prefix}. {text}" if prefix else text


def embedding_key(text: str) -> str:
    """The vector cache key: the embedded text's sha256 (the store keeps models apart)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
