"""Lexical search: FTS5 BM25 over title, headings and body, inside the reader's scope.

Terms are plain FTS5 string literals, never query syntax. The scope and filters
are index lookups on the zero-weight ``access`` column (``access.py``), ANDed
into the same query, so a chunk the actor may not read is never scored. Common
terms may be skipped exactly (``_skip_plan``); term counts and the library's
access facts are cached until the next write. Each tenant has its own FTS5 table
(``schema.fts_table``), so BM25's statistics, and the skip plan's, are the tenant's:
another tenant's library never changes a score or a ranking.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from citadel.adapters.sqlite.database import Database
from citadel.adapters.sqlite.schema import fts_exists, fts_table
from citadel.adapters.storage.access import access_query
from citadel.adapters.storage.lexical_rank import SKIP_SHARE
from citadel.adapters.storage.search_defaults import DEFAULT_MAX_TERM_SHARE, DEFAULT_WEIGHTS
from citadel.app.ports import LexicalHit
from citadel.domain.search import SearchFilters
from citadel.domain.source import AccessScope

# FTS5's bm25() constants (fts5_aux.c): k1, and the floor of a term's idf.
_BM25_K1 = 1.2
_BM25_MIN_IDF = 1e-6
# Query terms in more than this share of the chunks may be skipped (exactly, see
# _skip_plan): for rarer terms the extra queries cost about what skipping saves.
# The first try skips terms whose bounds add up to less than this many times a
# guess of the cut (1.0 to 3.0 and "all" measured: 1.5 spent the least CPU at
# p95 on the 100k benchmark library; the ranking is exact whatever the value).
_SKIP_SHARE = SKIP_SHARE  # shared with the in-memory ranking (storage/lexical_rank.py)
_CUT_GUESS_FACTOR = 1.5
_DF_CACHE = 100_000


class LexicalSearch:
    """The ``LexicalIndex`` half of ``SqliteLibrary``, over its database."""

    def __init__(
        self,
        db: Database,
        *,
        weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
        max_term_share: float = DEFAULT_MAX_TERM_SHARE,
    ) -> None:
        self._db = db
        self._weights = weights
        self._max_term_share = max_term_share
        self._df: dict[tuple[str, str], int] = {}
        self._rows: dict[str, int] = {}
        self._facts: dict[str, tuple[bool, bool]] = {}
        """Per tenant: (its FTS5 table exists, any of its live sources has an ACL)."""
        self._generation = -1

    def search(
        self, terms: Sequence[str], scope: AccessScope, filters: SearchFilters, limit: int
    ) -> Sequence[LexicalHit]:
        indexed, any_acl = self._access_facts(scope.tenant)
        if not indexed:
            return []
        table = fts_table(scope.tenant)
        terms = self._selective(table, terms)
        if not terms:
            return []
        # Terms match the text columns only; the scope and filters are index
        # lookups on the access column (access.py), ANDed inside the same query.
        # The table is the tenant's, so no tenant clause is needed.
        restrict = access_query(scope, filters, only_tenant=scope.tenant, any_acl=any_acl)
        weights = ", ".join(str(float(w)) for w in (*self._weights, 0.0))
        if filters.year_min is not None or filters.year_max is not None:
            match = f"{{title headings body}} : ({_any_of(terms)})"
            if restrict:
                match += f" AND {restrict}"
            sql = (
                f"SELECT c.chunk_id, -bm25({table}, {weights}) AS score FROM {table}"
                f" JOIN chunks c ON c.rowid = {table}.rowid"
                " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
                f" WHERE {table} MATCH ? AND (? IS NULL OR s.year >= ?)"
                " AND (? IS NULL OR s.year <= ?) ORDER BY score DESC, c.chunk_id LIMIT ?"
            )
            args = [
                match,
                filters.year_min,
                filters.year_min,
                filters.year_max,
                filters.year_max,
                limit,
            ]
            found = self._db.reader.execute(sql, args).fetchall()
            return [LexicalHit(chunk_id=row[0], score=float(row[1])) for row in found]
        ordered, bounds = self._skip_plan(table, terms, limit)
        skip = len(bounds)
        while skip:
            # Rank only the chunks holding a kept term, scored with every term (the
            # skipped ones as well); see _skip_plan for why that can be exact.
            kept, skipped = _any_of(ordered[:-skip]), _any_of(ordered[-skip:])
            forms = [f"(({kept}) AND ({skipped}))", f"(({kept}) NOT ({skipped}))"]
            hits = self._ranked(table, forms, restrict, weights, limit)
            if len(hits) < limit:
                break
            cut = min(hit.score for hit in hits)
            if cut > sum(bounds[-skip:]):
                return hits
            # The full list's cut is at least ``cut`` (these chunks reach it), so
            # skipping the terms whose bounds add up to less is exact: one retry.
            skip = max((n for n in range(1, skip) if sum(bounds[-n:]) < cut), default=0)
        return self._ranked(table, [f"({_any_of(ordered)})"], restrict, weights, limit)

    def _ranked(
        self, table: str, expressions: Sequence[str], restrict: str, weights: str, limit: int
    ) -> Sequence[LexicalHit]:
        """The ``limit`` best chunks matching any of ``expressions`` (disjoint sets of
        chunks), ranked inside FTS5; only those rows are joined to their chunks. Ties
        go to the lower rowid, so every form of a query keeps the same chunks."""
        ranked = (
            f"SELECT rowid, -bm25({table}, {weights}) AS score FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY score DESC, rowid LIMIT ?"
        )
        if len(expressions) == 1:
            best = ranked
        else:
            best = (
                " UNION ALL ".join(f"SELECT * FROM ({ranked})" for _ in expressions)
                + " ORDER BY score DESC, rowid LIMIT ?"
            )
        args: list[object] = []
        for expression in expressions:
            match = f"{{title headings body}} : {expression}"
            args += [f"{match} AND {restrict}" if restrict else match, limit]
        if len(expressions) > 1:
            args.append(limit)
        sql = (
            f"SELECT c.chunk_id, f.score FROM ({best}) f"
            " JOIN chunks c ON c.rowid = f.rowid ORDER BY f.score DESC, c.chunk_id"
        )
        rows = self._db.reader.execute(sql, args).fetchall()
        return [LexicalHit(chunk_id=row[0], score=float(row[1])) for row in rows]

    def _skip_plan(
        self, table: str, terms: Sequence[str], limit: int
    ) -> tuple[Sequence[str], Sequence[float]]:
        """The terms in the order every form of the query lists them, and the most
        each of the last (skippable) ones can add to a chunk's bm25().

        FTS5 computes bm25() for every chunk matching any term, so terms found in a
        large share of the library set the cost of a query. A term's contribution
        is below idf * (k1 + 1) (bm25's saturation bound), so a chunk holding only
        skipped terms scores below the sum of their bounds; when the ``limit`` best
        chunks holding a kept term all score more, those are exactly the ``limit``
        best of all. The caller checks that, and otherwise skips fewer terms or
        ranks the whole query. Terms in more than ``_SKIP_SHARE`` of the chunks
        may be skipped, the most common first; they go last, most common last, so
        bm25() adds the contributions in the same order in every form.
        """
        if len(terms) < 2:
            return list(terms), []
        rows, frequency = self._frequencies(table, terms)
        common = sorted(
            (t for t in terms if frequency[t] > _SKIP_SHARE * rows), key=frequency.__getitem__
        )
        ordered = [t for t in terms if t not in common] + common
        # At least one term is kept, and the kept ones must be in ``limit`` chunks.
        skippable = min(len(common), len(ordered) - 1)
        while skippable and sum(frequency[t] for t in ordered[:-skippable]) < limit:
            skippable -= 1
        idf = {t: _idf(rows, frequency[t]) for t in ordered}
        bounds = [(_BM25_K1 + 1.0) * idf[t] * (1.0 + 1e-9) for t in ordered[-skippable:]]
        # A guess of the cut: a chunk of average length holding once the kept term
        # at which the kept terms, rarest first, are in ``limit`` chunks scores that
        # term's idf. Skipping terms whose bounds add up to much more would likely
        # fail the check and cost a retry, so the first try skips fewer.
        while skippable:
            kept = sorted(ordered[:-skippable], key=frequency.__getitem__)
            reach = itertools.accumulate(frequency[t] for t in kept)
            guess = next(idf[t] for t, n in zip(kept, reach, strict=True) if n >= limit)
            if sum(bounds[-skippable:]) < _CUT_GUESS_FACTOR * guess:
                break
            skippable -= 1
        bounds = bounds[len(bounds) - skippable :]
        return ordered, bounds

    def _frequencies(self, table: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The number of chunks indexed in ``table`` (one tenant's) and, per term, how
        many hold it in a text column (bm25's n(q)); cached until the next write."""
        self._current()
        if len(self._df) > _DF_CACHE:
            self._df.clear()
        if table not in self._rows:
            (self._rows[table],) = self._db.reader.execute(
                f"SELECT count(*) FROM {table}"
            ).fetchone()
        for term in terms:
            if (table, term) not in self._df:
                (self._df[(table, term)],) = self._db.reader.execute(
                    f"SELECT count(*) FROM {table} WHERE {table} MATCH ?",
                    (f"{{title headings body}} : {_fts_string(term)}",),
                ).fetchone()
        return self._rows[table], {term: self._df[(table, term)] for term in terms}

    def _selective(self, table: str, terms: Sequence[str]) -> Sequence[str]:
        """Drop terms that occur in more than ``max_term_share`` of the chunks, when any
        rarer term is left: BM25 gives them little weight, yet FTS5 scores every chunk
        they match, so they set the cost of a search."""
        if self._max_term_share >= 1.0 or len(terms) < 2:
            return terms
        rows, frequency = self._frequencies(table, terms)
        if not rows:
            return terms
        kept = [t for t in terms if frequency[t] / rows <= self._max_term_share]
        return kept or terms

    def _current(self) -> None:
        """Drop what is cached from before the last write (by any process)."""
        generation = self._db.generation()
        if generation != self._generation:
            self._df.clear()
            self._rows.clear()
            self._facts.clear()
            self._generation = generation

    def _access_facts(self, tenant: str) -> tuple[bool, bool]:
        """(whether ``tenant`` has an FTS5 table; whether any of its live sources has an
        ACL), cached until the next write."""
        self._current()
        found = self._facts.get(tenant)
        if found is None:
            (restricted,) = self._db.reader.execute(
                "SELECT coalesce(max(acl_groups != '[]'), 0) FROM sources"
                " WHERE tenant = ? AND deleted = 0",
                (tenant,),
            ).fetchone()
            found = (fts_exists(self._db.reader, tenant), bool(restricted))
            self._facts[tenant] = found
        return found


def _idf(rows: int, found: int) -> float:
    """bm25()'s idf of a term in ``found`` of ``rows`` chunks (fts5_aux.c)."""
    return max(math.log((rows - found + 0.5) / (found + 0.5)), _BM25_MIN_IDF)


def _any_of(terms: Sequence[str]) -> str:
    return " OR ".join(_fts_string(term) for term in terms)


def _fts_string(term: str) -> str:
    # A term becomes an FTS5 string literal, so nothing in it is query syntax. A NUL
    # would end the literal early and a lone surrogate cannot be bound, so both become
    # separators rather than errors.
    term = term.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
    return '"' + term.replace('"', '""') + '"'
