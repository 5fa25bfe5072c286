"""HTML via lxml.html: a single-file book, or a directory of pages read as one book.

A directory needs an ``index.html``; its pages are read in the order of the table of
contents: from ``index.html`` the links inside contents containers (DocBook
``div.toc``, Sphinx ``toctree-wrapper``, a toc ``nav``) are followed depth first, so
a chapter's sections come right after the chapter. Pages reached only through links
in body text follow; pages nothing links to are left out. A link is followed only
when it is a relative path that stays inside the directory (no scheme, no absolute
path, no escape through ``..`` or a symlink).

Each page's first heading is its title; the titles of the pages above it in the table
of contents prefix its section paths, and later headings nest under the title.
Scripts, styles, navigation chrome and contents lists are dropped; index, contents,
copyright and legal-notice pages are not indexed. ``Block.location`` is
``page.html#anchor`` of the nearest heading; pages have no numbers.

The parser (:mod:`.parser`) reads one page through :mod:`.document` (bytes to an
lxml tree: charset, metadata, the content root) and the shared markup walker;
``markup.pages`` gives a page's paragraphs their section paths, and :mod:`.folder`
walks a directory in table-of-contents order without leaving it (``markup.links``).
"""

from citadel.adapters.parsers.html.parser import HtmlParser

__all__ = ["HtmlParser"]
