"""FTS5's tokenizer, run in a private in-memory SQLite: the tokens of queries and documents.

The SQLite library indexes chunks with FTS5 (``porter unicode61 remove_diacritics 2``);
to rank them the same way elsewhere, a store must hold the very tokens FTS5 would
hold. Both helpers here ask FTS5 itself, in an in-memory table with the given
tokenizer declaration, and read the tokens back through an ``fts5vocab`` table in
'instance' mode, in offset order: ``QueryTokens`` for one query term (cached),
``DocumentTokens`` for a batch of documents' columns (the PostgreSQL adapter stores
them). A column's tokens, in order, are all a store needs: FTS5's offset of a token
is its position in that list, its length counts every token.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

# The SQLite library's FTS5 tokenizer (adapters/sqlite/schema.py declares the same;
# tests/unit/test_storage_tokens.py checks that they agree).
TOKENIZE = "'porter unicode61 remove_diacritics 2'"
_TOKEN_CACHE = 100_000


class QueryTokens:
    """FTS5's tokens of a query term, from FTS5 itself (cached; thread-safe)."""

    def __init__(self, declaration: str = TOKENIZE) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize = {declaration})")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    def __call__(self, term: str) -> tuple[str, ...]:
        found = self._cache.get(term)
        if found is not None:
            return found
        with self._lock:
            self._conn.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (_bindable(term),))
            rows = self._conn.execute("SELECT term FROM v ORDER BY offset").fetchall()
            self._conn.execute("DELETE FROM t")
        tokens = tuple(row[0] for row in rows)
        if len(self._cache) >= _TOKEN_CACHE:
            self._cache.clear()
        self._cache[term] = tokens
        return tokens

    def close(self) -> None:
        self._conn.close()


class DocumentTokens:
    """FTS5's tokens of documents of ``columns`` columns, column by column (thread-safe)."""

    def __init__(self, columns: int, declaration: str = TOKENIZE) -> None:
        self._columns = columns
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        names = ", ".join(f"c{i}" for i in range(columns))
        self._conn.execute(f"CREATE VIRTUAL TABLE d USING fts5({names}, tokenize = {declaration})")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(d, instance)")
        self._lock = threading.Lock()

    def __call__(self, documents: Sequence[Sequence[str]]) -> list[list[list[str]]]:
        """Per document, per column, its tokens in order."""
        out: list[list[list[str]]] = [[[] for _ in range(self._columns)] for _ in documents]
        if not documents:
            return out
        marks = ", ".join("?" * (self._columns + 1))
        names = ", ".join(f"c{i}" for i in range(self._columns))
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                self._conn.executemany(
                    f"INSERT INTO d(rowid, {names}) VALUES ({marks})",
                    (
                        (at + 1, *(_bindable(text) for text in columns))
                        for at, columns in enumerate(documents)
                    ),
                )
                rows = self._conn.execute(
                    "SELECT doc, col, term FROM v ORDER BY doc, col, offset"
                ).fetchall()
            finally:
                self._conn.execute("ROLLBACK")
        column_of = {f"c{i}": i for i in range(self._columns)}
        for doc, col, term in rows:
            out[doc - 1][column_of[col]].append(term)
        return out

    def close(self) -> None:
        self._conn.close()


def _bindable(text: str) -> str:
    # As lexical.py's FTS5 strings: a NUL is a separator, and a lone surrogate (which
    # cannot be bound) becomes U+FFFD, which FTS5 reads as no token.
    return text.replace("\x00", " ").encode("utf-8", "replace").decode("utf-8")
