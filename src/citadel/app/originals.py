"""Keeping an ingested PDF's original file, for the viewer's page images.

Every entrypoint that ingests a file (the CLI's ``ingest``, the web and API
uploads) calls :func:`keep_original` with the file it ingested, so a PDF's cited
page can be shown as printed whichever way it came in.
"""

from __future__ import annotations

from pathlib import Path

from citadel.app.ingest import IngestReport
from citadel.app.library import LibraryService
from citadel.app.ports.pages import OriginalStore
from citadel.domain.users import Actor


def keep_original(
    originals: OriginalStore | None,
    library: LibraryService,
    path: Path,
    report: IngestReport,
    actor: Actor,
) -> None:
    """Keep ``path`` as the original of the version ``report`` names, if it is a PDF
    (once per version: an unchanged ingest keeps one only if there is none yet)."""
    if originals is None or not _is_pdf(path):
        return
    tenant, source_id = actor.tenant, report.source_id
    if report.status == "unchanged" and originals.has(tenant, source_id, report.version):
        return
    versions = library.show(source_id, actor).versions
    retained = [v.version for v in versions if v.retained]
    originals.keep(tenant, source_id, report.version, path, retained)


def _is_pdf(path: Path) -> bool:
    if not path.is_file():  # a folder book (HTML with its index.html) is no PDF
        return False
    with path.open("rb") as handle:
        return handle.read(5) == b"%PDF-"
