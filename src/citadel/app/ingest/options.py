"""What an ingest is asked: the caller's options, filled from the document's manifest."""

from __future__ import annotations

from dataclasses import dataclass, replace

from citadel.app.ports import DocumentMetadata


@dataclass(frozen=True, slots=True)
class IngestOptions:
    tenant: str = "default"
    source_id: str | None = None
    url: str | None = None
    acl_groups: frozenset[str] | None = None
    """Who may read the source; ``None`` keeps a stored source's ACL (a new one is
    open to its whole tenant), an empty set opens it explicitly."""
    title: str | None = None
    authors: tuple[str, ...] | None = None
    year: int | None = None
    tags: tuple[str, ...] | None = None

    def filled_from(self, metadata: DocumentMetadata | None) -> IngestOptions:
        """These options, with what the caller left unset (or gave empty) taken from
        the document's trusted manifest, if it has one: the caller's flags win."""
        if metadata is None:
            return self
        return replace(
            self,
            source_id=self.source_id or metadata.source_id,
            url=self.url or metadata.url,
            title=self.title or metadata.title,
            authors=self.authors if self.authors is not None else metadata.authors,
            year=self.year if self.year is not None else metadata.year,
            tags=self.tags if self.tags is not None else metadata.tags,
            acl_groups=self.acl_groups if self.acl_groups is not None else metadata.acl_groups,
        )
