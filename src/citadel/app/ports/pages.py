"""Pages as printed: a PDF's original bytes kept per version, and one page rendered.

The web viewer shows the cited page of a PDF beside its text. The registry keeps
only text, so the original file of a version is kept by an ``OriginalStore``
(written when a PDF is uploaded); a version without one is shown as text only.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(frozen=True, slots=True)
class PageImage:
    """One page as a PNG; ``highlighted`` says whether the asked text was found and boxed."""

    png: bytes
    width: int
    height: int
    highlighted: bool


class PageRenderer(Protocol):
    def page_count(self, pdf: Path) -> int:
        """How many pages ``pdf`` has; ``ValueError`` when it is not a readable PDF."""
        ...

    def render(self, pdf: Path, page: int, highlight: str | None = None) -> PageImage:
        """Page ``page`` (1-based) of ``pdf``, with ``highlight`` (text of the page, as
        extracted) boxed where it is found; ``IndexError`` for a page it does not have."""
        ...


class OriginalStore(Protocol):
    def keep(
        self, tenant: str, source_id: str, version: int, file: Path, retained: Collection[int]
    ) -> None:
        """Keep a copy of ``file`` as the original of that version; drop the kept
        originals of the source's versions not in ``retained``."""
        ...

    def find(self, tenant: str, source_id: str, version: int) -> Path | None:
        """The kept original of that version, if there is one."""
        ...

    def has(self, tenant: str, source_id: str, version: int) -> bool:
        """Whether an original of that version is kept (without fetching it)."""
        ...

    def prune(self, tenant: str, source_id: str, retained: Collection[int]) -> None:
        """Drop the kept originals of the source's versions not in ``retained``
        (retention dropped their text)."""
        ...

    def forget(self, tenant: str, source_id: str) -> None:
        """Drop every kept original of the source (it was deleted)."""
        ...

    def close(self) -> None:
        """Stop what the store runs in the background (before its database closes)."""
        ...


class PageImages(Protocol):
    """Page renders as the viewer gets them: bounded in time, memory and how many wait.

    A render that runs past its limits raises ``PageUnrenderable`` and the page is
    remembered, so asking again is refused at once; a full queue raises
    ``RenderBusy`` at once. The awaiting caller holds no thread.
    """

    def refusal(self, pdf: Path, page: int) -> str | None:
        """Why page ``page`` of ``pdf`` is not drawn now (it ran past its limits
        recently), or None."""
        ...

    async def page_count(self, pdf: Path) -> int:
        """How many pages ``pdf`` has; ``ValueError`` when it is not a readable PDF."""
        ...

    async def render(self, pdf: Path, page: int, highlight: str | None = None) -> PageImage:
        """As ``PageRenderer.render``, within the limits."""
        ...

    def close(self) -> None:
        """Stop the renderers (their processes)."""
        ...
