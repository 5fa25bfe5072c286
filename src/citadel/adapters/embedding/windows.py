"""Texts longer than the model's window, embedded in windows that cover every token.

A text of at most ``window`` word pieces (with [CLS] and [SEP]) is one window,
exactly what truncation gives. A longer one is cut into the fewest windows of
``window`` pieces that cover it, spread evenly so that each is full (neighbours
overlap by what is left over); its vector is the mean of the windows' unit
vectors, normalised again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citadel.app.ports import Vectors

Ids = npt.NDArray[np.int64]


def split_windows(ids: Ids, window: int) -> list[Ids]:
    """``ids`` ([CLS] ... [SEP]) as windows of at most ``window`` ids, each [CLS] ... [SEP]."""
    if window < 3:
        raise ValueError("a window holds [CLS], [SEP] and at least one piece")
    if len(ids) <= window:
        return [ids]
    first, body, last = ids[:1], ids[1:-1], ids[-1:]
    room = window - 2
    count = -(-len(body) // room)  # ceiling: the fewest windows that cover the body
    starts = [round(i * (len(body) - room) / (count - 1)) for i in range(count)]
    return [np.concatenate([first, body[s : s + room], last]) for s in starts]


def combine(vectors: Vectors, owners: Sequence[int], texts: int) -> Vectors:
    """One unit vector per text: the normalised mean of its windows' vectors."""
    out = np.zeros((texts, vectors.shape[1]), dtype=np.float32)
    np.add.at(out, np.asarray(owners, dtype=np.int64), vectors)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    normalised: Vectors = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return normalised
