"""PDF via pypdf: outline for sections, /PageLabels for printed page labels.

Every page's text is split at the outline headings that land on it (found by
their titles in the page text), so a section that starts mid-page gets the
text after its heading, and the text before it stays with the previous one.
Pages before the first outline entry, and pages under contents/index/list
entries, are front or back matter and are not indexed.

The parser (:mod:`.parser`) reads the outline and ``/PageLabels`` (:mod:`.outline`),
extracts the page texts (:mod:`.extraction`, with forked helpers for long documents)
and splits them into section blocks (:mod:`.sections`); pypdf's warnings about a damaged
file are collected per parse and said once in citadel's words (:mod:`.repairs`).
"""

from citadel.adapters.parsers.pdf.parser import PdfParser

__all__ = ["PdfParser"]
