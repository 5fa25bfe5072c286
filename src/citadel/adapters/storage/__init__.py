"""Backend-neutral storage logic shared by the SQLite and PostgreSQL adapters.

Row mapping, the access tokens of scope and filters, FTS5's tokenizer, BM25 from
memory and the dense matrix: nothing here opens a database.
"""
