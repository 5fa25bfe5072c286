"""Reading FTS5's own tokens into a ``MemoryIndex``, and tokenising queries as FTS5 does.

The index is read through an ``fts5vocab`` table in 'instance' mode (one row
per token occurrence: token, rowid, column, offset), aggregated per token in
SQL, so the tokens are exactly those FTS5 stored (porter, unicode61, diacritics
removed). Everything is read in one read transaction with the generation, so
an index is a consistent picture of one generation. A query term is tokenised
by FTS5 itself, with the store's tokenizer declaration, in a private in-memory
table; a term of several tokens is a phrase, whose postings come from the
instances of its tokens (offsets) in the same picture.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from citadel.adapters.storage.lexical_memory import MemoryIndex, Postings, Sparse, phrase_postings

COLUMNS = ("title", "headings", "body", "access")
_TEXT_COLUMNS = 3
# Tokens are aggregated in batches of about this many instances (bounding the
# memory a build takes beside the index).
_BATCH_INSTANCES = 1 << 20
# A column's index from the length of its name (distinct for the four columns),
# which SQL computes faster than a CASE on the name.
_COLUMN_OF_LENGTH = np.full(16, -1, dtype=np.int64)
for _at, _name in enumerate(COLUMNS):
    _COLUMN_OF_LENGTH[len(_name)] = _at


class Cancelled(Exception):
    """The library closed while an index was being read."""


def tokenizer_declaration(conn: sqlite3.Connection, table: str) -> str | None:
    """The ``tokenize = '...'`` argument of the store's FTS5 table (None: no such table)."""
    row = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if row is None:
        return None
    found = re.search(r"tokenize\s*=\s*('(?:[^']|'')*')", row[0])
    return found.group(1) if found else "'unicode61'"


def connect(path: Path) -> sqlite3.Connection:
    """A private connection for reading indexes (its temp schema holds the vocab tables)."""
    return sqlite3.connect(path, check_same_thread=False, isolation_level=None)


def _vocab(conn: sqlite3.Connection, table: str) -> str | None:
    """The instance-mode vocabulary of ``table`` on ``conn`` (None: no such table)."""
    if tokenizer_declaration(conn, table) is None:
        return None
    name = f"temp.{table}_instances"
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {table}, instance)"
    )
    return name


def read_index(
    conn: sqlite3.Connection,
    table: str,
    weights: Sequence[float],
    generation_sql: str,
    cancelled: Callable[[], bool] = lambda: False,
) -> MemoryIndex:
    """The whole lexical index at one generation (read in one transaction)."""
    column_weights = np.array([*weights[:_TEXT_COLUMNS], 0.0], dtype=np.float64)
    # Integer weights give integer frequencies, held exactly in the smallest type.
    integral = all(float(w).is_integer() and 0 <= w < 2**8 for w in weights[:_TEXT_COLUMNS])
    conn.execute("BEGIN")
    try:
        (generation,) = conn.execute(generation_sql).fetchone()
        vocab = _vocab(conn, table)
        rowids = np.fromiter(
            (row[0] for row in conn.execute(f"SELECT id FROM {table}_docsize ORDER BY id"))
            if vocab is not None
            else (),
            np.int64,
        )
        meta = _chunk_rows(conn, rowids)
        found = _Found(rowids, column_weights, np.float32 if integral else np.float64)
        cursor = conn.execute(
            f"SELECT term, count(*), group_concat(doc * 16 + length(col)) FROM {vocab}"
            " GROUP BY term"
            if vocab is not None
            else "SELECT '', 0, '' WHERE 0"
        )
        pending: list[tuple[str, int, str]] = []
        size = 0
        while rows := cursor.fetchmany(256):
            pending += rows
            size += sum(row[1] for row in rows)
            if size >= _BATCH_INSTANCES:
                if cancelled():
                    raise Cancelled
                found.add(pending)
                pending, size = [], 0
        if pending:
            found.add(pending)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    chunk_ids, years = meta
    return MemoryIndex(
        generation=int(generation),
        rowids=rowids,
        chunk_ids=chunk_ids,
        years=years,
        lengths=found.lengths,
        text=found.text.sparse(compact=integral),
        access=found.access.sparse(),
        weights=tuple(float(w) for w in column_weights),
    )


class _Lists:
    """Postings gathered batch by batch, in key order, for one ``Sparse``."""

    def __init__(self) -> None:
        self.keys: dict[str, int] = {}
        self.counts: list[npt.NDArray[np.int64]] = []
        self.rows: list[npt.NDArray[np.int32]] = []
        self.freqs: list[npt.NDArray[np.floating]] = []

    def add(
        self,
        terms: Sequence[str],
        term_of: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
        freqs: npt.NDArray[np.float64] | None,
    ) -> None:
        per_term = np.bincount(term_of, minlength=len(terms))
        for at in np.flatnonzero(per_term).tolist():
            self.keys[terms[at]] = len(self.keys)
        self.counts.append(per_term[per_term > 0])
        self.rows.append(rows.astype(np.int32))
        if freqs is not None:
            self.freqs.append(freqs)

    def sparse(self, *, compact: bool = False) -> Sparse:
        """The postings in one layout; ``compact``: the frequencies are integers, kept
        in uint8 or uint16 when they fit (exact; scoring converts them to doubles)."""
        counts = np.concatenate(self.counts) if self.counts else np.zeros(0, np.int64)
        starts = np.zeros(counts.size + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        rows = np.concatenate(self.rows) if self.rows else np.zeros(0, np.int32)
        freqs = None
        if self.freqs:
            freqs = np.concatenate(self.freqs)
            top = float(freqs.max()) if freqs.size else 0.0
            if compact and top < 2**16:
                freqs = freqs.astype(np.uint8 if top < 2**8 else np.uint16)
        return Sparse(keys=self.keys, starts=starts, rows=rows, freqs=freqs)


class _Found:
    """Instances (token, rowid, column) aggregated into postings and lengths, vectorised
    per batch of tokens: ``doc * 16 + length(col)`` packs a rowid and its column."""

    def __init__(
        self,
        rowids: npt.NDArray[np.int64],
        weights: npt.NDArray[np.float64],
        dtype: type[np.floating],
    ) -> None:
        self._rowids = rowids
        self._weights = weights
        self._dtype = dtype
        self.lengths = np.zeros(len(rowids), dtype=np.int64)
        self.text = _Lists()
        self.access = _Lists()

    def add(self, batch: Sequence[tuple[str, int, str]]) -> None:
        terms = [row[0] for row in batch]
        codes = np.fromstring(",".join(row[2] for row in batch), dtype=np.int64, sep=",")
        term_of = np.repeat(np.arange(len(batch), dtype=np.int64), [row[1] for row in batch])
        columns = _COLUMN_OF_LENGTH[codes & 15]
        if (columns < 0).any():
            raise sqlite3.DataError("an FTS5 column this index does not know")
        n = max(len(self._rowids), 1)
        rows = np.searchsorted(self._rowids, codes >> 4)
        cells, counts = np.unique((term_of * n + rows) * 4 + columns, return_counts=True)
        columns, held = cells % 4, cells // 4
        by_row = np.bincount(held % n, weights=counts, minlength=n)[: len(self._rowids)]
        self.lengths += by_row.astype(np.int64)
        text = columns < _TEXT_COLUMNS
        pairs, first = np.unique(held[text], return_index=True)
        weighted = self._weights[columns[text]] * counts[text]
        freqs = (np.add.reduceat(weighted, first) if pairs.size else np.zeros(0)).astype(
            self._dtype
        )
        self.text.add(terms, pairs // n, pairs % n, freqs)
        access = held[~text]
        self.access.add(terms, access // n, access % n, None)


def read_phrase(
    conn: sqlite3.Connection,
    table: str,
    index: MemoryIndex,
    tokens: Sequence[str],
    generation_sql: str,
) -> Postings | None:
    """A phrase's postings in ``index`` (None when the store has moved on since)."""
    conn.execute("BEGIN")
    try:
        (generation,) = conn.execute(generation_sql).fetchone()
        vocab = _vocab(conn, table)
        if int(generation) != index.generation or vocab is None:
            return None
        components = []
        for token in tokens:
            # Packed in SQL and parsed by numpy: a common token has thousands of rows.
            packed, offsets = conn.execute(
                f"SELECT group_concat(doc * 16 + length(col)), group_concat(offset) FROM {vocab}"
                " WHERE term = ? AND col IN ('title', 'headings', 'body')",
                (token,),
            ).fetchone()
            codes = np.fromstring(packed or "", dtype=np.int64, sep=",")
            at = np.fromstring(offsets or "", dtype=np.int64, sep=",")
            rows = np.searchsorted(index.rowids, codes >> 4).astype(np.int32)
            components.append((rows, _COLUMN_OF_LENGTH[codes & 15], at))
    finally:
        conn.execute("COMMIT")
    return phrase_postings(components, index.weights)


def _chunk_rows(
    conn: sqlite3.Connection, rowids: npt.NDArray[np.int64]
) -> tuple[list[str], npt.NDArray[np.float64]]:
    """Each indexed row's chunk id and its source's year (NaN when it has none)."""
    chunk_ids = [""] * len(rowids)
    years = np.full(len(rowids), np.nan)
    found = conn.execute(
        "SELECT c.rowid, c.chunk_id, s.year FROM chunks c"
        " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
    )
    for rowid, chunk_id, year in found:
        at = int(np.searchsorted(rowids, rowid))
        if at < len(rowids) and rowids[at] == rowid:
            chunk_ids[at] = chunk_id
            if year is not None:
                years[at] = year
    return chunk_ids, years
