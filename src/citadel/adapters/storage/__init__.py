"""Backend-neutral storage logic shared by the SQLite and PostgreSQL adapters.

Row mapping, the access tokens of scope and filters, FTS5's tokenizer, BM25 from
memory, the dense matrix and the search defaults: nothing here opens a database.
The two backends import each other nowhere; what they share is here (an import
contract in pyproject.toml).
"""
