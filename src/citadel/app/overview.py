"""What the home page says the library holds, for one reader: only the sources they
may read (tenant and groups, as ``LibraryService.list``), so another tenant's or
group's titles never show; and questions drawn from those sources' headings."""

from __future__ import annotations

from dataclasses import dataclass

from citadel.app.library import LibraryService, Shelved
from citadel.domain.suggestions import MAX_SUGGESTIONS, suggested_questions
from citadel.domain.users import Actor


@dataclass(frozen=True, slots=True)
class Overview:
    books: tuple[Shelved, ...]
    """In title order."""
    sections: int
    """The current versions' sections, summed."""
    last_ingest: str
    """The newest current version's ingest time (ISO 8601), or "" for an empty library."""
    questions: tuple[str, ...]


def library_overview(library: LibraryService, actor: Actor) -> Overview:
    books = sorted(
        library.shelf(actor), key=lambda b: (b.source.title.casefold(), b.source.source_id)
    )
    # The headings of the first books are enough: each gives up to all the questions.
    sampled = [
        (b.source.title, library.headings(b.source.source_id, actor))
        for b in books[:MAX_SUGGESTIONS]
    ]
    return Overview(
        books=tuple(books),
        sections=sum(b.current.section_count for b in books if b.current is not None),
        last_ingest=max((b.current.created_at for b in books if b.current is not None), default=""),
        questions=tuple(suggested_questions(sampled)),
    )
