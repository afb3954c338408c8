"""Where a store's resident hook engine listens: a Unix socket per store in this user's private
folder under /tmp. Standard library C modules only, like the hook client that loads it on every
call (also as a plain file, its neighbour), and the failure log that keeps its own fallback
there."""

from __future__ import annotations

import os
import zlib


def socket_file(store: str) -> str:
    """Short and per store (a Unix socket path is limited to ~100 bytes); crc32 rather than
    hashlib, whose import alone costs more than the rest of the hook's."""
    name = os.path.realpath(store).encode()
    return f"/tmp/ctxview-{os.getuid()}/{zlib.crc32(name):08x}{zlib.adler32(name):08x}.sock"


def private_folder(folder: str) -> None:
    """The socket's folder must be ours and closed to others (it is in /tmp): a folder another
    user made there could hold their socket, which would read the hook input and answer the
    model. Raises PermissionError otherwise; FileNotFoundError when it is not there."""
    st = os.lstat(folder)
    if st.st_uid != os.getuid() or (st.st_mode & 0o170000) != 0o040000 or st.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a private folder of this user")
