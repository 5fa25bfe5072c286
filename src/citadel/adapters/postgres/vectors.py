"""pgvector's ``vector`` type on a psycopg connection: numpy float32 in and out, in binary.

pgvector's binary form is a big-endian int16 dimension, an unused int16, then the
float4 values big-endian; the text form would cost a decimal round trip per value.
The type's oid is the database's own (an extension type), so the adapters are
registered per connection once the extension exists (``database.py``).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.pq import Format

_HEADER = struct.Struct(">HH")


def register_vector(conn: psycopg.Connection[Any]) -> bool:
    """Register the adapters on ``conn``; False when the extension is not there yet."""
    row = conn.execute("SELECT to_regtype('vector')::oid").fetchone()
    if row is None or row[0] is None:
        return False
    oid = int(row[0])

    class VectorDumper(Dumper):
        format = Format.BINARY

        def dump(self, obj: Any) -> Buffer:
            values = np.asarray(obj, dtype=">f4").reshape(-1)
            return _HEADER.pack(values.size, 0) + values.tobytes()

    VectorDumper.oid = oid

    class VectorLoader(Loader):
        format = Format.BINARY

        def load(self, data: Buffer) -> npt.NDArray[np.float32]:
            dim, _ = _HEADER.unpack_from(data)
            return np.frombuffer(data, dtype=">f4", count=dim, offset=_HEADER.size).astype(
                np.float32
            )

    conn.adapters.register_dumper(np.ndarray, VectorDumper)
    conn.adapters.register_loader(oid, VectorLoader)
    return True
