"""The forwarding process's heap kept from handing a request's freed buffers back to the kernel.

A 10 MB body arrives as ~40 chunks of 64-800 KB, each a new `bytes`; the spool's writer holds a
few at once. glibc's malloc serves such sizes with mmap (past its threshold, which it only
raises as big blocks are freed) or from the heap's top, which it trims once more than twice that
threshold is free: so every request's chunks went into pages the kernel had to fault in and zero
anew, 500-1,500 faults a 10 MB request, about 3 ms of the proxy's CPU (`bench/bench_proxy.py`).
Fixed thresholds keep those pages: chunks come from the heap, and up to `TRIM` bytes freed at
its top stay for the next request. Anything but glibc is left as it is."""

from __future__ import annotations

import ctypes
import sys

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP = 4 << 20  # a block this big still gets its own mapping (above any chunk a socket reads)
TRIM = 32 << 20  # freed bytes at the heap's top kept for the next request


def keep_freed_buffers() -> bool:
    """True when glibc's malloc took the thresholds (False elsewhere: nothing changed)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM))
