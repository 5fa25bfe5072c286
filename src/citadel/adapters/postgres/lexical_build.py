"""Reading a tenant's lexical rows into a ``MemoryIndex``, and a phrase's postings.

The rows hold FTS5's tokens per column, space-separated, in order (``chunks.py``),
so a token's FTS5 offset is its position in its column and a chunk's length (bm25's
D) is its number of tokens in all four columns, the access column included, as
FTS5 counts them. Postings are aggregated with numpy as ``lexical_fts5.py`` does
from FTS5's own vocabulary: per token the chunks holding it in a text column with
its column-weighted frequency, per access token the chunks holding it.
Callers read inside a snapshot (``Database.read(snapshot=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citadel.adapters.postgres.database import Connection
from citadel.adapters.storage.lexical_memory import MemoryIndex, Postings, Sparse, phrase_postings

_TEXT_COLUMNS = 3
_GENERATION = "SELECT value FROM meta WHERE key = 'generation'"


def _generation(conn: Connection) -> int:
    row = conn.execute(_GENERATION).fetchone()
    return int(row[0]) if row is not None else 0


def read_index(conn: Connection, tenant: str, weights: Sequence[float]) -> MemoryIndex:
    """``tenant``'s whole lexical index at the snapshot's generation."""
    generation = _generation(conn)
    rows = conn.execute(
        "SELECT l.rowid, c.chunk_id, s.year, l.title, l.headings, l.body, l.access"
        " FROM lexical l JOIN chunks c ON c.rowid = l.rowid"
        " JOIN sources s ON s.tenant = c.tenant AND s.source_id = c.source_id"
        " WHERE l.tenant = %s ORDER BY l.rowid",
        (tenant,),
    ).fetchall()
    column_weights = np.array([*weights[:_TEXT_COLUMNS], 0.0], dtype=np.float64)
    integral = all(float(w).is_integer() and 0 <= w < 2**8 for w in weights[:_TEXT_COLUMNS])
    n = len(rows)
    text_vocab: dict[str, int] = {}
    access_vocab: dict[str, int] = {}
    text_ids: list[int] = []
    text_rows: list[int] = []
    text_cols: list[int] = []
    access_ids: list[int] = []
    access_rows: list[int] = []
    lengths = np.zeros(n, dtype=np.int64)
    years = np.full(n, np.nan)
    for at, (_, _, year, *columns) in enumerate(rows):
        if year is not None:
            years[at] = year
        total = 0
        for column, value in enumerate(columns[:_TEXT_COLUMNS]):
            if not value:
                continue
            ids = [text_vocab.setdefault(t, len(text_vocab)) for t in value.split(" ")]
            total += len(ids)
            text_ids += ids
            text_rows += [at] * len(ids)
            text_cols += [column] * len(ids)
        if columns[_TEXT_COLUMNS]:
            ids = [access_vocab.setdefault(t, len(access_vocab)) for t in columns[3].split(" ")]
            total += len(ids)
            access_ids += ids
            access_rows += [at] * len(ids)
        lengths[at] = total
    width = max(n, 1)
    # Text postings: one cell per (token, row), its frequency the column weights summed.
    keys = np.asarray(text_ids, dtype=np.int64) * width + np.asarray(text_rows, dtype=np.int64)
    cells, inverse = np.unique(keys, return_inverse=True)
    weighted = column_weights[np.asarray(text_cols, dtype=np.int64)]
    freqs = np.bincount(inverse.reshape(-1), weights=weighted, minlength=cells.size).astype(
        np.float64
    )
    text = _sparse(text_vocab, cells // width, cells % width, freqs, integral)
    held = np.unique(
        np.asarray(access_ids, dtype=np.int64) * width + np.asarray(access_rows, dtype=np.int64)
    )
    access = _sparse(access_vocab, held // width, held % width, None, False)
    return MemoryIndex(
        generation=generation,
        rowids=np.fromiter((row[0] for row in rows), np.int64, n),
        chunk_ids=[row[1] for row in rows],
        years=years,
        lengths=lengths,
        text=text,
        access=access,
        weights=tuple(float(w) for w in column_weights),
    )


def _sparse(
    vocab: dict[str, int],
    ids: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
    freqs: npt.NDArray[np.float64] | None,
    compact: bool,
) -> Sparse:
    """Postings sorted by (token id, row) as one ``Sparse``; integer frequencies are
    kept in uint8 or uint16 when they fit (exact), as ``lexical_fts5.py`` keeps them."""
    counts = np.bincount(ids, minlength=len(vocab))
    starts = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    kept: npt.NDArray[np.number] | None = None
    if freqs is not None:
        top = float(freqs.max()) if freqs.size else 0.0
        if compact and top < 2**16:
            kept = freqs.astype(np.uint8 if top < 2**8 else np.uint16)
        else:
            kept = freqs.astype(np.float32 if compact else np.float64)
    return Sparse(keys=vocab, starts=starts, rows=rows.astype(np.int32), freqs=kept)


def read_phrase(conn: Connection, index: MemoryIndex, tokens: Sequence[str]) -> Postings | None:
    """A phrase's postings in ``index`` (None when the store has moved on since)."""
    if _generation(conn) != index.generation:
        return None
    holding: npt.NDArray[np.int32] | None = None
    for token in tokens:
        found = index.text.get(token)
        if found is None:
            return Postings(np.zeros(0, np.int32), np.zeros(0))
        holding = found.rows if holding is None else np.intersect1d(holding, found.rows)
    if holding is None or holding.size == 0:
        return Postings(np.zeros(0, np.int32), np.zeros(0))
    rows = conn.execute(
        "SELECT rowid, title, headings, body FROM lexical WHERE rowid = ANY(%s) ORDER BY rowid",
        (index.rowids[holding].tolist(),),
    ).fetchall()
    wanted = {token: at for at, token in enumerate(tokens)}
    found_rows: list[list[int]] = [[] for _ in tokens]
    found_cols: list[list[int]] = [[] for _ in tokens]
    found_offsets: list[list[int]] = [[] for _ in tokens]
    for rowid, *columns in rows:
        row = int(np.searchsorted(index.rowids, rowid))
        for column, value in enumerate(columns):
            for offset, token in enumerate(value.split(" ") if value else ()):
                at = wanted.get(token)
                if at is None:
                    continue
                # A token repeated in the phrase is an instance of each of its places.
                for place, each in enumerate(tokens):
                    if each == token:
                        found_rows[place].append(row)
                        found_cols[place].append(column)
                        found_offsets[place].append(offset)
    components = [
        (
            np.asarray(found_rows[i], dtype=np.int32),
            np.asarray(found_cols[i], dtype=np.int64),
            np.asarray(found_offsets[i], dtype=np.int64),
        )
        for i in range(len(tokens))
    ]
    return phrase_postings(components, index.weights)
