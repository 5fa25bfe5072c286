"""A folder of Markdown files (a project's docs: MkDocs, a wiki export) read as one book.

:mod:`.order` says which files make the book and in which order: the ``nav`` of an
``mkdocs.yml`` (read by :mod:`.mkdocs`, which resolves no YAML tags), else the
folder's ``index.md`` or ``README.md`` and the files it links to first, then the
folder's own order. Hidden files and folders, other files and symlinks leading out
of the folder are passed over; a nav entry naming a file that is missing or outside
is left out with a warning in the document's ``warnings`` (and the log).

:mod:`.parser` reads each file through the single-file Markdown reader
(``parsers.markdown.markdown_page``) and lays its headings out as the HTML folder
book does (``markup.pages.emit_page``): each file is a chapter whose first heading
is its title, later headings its sections, ``Block.location`` the file's path and
the nearest heading's anchor (``guide/setup.md#upgrading``). A relative link to
another file of the book is rewritten to that location, so a passage's link names
the chapter or section it points to.
"""

from citadel.adapters.parsers.markdown_folder.parser import MarkdownFolderParser

__all__ = ["MarkdownFolderParser"]
