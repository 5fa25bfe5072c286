"""Document parsers, one adapter per format, behind the DocumentParser port."""

DEFAULT_MAX_PAGES = 5000
"""Documents with more pages (PDF pages, HTML files of a folder book) are refused
(``CITADEL_MAX_PAGES``)."""
