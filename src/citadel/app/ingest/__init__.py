"""Ingestion: documents in, versions of sources out, each whole or not at all.

The use case receives documents (``IncomingDocument``, from a ``DocumentReader``
such as ``citadel.adapters.files`` for files and uploads, or ``ParsedInput``
for text already parsed) and never reads a file itself (a document names the
file to keep as its original):

- ``options``    what is asked (``IngestOptions``), filled from the document's manifest;
- ``service``    the use case (``IngestService``): the request check, once per
                 document, then the stages below, and the commit with its retry;
- ``versions``   the version decision (``VersionPlanner``): a new source, the next
                 version of one the actor may write, or unchanged (``IngestReport``);
- ``embedding``  vectors for the new chunks, cached ones reused (``ChunkEmbedding``);
- ``metering``   each document counted and timed by format and outcome;
- ``originals``  a PDF's file kept as its version's original, for the viewer.
"""

from citadel.app.ingest.options import IngestOptions
from citadel.app.ingest.service import IngestService, ParsedInput
from citadel.app.ingest.versions import IngestReport

__all__ = ["IngestOptions", "IngestReport", "IngestService", "ParsedInput"]
