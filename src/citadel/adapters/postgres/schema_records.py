"""The record tables' section of the PostgreSQL schema: users, sessions, the audit log.

``database.py`` applies every statement here on open, after the library's tables and
inside the same locked transaction, so each is idempotent (``CREATE … IF NOT EXISTS``).
The users and audit modules own this section; the schema version is ``schema.py``'s.

The tables mirror SQLite's (``adapters/sqlite/schema.py``): a user's groups are a
sorted JSON list in text, times are the ISO text the application wrote (kept byte
for byte), the audit log's head is the ``audit_head`` row of ``meta``. The audit log
is append-only in the database itself: a trigger refuses every UPDATE and DELETE,
row by row, and a statement trigger refuses TRUNCATE (which row triggers do not
see), whoever the connected role is — the table's owner included, to whom a REVOKE
would not apply. Only someone who may alter the table (drop or disable the
triggers) can change a record, and the chain's MACs make that show
(``citadel.domain.audit_chain``); every server's start makes the triggers again,
enabled (``CREATE OR REPLACE TRIGGER``), so a dropped or disabled one comes back.
"""

RECORDS_DDL: tuple[str, ...] = (
    # Users and the sha256 of their API tokens (never the tokens). Names are unique
    # across tenants; user_groups is a JSON list; status is 'active' or 'disabled'.
    """CREATE TABLE IF NOT EXISTS users (
    name         TEXT PRIMARY KEY,
    tenant       TEXT NOT NULL,
    role         TEXT NOT NULL,
    user_groups  TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE
)""",
    "CREATE INDEX IF NOT EXISTS users_tenant ON users(tenant, name)",
    # Browser sessions signed out before they expired (the id is a hash of the
    # session's random CSRF secret); kept until they would have expired.
    """CREATE TABLE IF NOT EXISTS ended_sessions (
    session_id TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS ended_sessions_expiry ON ended_sessions(expires_at)",
    # OpenID identities (issuer, subject) of users, and one-time sign-in links (the
    # sha256 of each link's secret), as in SQLite.
    """CREATE TABLE IF NOT EXISTS user_identities (
    issuer  TEXT NOT NULL,
    subject TEXT NOT NULL,
    name    TEXT NOT NULL REFERENCES users(name),
    PRIMARY KEY (issuer, subject)
)""",
    """CREATE TABLE IF NOT EXISTS signin_links (
    link_sha256 TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    expires_at  BIGINT NOT NULL
)""",
    # The audit log: one row per answer, chained under the audit key; the head
    # (count, last hash, first keyed record, its MAC) is meta's 'audit_head'.
    """CREATE TABLE IF NOT EXISTS audit_log (
    seq       BIGINT PRIMARY KEY,
    answer_id TEXT NOT NULL UNIQUE,
    body      TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash      TEXT NOT NULL
)""",
    """CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$""",
    """CREATE OR REPLACE TRIGGER audit_log_no_change
BEFORE UPDATE OR DELETE ON audit_log
FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()""",
    """CREATE OR REPLACE TRIGGER audit_log_no_truncate
BEFORE TRUNCATE ON audit_log
FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()""",
)
