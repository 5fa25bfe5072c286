"""The record tables' section of the PostgreSQL schema: users, sessions, the audit log.

``database.py`` applies every statement here on open, after the library's tables and
inside the same locked transaction, so each is idempotent (``CREATE … IF NOT EXISTS``).
The users and audit modules own this section; the schema version is ``schema.py``'s.
"""

RECORDS_DDL: tuple[str, ...] = ()
