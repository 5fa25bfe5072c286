"""Pages as printed: PDF pages rendered by pdfium, and the originals they are read from."""

from __future__ import annotations

from citadel.adapters.pages.originals import FileOriginals
from citadel.adapters.pages.render import PdfiumRenderer

__all__ = ["FileOriginals", "PdfiumRenderer"]
