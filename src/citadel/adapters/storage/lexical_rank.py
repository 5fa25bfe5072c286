"""The ``LexicalIndex`` ranking from a ``MemoryIndex``: the same for every store.

Given each query term's postings (a term of several tokens is a phrase) and the
store's tokens of the access clauses, this ranks as the SQLite library's FTS5
query does (``adapters/sqlite/lexical.py``): common terms dropped past
``max_term_share`` while a rarer one is left; terms summed in the order FTS5's
expression lists them (the common ones last, most common last, unless a year
bound is set); the scope and filters applied as a mask before scoring; ties by
chunk id under a year bound, else by rowid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from citadel.adapters.storage.access import access_clauses
from citadel.adapters.storage.lexical_memory import Mask, MemoryIndex, Postings
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope

# Query terms in more than this share of the chunks go last (lexical.py's _skip_plan).
SKIP_SHARE = 0.05


def memory_mask(
    index: MemoryIndex,
    scope: AccessScope,
    filters: SearchFilters,
    tokens: Callable[[str], Sequence[str] | None],
) -> tuple[bool, Mask | None]:
    """(True, the admitted chunks as a mask, None for all), or (False, None) when a
    clause token is not one stored token (then the caller cannot rank from memory)."""
    # Every clause, even those FTS5 may leave out because they exclude nothing.
    clauses = []
    for clause in access_clauses(scope, filters, only_tenant=None, any_acl=True):
        found_tokens = []
        for value in clause:
            found = tokens(value)
            if found is None or len(found) != 1:
                return False, None
            found_tokens.append(found[0])
        clauses.append(found_tokens)
    return True, index.mask(clauses, filters.year_min, filters.year_max)


def rank_terms(
    index: MemoryIndex,
    terms: Sequence[str],
    postings: Mapping[str, Postings],
    mask: Mask | None,
    filters: SearchFilters,
    limit: int,
    *,
    max_term_share: float,
) -> list[LexicalHit]:
    """The ``limit`` best chunks for ``terms`` (each with its postings) inside ``mask``."""
    frequency = {term: found.rows.size for term, found in postings.items()}
    rows = index.rows
    if max_term_share < 1.0 and len(terms) >= 2 and rows:
        # lexical.py's _selective: common terms dropped while a rarer one is left.
        terms = [t for t in terms if frequency[t] / rows <= max_term_share] or terms
    by_year = filters.year_min is not None or filters.year_max is not None
    order = list(terms)
    if not by_year and len(terms) >= 2:
        # lexical.py's _skip_plan lists the common terms last, most common last.
        common = sorted(
            (t for t in terms if frequency[t] > SKIP_SHARE * rows),
            key=frequency.__getitem__,
        )
        order = [t for t in terms if t not in common] + common
    hits = index.rank([postings[t] for t in order], mask, limit, ties_by_chunk_id=by_year)
    return [LexicalHit(chunk_id=chunk_id, score=score) for chunk_id, score in hits]
