"""Benchmark: ``citadel db migrate`` of an embedded library into PostgreSQL.

Ingests HTML pages of the PostgreSQL manual (``../shared/books/html``) into a SQLite
library until it holds ``--chunks`` chunks (no answers: the audit chain is empty;
the tests copy chains), then runs the CLI's ``db migrate --to`` into a fresh
embedded PostgreSQL database (``tests/postgres.py``) and prints its per-stage times
(copy per table, lexical rows, verification) and the whole command's wall time,
audit verify included.

Run:
  .venv/bin/python bench/postgres_migrate.py --chunks 10000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.postgres (the embedded server)

from tests import postgres  # noqa: E402

from citadel.app.errors import IngestError  # noqa: E402
from citadel.app.ingest import IngestOptions  # noqa: E402
from citadel.bootstrap import build  # noqa: E402
from citadel.config import Settings  # noqa: E402
from citadel.domain.users import Actor, Role  # noqa: E402

MANUAL = ROOT.parent / "shared" / "books" / "html" / "postgresql-15-manual"
ADMIN = Actor(user_id="local", tenant="default", role=Role.ADMIN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="citadel-migrate-"))
    settings = Settings(home=home, embedder=args.embedder)
    library = build(settings)
    chunks = 0
    began = time.perf_counter()
    for page in sorted(MANUAL.glob("*.html")):
        try:
            report = library.ingest.ingest(
                library.documents.open(page), IngestOptions(tenant="default"), actor=ADMIN
            )
        except IngestError:
            continue  # a table-of-contents page holds no body text
        chunks += report.chunks
        if chunks >= args.chunks:
            break
    ingest_s = time.perf_counter() - began
    library.close()
    server = postgres.start()
    try:
        url = server.fresh_database()
        env = {
            **os.environ,
            "CITADEL_HOME": str(home),
            "CITADEL_EMBEDDER": args.embedder,
            "CITADEL_DB": "",
        }
        command = [str(ROOT / ".venv" / "bin" / "citadel"), "db", "migrate", "--to", url, "--json"]
        began = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        wall_s = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"migrate failed:\n{done.stderr[-2000:]}")
        report_json = json.loads(done.stdout)
        print(
            json.dumps(
                {
                    "chunks": chunks,
                    "sqlite_ingest_s": round(ingest_s, 1),
                    "migrate_wall_s": round(wall_s, 1),
                    **report_json,
                },
                indent=2,
            )
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
