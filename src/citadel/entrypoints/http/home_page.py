"""The ask page with no question: what the library holds and questions to start with.

Everything comes from ``library_overview`` for the signed-in reader, so the books,
counts and suggested questions are only of sources that reader may read. An empty
library says so, with the command that fills it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from citadel.app.overview import library_overview
from citadel.bootstrap import Services
from citadel.domain.users import Actor
from citadel.entrypoints.http.shelf import shelf_row, when

INGEST_COMMAND = "citadel ingest BOOK.pdf"


def home_view(services: Services, actor: Actor) -> dict[str, Any]:
    overview = library_overview(services.library, actor)
    return {
        "books": [{"title": b.source.title, **shelf_row(b)} for b in overview.books],
        "sections": overview.sections,
        "last_ingest": overview.last_ingest,
        "last_ingest_text": when(overview.last_ingest),
        "questions": [
            {"text": q, "href": "/ask?" + urlencode({"q": q})} for q in overview.questions
        ],
        "ingest_command": INGEST_COMMAND,
    }
