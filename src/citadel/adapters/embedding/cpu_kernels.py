"""What onnxruntime's integer kernels compute on this CPU: which sums are exact.

onnxruntime multiplies uint8 activation codes by int8 weight codes with kernels
chosen by the CPU. With VNNI (``avx512_vnni``, ``avx_vnni``) or AMX each
product is summed into 32 bits, exactly. On x86 without them (AVX2, AVX-512
without VNNI) ``vpmaddubsw`` first adds PAIRS of products into 16 bits with
saturation (microsoft/onnxruntime#6004, #14642): a pair beyond 32767 is
clipped, so the same codes give other sums on such a CPU. ARM's dot products
are exact.

The embedder's default 8-bit codes (up to 255: a pair up to 2 x 255 x 127) can
exceed that limit, so where this module finds no exact sums onnxruntime is asked
for its uint8 x uint8 kernels (``session.x64quantprecision``), exact and about
2x slower. The opt-in 7-bit codes (0..127) bound a pair by 2 x 127 x 128 =
32512 and need no such switch on any CPU.
"""

from __future__ import annotations

import functools
import platform
from pathlib import Path

EXACT_INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
PAIR_LIMIT = 32767
"""The int16 a pair of uint8 x int8 products is added into without VNNI."""


def pair_bound(code_max: int, weight_magnitude: int = 128) -> int:
    """The largest magnitude two products of codes <= ``code_max`` can sum to."""
    return 2 * code_max * weight_magnitude


@functools.cache
def exact_int8_products(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether onnxruntime's uint8 x int8 kernels sum every product exactly on this CPU.

    An x86 CPU whose flags cannot be read counts as inexact; a CPU that is not
    x86 as exact (``session.x64quantprecision`` does not exist there).
    """
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return True
    try:
        text = cpuinfo.read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    flags = {
        flag
        for line in text.splitlines()
        if line.startswith("flags")
        for flag in line.partition(":")[2].split()
    }
    return bool(flags & EXACT_INT8_FLAGS)
