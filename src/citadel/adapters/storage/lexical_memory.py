"""BM25 in memory over the store's own tokens, computed exactly as FTS5's bm25().

The index is built from rows any store can give: per indexed chunk its rowid,
chunk id, year and the number of tokens in all its columns (the access column
included, as FTS5 counts it); per token the chunks holding it in a text column
with its weighted frequency (a compressed sparse row layout: one array of row
numbers and one of frequencies, sliced per token); per access token the chunks
holding it. Nothing here knows SQLite: ``lexical_fts5.py`` reads these rows
from FTS5, a PostgreSQL adapter can give the same rows from its tables.

Scoring repeats fts5_aux.c operation for operation, in IEEE doubles:

    score = sum over the query's phrases, in their order, of
            idf * (f * (k1 + 1)) / (f + k1 * ((1 - b) + b * D / avgdl))

with f the phrase's column-weighted frequency in the chunk, D the chunk's
token count, avgdl the library's total tokens over its rows, idf =
log((N - n + 0.5) / (n + 0.5)) floored at 1e-6, k1 = 1.2, b = 0.75; a phrase
absent from a chunk adds 0.0, which changes nothing. So the scores are FTS5's
to the last bit for the default (integer) weights, and the order is its order:
score descending, ties to the lower rowid (or chunk id, as the caller asks).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

Rows = npt.NDArray[np.int32]
Mask = npt.NDArray[np.bool_]
_MASK_CACHE = 64
_PHRASE_CACHE = 4096


@dataclass(frozen=True, slots=True)
class Postings:
    """The chunks (row numbers, ascending) holding one token or phrase, and its
    column-weighted frequency in each."""

    rows: Rows
    freqs: npt.NDArray[np.number[Any]]


@dataclass(frozen=True, slots=True)
class Sparse:
    """Postings of many keys in one pair of arrays: key i owns [starts[i], starts[i+1])."""

    keys: Mapping[str, int]
    starts: npt.NDArray[np.int64]
    rows: Rows
    freqs: npt.NDArray[np.number[Any]] | None = None

    def get(self, key: str) -> Postings | None:
        at = self.keys.get(key)
        if at is None:
            return None
        lo, hi = int(self.starts[at]), int(self.starts[at + 1])
        freqs = self.freqs[lo:hi] if self.freqs is not None else np.ones(hi - lo)
        return Postings(self.rows[lo:hi], freqs)

    @property
    def nbytes(self) -> int:
        extra = self.freqs.nbytes if self.freqs is not None else 0
        # The key dictionary: about 100 bytes per entry with its string.
        return self.starts.nbytes + self.rows.nbytes + extra + 100 * len(self.keys)


@dataclass(slots=True)
class MemoryIndex:
    """One consistent picture of the lexical index at a store generation."""

    generation: int
    rowids: npt.NDArray[np.int64]
    chunk_ids: Sequence[str]
    years: npt.NDArray[np.float64]
    lengths: npt.NDArray[np.int64]
    text: Sparse
    access: Sparse
    weights: tuple[float, ...]
    _norm: npt.NDArray[np.float64] = field(init=False)
    masks: dict[object, Mask | None] = field(default_factory=dict)
    phrases: dict[tuple[str, ...], Postings] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rows = len(self.rowids)
        # (double)nToken / (double)nRow, then k1 * (1 - b + b * D / avgdl) per chunk,
        # in the order C evaluates it.
        avgdl = float(int(self.lengths.sum())) / float(rows) if rows else 1.0
        self._norm = K1 * ((1 - B) + (B * self.lengths.astype(np.float64)) / avgdl)

    @property
    def rows(self) -> int:
        return len(self.rowids)

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (chunk id strings at their size)."""
        ids = sum(len(c) + 49 for c in self.chunk_ids) + 8 * len(self.chunk_ids)
        own = self.rowids.nbytes + self.years.nbytes + self.lengths.nbytes + self._norm.nbytes
        return own + ids + self.text.nbytes + self.access.nbytes

    def postings(self, tokens: Sequence[str]) -> Postings | None:
        """A single token's postings (None: not in the index; an empty phrase
        needs positions, which the caller supplies through ``phrases``)."""
        if len(tokens) == 1:
            found = self.text.get(tokens[0])
            return found if found is not None else Postings(np.zeros(0, np.int32), np.zeros(0))
        return self.phrases.get(tuple(tokens))

    def remember_phrase(self, tokens: Sequence[str], postings: Postings) -> None:
        if len(self.phrases) >= _PHRASE_CACHE:
            self.phrases.clear()
        self.phrases[tuple(tokens)] = postings

    def mask(
        self,
        clauses: Sequence[Sequence[str]],
        year_min: int | None,
        year_max: int | None,
    ) -> Mask | None:
        """The chunks the scope and filters admit (None: all): every clause is a
        list of access tokens of which a chunk must hold one; years compare as
        SQL does (a chunk without a year fails any year bound)."""
        key = (tuple(tuple(c) for c in clauses), year_min, year_max)
        if key in self.masks:
            return self.masks[key]
        mask: Mask | None = None
        for clause in clauses:
            admitted = np.zeros(self.rows, dtype=bool)
            for token in clause:
                found = self.access.get(token)
                if found is not None:
                    admitted[found.rows] = True
            mask = admitted if mask is None else mask & admitted
        if year_min is not None:
            mask = (self.years >= year_min) & (True if mask is None else mask)
        if year_max is not None:
            mask = (self.years <= year_max) & (True if mask is None else mask)
        if mask is not None and bool(mask.all()):
            mask = None  # nothing excluded: no gather per posting
        if len(self.masks) >= _MASK_CACHE:
            self.masks.clear()
        self.masks[key] = mask
        return mask

    def idf(self, found: int) -> float:
        value = math.log((self.rows - found + 0.5) / (found + 0.5))
        return value if value > 0.0 else MIN_IDF

    def rank(
        self,
        phrases: Sequence[Postings],
        mask: Mask | None,
        limit: int,
        *,
        ties_by_chunk_id: bool = False,
    ) -> list[tuple[str, float]]:
        """The ``limit`` best chunks matching any phrase (summed in the given order)
        among those ``mask`` admits, as (chunk id, score), best first, equal scores
        by chunk id; at the cut, ties go to the lower rowid (or chunk id)."""
        scores = np.zeros(self.rows, dtype=np.float64)
        matched = np.zeros(self.rows, dtype=bool)
        for postings in phrases:
            rows, freqs = postings.rows, postings.freqs
            if rows.size == 0:
                continue
            idf = self.idf(rows.size)
            if mask is not None:
                keep = mask[rows]
                rows, freqs = rows[keep], freqs[keep]
            f = freqs.astype(np.float64, copy=False)
            scores[rows] += idf * ((f * (K1 + 1.0)) / (f + self._norm[rows]))
            matched[rows] = True
        found = np.flatnonzero(matched)
        if found.size == 0 or limit <= 0:
            return []
        values = scores[found]
        ids = self.chunk_ids
        k = min(limit, found.size)
        if k < found.size:
            cut = values[np.argpartition(-values, k - 1)[k - 1]]
            above = np.flatnonzero(values > cut)
            tied = np.flatnonzero(values == cut)
            if ties_by_chunk_id:
                tied = np.array(
                    sorted(tied.tolist(), key=lambda i: ids[int(found[i])]), dtype=np.intp
                )
            chosen = np.concatenate([above, tied[: k - above.size]])
        else:
            chosen = np.arange(found.size)
        hits = [(ids[int(found[i])], float(values[i])) for i in chosen.tolist()]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits


def phrase_postings(
    components: Sequence[tuple[Rows, npt.NDArray[np.int64], npt.NDArray[np.int64]]],
    weights: Sequence[float],
) -> Postings:
    """A phrase's postings from each token's instances (row number, column, offset)
    in the text columns: a match is token i at offset o + i of one column, for
    every i; each start position counts once, as FTS5 counts phrase instances."""
    starts: npt.NDArray[np.int64] | None = None
    for shift, (rows, columns, offsets) in enumerate(components):
        keys = ((rows.astype(np.int64) * 4 + columns) << 32) + offsets - shift
        keys = np.unique(keys)
        starts = keys if starts is None else np.intersect1d(starts, keys, assume_unique=True)
    if starts is None or starts.size == 0:
        return Postings(np.zeros(0, np.int32), np.zeros(0))
    cells, counts = np.unique(starts >> 32, return_counts=True)
    weight = np.asarray(weights, dtype=np.float64)[cells % 4] * counts
    rows_of = (cells // 4).astype(np.int32)
    rows, first = np.unique(rows_of, return_index=True)
    return Postings(rows, np.add.reduceat(weight, first))
