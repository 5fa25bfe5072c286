"""EPUB 2 and 3 with zipfile and lxml: spine order, nav/NCX hierarchy, fragment anchors.

``META-INF/container.xml`` names the package document (OPF): its metadata gives title,
authors, year and tags, its spine the reading order. The EPUB 3 nav document
(``nav epub:type="toc"``), else the EPUB 2 NCX, gives the hierarchy: each entry points
at a spine item and maybe an anchor in it, and the text from that anchor to the next
entry belongs to the entry's path; headings inside a section nest below it. Without
either, headings alone give the paths. EPUB has no pages: ``Block.location`` is
``spine-item-href#anchor``; ``page_count`` counts spine items and ``skipped_pages``
holds the 1-based spine positions that were not indexed.

Title page, copyright, contents, lists of figures and tables, and the index are not
indexed: by toc titles, ``epub:type`` (titlepage, copyright-page, toc, index, ...) and,
for short items only, file names. MathML reads as linear text.

The archive is untrusted. Before anything is decompressed every member name is checked
(no absolute paths, no ``..``) and every declared size (per member, in total, and the
compression ratio), and reads are bounded anyway; hrefs that leave the book are refused.
All of these raise ``ParseError("unsafe_archive")``. XML is parsed without entity
expansion, DTD loading or network access; an XML document whose DOCTYPE declares
entities (lxml would expand them in attribute values) is not read as XML (see
:mod:`.safe_xml`).

The parser (:mod:`.parser`) opens the archive (:mod:`.archive`), reads the package
document (:mod:`.package`) and the table of contents (:mod:`.toc`) with :mod:`.safe_xml`,
then assembles each spine item's sections (:mod:`.sections`) with the shared markup walker.
"""

from citadel.adapters.parsers.epub.archive import ArchiveLimits
from citadel.adapters.parsers.epub.parser import EpubParser

__all__ = ["ArchiveLimits", "EpubParser"]
