"""SQLite: the embedded default store (registry, chunks, FTS5 lexical index)."""
