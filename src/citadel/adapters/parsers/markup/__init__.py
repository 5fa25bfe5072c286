"""HTML and XHTML markup read as text, shared by the HTML and EPUB parsers.

:mod:`.walker` turns a document's body into headings, anchors and paragraphs in
reading order, with scripts, navigation chrome and contents lists dropped (and
their links collected); MathML inside it reads as linear text (:mod:`.mathml`).
:mod:`.block_sink` joins the paragraphs of one section into bounded blocks, and
:mod:`.pages` lays one page's events out as blocks under section paths (the HTML
and Markdown folder books too); :mod:`.links` resolves a folder book's links
without leaving its folder;
:mod:`.titles` says which headings are front or back matter and how a toc label
matches a heading; :mod:`.names` reads element names and ``epub:type`` tokens.
"""
