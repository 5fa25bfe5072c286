"""Approximate dense search: an HNSW graph (hnswlib) over the current chunk vectors.

``dense.py`` uses it once a library holds ``CITADEL_HNSW_MIN_VECTORS`` vectors.
Labels are chunk rowids; the space is inner product on the stored unit vectors
(cosine). The index is a candidate generator only: ``dense.py`` hands it a
filter admitting exactly the rows the actor may read and the filters pass,
then checks every label it gets back against the current rows and re-scores
them with the exact vectors, so a stale or foreign entry can cost recall but
is never returned.

The index is kept next to the database as ``<db>.hnsw`` with a JSON sidecar
``<db>.hnsw.json``: model, dimension, parameters, the generation it was last
synced to, the index file's size and CRC-32, and the rows it holds (rowid and
a fingerprint of the vector: 60 bits of the chunk's embedding key, which names
the embedded text). A generation change applies the difference: rows that left
(old versions, deleted sources) are marked deleted and their slots reused by
new rows, rows whose vector changed (a reused rowid) are updated. Both files
are written to a temporary name and renamed; a missing, corrupt, mismatched or
foreign pair is rebuilt from the vectors, with progress logged.

A full build takes 20-60 s at 100k vectors. With ``background=True`` (what
``citadel serve`` and ``serve-grpc`` use) it runs in a thread of its own while
``query`` declines, so searches stay exact, and fast enough, instead of
waiting; ``behind`` then tells the caller to sync the changes made during the
build. One-shot commands build in the foreground: a background build would
die with the process.
"""

from __future__ import annotations

import base64
import glob
import json
import logging
import os
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hnswlib  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt

from citadel.app.ports import Vectors

log = logging.getLogger(__name__)

_FORMAT = 1
_SPACE = "ip"
_BUILD_BATCH = 10_000
# Unsaved changes (rows added, updated or deleted) past this share of the rows
# trigger a save; fewer are replayed cheaply from the sidecar at the next start.
_SAVE_SHARE = 0.02
_SAVE_MIN = 1_000

Labels = npt.NDArray[np.int64]
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class HnswParams:
    """Graph degree, build beam and search beam (measured: docs/benchmarks.md)."""

    m: int = 16
    ef_construction: int = 200
    ef: int = 200


def fingerprints(embed_keys: Sequence[str]) -> Labels:
    """60 bits of each embedding key (hex sha256 of the embedded text)."""
    return np.fromiter((int(key[:15], 16) for key in embed_keys), np.int64, len(embed_keys))


class HnswIndex:
    """One model's HNSW index, persisted at ``path``; thread-safe."""

    def __init__(
        self,
        path: Path,
        params: HnswParams | None = None,
        *,
        progress: Progress | None = None,
        background: bool = False,
    ) -> None:
        self.path = path
        self.sidecar = path.with_name(path.name + ".json")
        self.params = params or HnswParams()
        self._progress = progress
        self._lock = threading.Lock()
        self._index: Any = None
        self._model = ""
        self._dimension = 0
        self._generation = -1
        self._labels: Labels = np.zeros(0, np.int64)
        self._prints: Labels = np.zeros(0, np.int64)
        self._unsaved = 0
        self._background = background
        self._building = False
        self._closed = False
        self._built_event = threading.Event()
        self._writing = threading.Lock()
        """Held while a background build writes its file; ``close`` waits for it."""
        self._remove_stale_temporaries()

    @property
    def building(self) -> bool:
        """Whether a background build is running (searches are exact meanwhile)."""
        return self._building

    def behind(self, generation: int) -> bool:
        """Whether the index is ready but synced to another generation, with no build
        running: the library changed during a background build, and ``sync`` now
        only applies the difference. Read without the lock: a stale answer costs
        one extra ``sync`` or one more exact search, never a wrong result."""
        return not self._building and self._index is not None and self._generation != generation

    def wait_built(self, timeout: float | None = None) -> bool:
        """Wait for the current background build to finish; False on timeout."""
        if not self._building:
            return True
        return self._built_event.wait(timeout)

    def sync(
        self, model: str, generation: int, rowids: Labels, prints: Labels, vectors: Vectors
    ) -> None:
        """Make the index hold exactly these rows (rowids ascending)."""
        dimension = int(vectors.shape[1])
        with self._lock:
            if self._building or self._closed:
                return  # the running build is installed when done; then ``behind``
            if self._index is None or self._model != model or self._dimension != dimension:
                self._index = None
                self._open(model, dimension)
            rebuilt = self._index is None
            if not rebuilt:
                try:
                    self._apply(rowids, prints, vectors)
                except RuntimeError as exc:  # the graph disagrees with its sidecar
                    log.warning("rebuilding the HNSW index %s: %s", self.path, exc)
                    rebuilt = True
            if rebuilt and self._background:
                self._start_build(model, dimension, generation, rowids, prints, vectors)
                return
            if rebuilt:
                self._install(model, dimension, self._built(rowids, vectors), rowids, prints)
            self._generation = generation
            if rebuilt or self._unsaved >= max(_SAVE_MIN, _SAVE_SHARE * rowids.size):
                self._save()

    def query(
        self, vector: Vectors, k: int, admit: Callable[[int], object] | None, generation: int
    ) -> Labels | None:
        """The labels of the ``k`` nearest admitted rows, or None when the index is not
        synced to ``generation`` (a search that began before a change) or the graph
        cannot find ``k`` of them: the caller then searches exactly."""
        with self._lock:
            if self._index is None or self._generation != generation:
                return None
            try:
                labels, _ = self._index.knn_query(vector, k=k, num_threads=1, filter=admit)
            except RuntimeError:
                return None
        return np.asarray(labels[0], dtype=np.int64)

    def close(self) -> None:
        """Save unsaved changes. A background build still running is abandoned (its
        thread exits without installing or saving; the next start builds again); one
        already writing its file is waited for, so no half-written file is left."""
        with self._writing, self._lock:
            self._closed = True
            if self._index is not None and self._unsaved:
                self._save()

    # -- building and applying changes ----------------------------------------------

    def _new(self, dimension: int) -> Any:
        return hnswlib.Index(space=_SPACE, dim=dimension)

    def _start_build(
        self,
        model: str,
        dimension: int,
        generation: int,
        rowids: Labels,
        prints: Labels,
        vectors: Vectors,
    ) -> None:
        """Build in a thread; the caller holds the lock. ``vectors`` is never changed
        in place (a change makes a new matrix), so the thread may read it unlocked."""
        self._index, self._generation = None, -1
        self._building = True
        self._built_event.clear()
        rowids, prints = rowids.copy(), prints.copy()

        def build() -> None:
            try:
                index = self._built(rowids, vectors)
                # Written before it is installed, outside the index lock: no other
                # thread sees this index yet, so searches need not wait for the save.
                with self._writing:
                    saved = not self._closed and self._write(
                        index, model, dimension, generation, rowids, prints
                    )
                with self._lock:
                    if not self._closed:
                        self._install(model, dimension, index, rowids, prints)
                        self._generation = generation
                        self._unsaved = 0 if saved else int(rowids.size)
            except Exception as exc:  # searches stay exact; the next change tries again
                log.warning("could not build the HNSW index %s: %s", self.path, exc)
            finally:
                with self._lock:
                    self._building = False
                    self._built_event.set()

        threading.Thread(target=build, name="hnsw-build", daemon=True).start()

    def _install(
        self, model: str, dimension: int, index: Any, rowids: Labels, prints: Labels
    ) -> None:
        self._index = index
        self._model = model
        self._dimension = dimension
        self._labels = rowids.copy()
        self._prints = prints.copy()

    def _built(self, rowids: Labels, vectors: Vectors) -> Any:
        """A new graph over these rows; touches nothing shared (runs unlocked in the
        background)."""
        total = int(rowids.size)
        dimension = int(vectors.shape[1])
        log.info("building the HNSW index %s over %d vectors", self.path, total)
        index = self._new(dimension)
        index.init_index(
            max_elements=max(total, 1),
            M=self.params.m,
            ef_construction=self.params.ef_construction,
            random_seed=100,
            allow_replace_deleted=True,
        )
        index.set_ef(self.params.ef)
        for first in range(0, total, _BUILD_BATCH):
            last = min(first + _BUILD_BATCH, total)
            index.add_items(vectors[first:last], rowids[first:last])
            log.info("HNSW index: %d of %d vectors", last, total)
            if self._progress is not None:
                self._progress(last, total)
        return index

    def _apply(self, rowids: Labels, prints: Labels, vectors: Vectors) -> None:
        index = self._index
        old, old_prints = self._labels, self._prints
        if old.size:
            at = np.minimum(np.searchsorted(old, rowids), old.size - 1)
            live = old[at] == rowids
            same = live & (old_prints[at] == prints)
        else:
            live = same = np.zeros(rowids.size, dtype=bool)
        gone = old[~np.isin(old, rowids, assume_unique=True)]
        for label in gone.tolist():
            index.mark_deleted(label)
        # Rows not live in the graph: some are still there as deleted entries (a
        # rowid reused, or a row back after a while) and are revived and updated.
        fresh = np.flatnonzero(~live)
        known = np.isin(rowids[fresh], np.asarray(index.get_ids_list(), dtype=np.int64))
        for label in rowids[fresh[known]].tolist():
            index.unmark_deleted(label)
        update = np.concatenate([np.flatnonzero(live & ~same), fresh[known]])
        if update.size:
            index.add_items(vectors[update], rowids[update], replace_deleted=False)
        added = fresh[~known]
        if added.size:
            vacant = index.get_current_count() - (old.size - gone.size + int(known.sum()))
            needed = index.get_current_count() + max(0, int(added.size) - vacant)
            if needed > index.get_max_elements():
                index.resize_index(needed)
            index.add_items(vectors[added], rowids[added], replace_deleted=True)
        self._labels = rowids.copy()
        self._prints = prints.copy()
        self._unsaved += int(gone.size + update.size + added.size)

    # -- the files ------------------------------------------------------------------

    def _open(self, model: str, dimension: int) -> None:
        """Load the saved index if it is whole and made for this model; else leave
        ``self._index`` None so that ``sync`` rebuilds it."""
        if not self.path.exists() and not self.sidecar.exists():
            return
        try:
            meta = json.loads(self.sidecar.read_text(encoding="utf-8"))
            expected = {
                "format": _FORMAT,
                "model": model,
                "dimension": dimension,
                "space": _SPACE,
                "m": self.params.m,
                "ef_construction": self.params.ef_construction,
            }
            found = {key: meta.get(key) for key in expected}
            if found != expected:
                raise ValueError(f"made for {found}, not {expected}")
            if self.path.stat().st_size != meta["bytes"] or _crc32(self.path) != meta["crc32"]:
                raise ValueError("the index file does not match its sidecar")
            rows = np.frombuffer(zlib.decompress(base64.b64decode(meta["rows"])), dtype="<i8")
            labels, prints = np.split(rows.astype(np.int64), 2)
            index = self._new(dimension)
            index.load_index(str(self.path), allow_replace_deleted=True)
            if not np.isin(labels, np.asarray(index.get_ids_list(), dtype=np.int64)).all():
                raise ValueError("the sidecar lists rows the index does not hold")
            index.set_ef(self.params.ef)
        except (OSError, ValueError, KeyError, TypeError, RuntimeError, zlib.error) as exc:
            log.warning("rebuilding the HNSW index %s: %s", self.path, exc)
            return
        self._index = index
        self._model = model
        self._dimension = dimension
        self._generation = int(meta.get("generation", -1))
        self._labels = labels
        self._prints = prints
        self._unsaved = 0

    def _save(self) -> None:
        """Write the installed index; the caller holds the lock."""
        if self._write(
            self._index, self._model, self._dimension, self._generation, self._labels, self._prints
        ):
            self._unsaved = 0

    def _remove_stale_temporaries(self) -> None:
        """Delete the temporary files of writes that a dead process left behind."""
        for stem in (self.path.name, self.sidecar.name):
            for temp in self.path.parent.glob(f"{glob.escape(stem)}.tmp-*"):
                pid = temp.name.rsplit("-", 1)[-1]
                if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                    temp.unlink(missing_ok=True)

    def _write(
        self,
        index: Any,
        model: str,
        dimension: int,
        generation: int,
        labels: Labels,
        prints: Labels,
    ) -> bool:
        """Write ``index`` and its sidecar under temporary names, then rename both;
        False (and a warning) when that fails."""
        temp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        temp_sidecar = self.sidecar.with_name(f"{self.sidecar.name}.tmp-{os.getpid()}")
        rows = np.concatenate([labels, prints]).astype("<i8").tobytes()
        try:
            index.save_index(str(temp))
            meta = {
                "format": _FORMAT,
                "model": model,
                "dimension": dimension,
                "space": _SPACE,
                "m": self.params.m,
                "ef_construction": self.params.ef_construction,
                "generation": generation,
                "count": int(labels.size),
                "bytes": temp.stat().st_size,
                "crc32": _crc32(temp),
                "rows": base64.b64encode(zlib.compress(rows, 1)).decode("ascii"),
            }
            temp_sidecar.write_text(json.dumps(meta), encoding="utf-8")
            os.replace(temp, self.path)
            os.replace(temp_sidecar, self.sidecar)
        except Exception as exc:  # OSError, hnswlib's RuntimeError or TypeError (a path)
            # The index in memory stays right; the next start replays or rebuilds.
            log.warning("could not save the HNSW index %s: %s", self.path, exc)
            temp.unlink(missing_ok=True)
            temp_sidecar.unlink(missing_ok=True)
            return False
        return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, owned by someone else
        return True
    return True


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as data:
        while block := data.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return crc
