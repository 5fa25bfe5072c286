"""Keeping an ingested PDF's original file, for the viewer's page images.

The ingest use case keeps it after each document it ingests one by one, whichever
entrypoint handed the document over (the CLI's ``ingest``, the web and API
uploads), so a PDF's cited page can be shown as printed whichever way it came in.
"""

from __future__ import annotations

from pathlib import Path

from citadel.app.ingest.versions import IngestReport
from citadel.app.library import readable
from citadel.app.ports import SourceRegistry
from citadel.app.ports.pages import OriginalStore
from citadel.domain.users import Actor


def keep_original(
    originals: OriginalStore,
    registry: SourceRegistry,
    path: Path,
    report: IngestReport,
    actor: Actor,
) -> None:
    """Keep the PDF at ``path`` as the original of the version ``report`` names
    (once per version: an unchanged ingest keeps one only if there is none yet),
    the source read for ``actor`` as the library's ``show`` reads it."""
    tenant, source_id = actor.tenant, report.source_id
    if report.status == "unchanged" and originals.has(tenant, source_id, report.version):
        return
    readable(registry.get(tenant, source_id), source_id, actor)
    retained = [v.version for v in registry.versions(tenant, source_id) if v.retained]
    originals.keep(tenant, source_id, report.version, path, retained)
