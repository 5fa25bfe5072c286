"""Row mapping between the stores (SQLite, PostgreSQL) and domain values."""

from __future__ import annotations

import json
from collections.abc import Sequence

from citadel.domain.document import Chunk
from citadel.domain.source import Source

SOURCE_COLUMNS = ", ".join(
    f"s.{name}"
    for name in (
        "source_id",
        "tenant",
        "title",
        "authors",
        "year",
        "tags",
        "acl_groups",
        "canonical_url",
        "origin",
        "current_version",
        "deleted",
        "revision",
    )
)
CHUNK_COLUMNS = ", ".join(
    f"c.{name}"
    for name in (
        "chunk_id",
        "source_id",
        "version",
        "ordinal",
        "text",
        "sha256",
        "section_path",
        "chapter",
        "section",
        "page_start",
        "page_end",
        "page_label_start",
        "page_label_end",
        "char_start",
        "char_end",
        "location",
        "units",
    )
)


def source_from_row(row: Sequence[object]) -> Source:
    (sid, tenant, title, authors, year, tags, acl, url, origin, current, deleted, revision) = row
    return Source(
        source_id=str(sid),
        tenant=str(tenant),
        title=str(title),
        authors=tuple(json.loads(str(authors))),
        year=int(str(year)) if year is not None else None,
        tags=tuple(json.loads(str(tags))),
        acl_groups=frozenset(json.loads(str(acl))),
        canonical_url=str(url) if url is not None else None,
        origin=str(origin),
        current_version=int(str(current)),
        deleted=bool(deleted),
        revision=int(str(revision)),
    )


def chunk_from_row(row: Sequence[object]) -> Chunk:
    (
        cid,
        sid,
        version,
        ordinal,
        text,
        sha,
        path,
        chapter,
        section,
        ps,
        pe,
        ls,
        le,
        cs,
        ce,
        loc,
        units,
    ) = row
    return Chunk(
        chunk_id=str(cid),
        source_id=str(sid),
        version=int(str(version)),
        ordinal=int(str(ordinal)),
        text=str(text),
        sha256=str(sha),
        section_path=tuple(json.loads(str(path))),
        chapter=str(chapter),
        section=str(section),
        page_start=int(str(ps)) if ps is not None else None,
        page_end=int(str(pe)) if pe is not None else None,
        page_label_start=str(ls) if ls is not None else None,
        page_label_end=str(le) if le is not None else None,
        char_start=int(str(cs)),
        char_end=int(str(ce)),
        location=str(loc) if loc is not None else None,
        units=str(units) if units is not None else None,
    )


def section_key(path: Sequence[str]) -> str:
    """A section path as a string whose prefixes are exactly the path's prefixes."""
    return "".join(heading.replace("\x1f", " ") + "\x1f" for heading in path)
