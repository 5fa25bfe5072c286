"""Token ids into inference runs, and hidden states into sentence vectors.

Pure numpy, no session: which texts share a run, how a run is padded, and
sentence-transformers' mean pooling and normalisation of what the model returns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from citadel.app.ports import Vectors


def length_batches(
    lengths: Sequence[int], *, alone: bool, batch_size: int, batch_tokens: int
) -> list[list[int]]:
    """Indices grouped by similar length, each group within both batch limits.

    ``alone`` (int8) puts every text in a batch of its own (see ``minilm``);
    sorted by length all the same, so the round-robin spreads the work evenly.

    Sorted by length (stable), each batch pads to its own longest text and
    wastes little. The token budget keeps long texts in small batches: with
    the exported (unfused) attention, the (batch, 12, len, len) tensors fall
    out of the cache in larger batches, which costs more than batching saves.
    With fused attention, budgets of 512 and 1024 used as much CPU as 256.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    if alone:
        return [[index] for index in order]
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending, so this text is the longest of the batch so far.
        width = lengths[index]
        if current and (len(current) >= batch_size or (len(current) + 1) * width > batch_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def padded(
    batch: Sequence[npt.NDArray[np.int64]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The batch's token ids padded to its longest row, and the attention mask."""
    width = max(len(row) for row in batch)
    input_ids = np.zeros((len(batch), width), dtype=np.int64)  # 0 is [PAD]
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for r, row in enumerate(batch):
        input_ids[r, : len(row)] = row
        mask[r, : len(row)] = 1
    return input_ids, mask


def mean_pool_normalise(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> Vectors:
    """sentence-transformers' Pooling(mean) then Normalize, in float32 like torch."""
    weights = mask.astype(np.float32)
    summed: Vectors = np.einsum("bsd,bs->bd", hidden, weights)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
    mean = summed / counts
    norms = np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), np.float32(1e-12))
    unit: Vectors = (mean / norms).astype(np.float32)
    return unit
