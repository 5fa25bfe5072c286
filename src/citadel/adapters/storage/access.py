"""Access and filter tokens: the scope and filters expressed inside the FTS5 query.

Each indexed chunk carries, in a zero-weight ``access`` column, one token per
fact a filter can ask about: its tenant, its ACL groups (or ``public``), its
source, authors, tags and every prefix of its section path. Values are
hashed into short hex words, so any string becomes exactly one token. A
search then ANDs the query terms with the scope and filter tokens, and FTS5
intersects posting lists — a chunk outside the scope is never scored, and
no per-row join is needed. Year ranges are the exception: they stay in SQL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from citadel.domain.document import Chunk
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope, Source

PUBLIC = "public"


def token(kind: str, value: str) -> str:
    digest = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{kind}x{digest}"


def access_text(source: Source, chunk: Chunk) -> str:
    """The access column of one chunk."""
    tokens = [token("tenant", source.tenant), token("src", source.source_id)]
    tokens += [token("acl", g) for g in sorted(source.acl_groups)] or [token("acl", PUBLIC)]
    tokens += [token("author", a) for a in source.authors]
    tokens += [token("tag", t) for t in source.tags]
    path: list[str] = []
    for heading in chunk.section_path:
        path.append(heading)
        tokens.append(token("sec", "\x1f".join(path)))
    return " ".join(tokens)


def access_query(
    scope: AccessScope, filters: SearchFilters, *, only_tenant: str | None, any_acl: bool
) -> str:
    """FTS5 clauses (to AND with the terms) for the scope and the non-year filters.

    ``only_tenant`` (the one tenant every live source belongs to, if there is
    one) and ``any_acl`` (whether any live source has an ACL) let a clause that
    could not exclude anything be left out: intersecting with a posting list
    that holds every chunk costs time and changes nothing.
    """
    clauses = access_clauses(scope, filters, only_tenant=only_tenant, any_acl=any_acl)
    return " AND ".join("access:(" + " OR ".join(tokens) + ")" for tokens in clauses)


def access_clauses(
    scope: AccessScope, filters: SearchFilters, *, only_tenant: str | None, any_acl: bool
) -> list[list[str]]:
    """The same clauses as token lists: a chunk passes when its access column holds
    at least one token of every list (the in-memory index applies them as a mask)."""
    clauses: list[list[str]] = []
    if scope.tenant != only_tenant:
        clauses.append(_any("tenant", [scope.tenant]))
    if any_acl and not scope.unrestricted:
        clauses.append(_any("acl", [PUBLIC, *sorted(scope.groups)]))
    if filters.source_ids:
        clauses.append(_any("src", sorted(filters.source_ids)))
    if filters.authors:
        clauses.append(_any("author", sorted(filters.authors)))
    if filters.tags_any:
        clauses.append(_any("tag", sorted(filters.tags_any)))
    clauses.extend(_any("tag", [t]) for t in sorted(filters.tags_all))
    if filters.section_prefix:
        clauses.append(_any("sec", ["\x1f".join(filters.section_prefix)]))
    return clauses


def _any(kind: str, values: Iterable[str]) -> list[str]:
    return [token(kind, v) for v in values]
