"""FTS5's tokenizer as the stores share it (adapters/storage/tokens.py)."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from citadel.adapters.sqlite.lexical_fts5 import tokenizer_declaration
from citadel.adapters.sqlite.schema import ensure_fts, fts_table
from citadel.adapters.storage.tokens import TOKENIZE, DocumentTokens, QueryTokens


def test_the_shared_tokenizer_is_the_one_the_sqlite_library_declares() -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        ensure_fts(conn, "acme")
        assert tokenizer_declaration(conn, fts_table("acme")) == TOKENIZE


def test_documents_are_tokenised_column_by_column_in_order_as_queries_are() -> None:
    documents = DocumentTokens(3)
    query = QueryTokens()
    try:
        found = documents(
            [
                ("Running Vectors", "", "The café's data-frames were RUNNING."),
                ("", "%", "nul\x00inside \ud800 x"),
            ]
        )
        assert found[0] == [
            ["run", "vector"],
            [],
            ["the", "cafe", "s", "data", "frame", "were", "run"],
        ]
        assert found[1] == [[], [], ["nul", "insid", "x"]]
        assert query("data-frames") == ("data", "frame")
        assert query("Café") == ("cafe",)
        assert query("%") == ()
        assert documents([]) == []
    finally:
        documents.close()
        query.close()
