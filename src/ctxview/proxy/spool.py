"""The proxy's spool: each exchange on disk, in a folder of its own beside the store, until the
recorder process has stored it.

`<store>.proxy-spool/` (0700) holds one folder per running proxy, `<pid>-<random>/`, with a
`lock` file that the proxy and its recorder each hold a shared `flock` on; a folder whose lock
nobody holds belongs to a proxy and a recorder that are both gone, and the next recorder to
start records what it holds (`orphans`). An exchange is `<name>.body`, the request body as
forwarded, written chunk by chunk as it streams (never held whole), and `<name>.json`, what
else the proxy saw: written when the request starts (`"final": false`, so a proxy killed
mid-request leaves a record of it) and replaced, atomically, when it ends. Both are 0600 and
hold no credential: the headers are written as the store keeps them (`headers.kept`).

A body file starts with the body's length so far (`HEAD` bytes), and once recorded it is kept
(`free-N.body`, at most `POOL`) for the next body to be written over: writing a 10 MB body into
pages the page cache already holds cost the proxy ~0.5 ms of CPU, into new ones 4-6 ms (more
under load). So the file may hold an earlier body's bytes past the length until the entry ends
and it is cut to length; the pool goes with the folder, at the proxy's end.

Standard library, the proxy's own dataclasses and the store's folder maker only: the proxy
process imports it on every request's path."""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import json
import os
import secrets
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ctxview.proxy import headers as hdr
from ctxview.proxy.answers import Answer
from ctxview.proxy.record import Exchange
from ctxview.store import paths

LOCK = "lock"
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
HEAD = 8  # a body file's first bytes: the body's length so far, little-endian
POOL = 2  # recorded body files kept to be written over


def _free(folder: Path, i: int) -> Path:
    return folder / f"free-{i}.body"


def root(store: Path) -> Path:
    return Path(f"{os.fspath(store)}.proxy-spool")


def _private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, exist_ok=True)
    st = path.lstat()
    if not path.is_dir() or path.is_symlink() or st.st_uid != os.getuid():
        raise OSError(errno.EPERM, f"{path} is not this user's folder")
    if st.st_mode & 0o077:
        path.chmod(0o700)


def hold(folder: Path, how: int = fcntl.LOCK_SH) -> int:
    """An fd holding `folder`'s lock (closed, or the holder gone, releases it)."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, how)
    except BaseException:
        os.close(fd)
        raise
    return fd


def create(store: Path) -> tuple[Path, int]:
    """A new proxy's folder, its lock held: made under a dot-name a recorder never looks at,
    locked, then renamed into place, so no recorder takes it for an orphan meanwhile."""
    top = root(store)
    paths.prepare(Path(store))  # the store's folders, made as the store makes them (0700)
    _private_dir(top)
    name = f"{os.getpid()}-{secrets.token_hex(4)}"
    fresh = top / f".{name}"
    fresh.mkdir(mode=0o700)
    fd = hold(fresh)
    final = top / name
    fresh.rename(final)
    return final, fd


def orphans(store: Path) -> list[tuple[Path, int]]:
    """The folders whose proxy and recorder are both gone, each with its lock now held
    (exclusively) by the caller."""
    top = root(store)
    found: list[tuple[Path, int]] = []
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return found
    for name in names:
        folder = top / name
        if name.startswith(".") or not folder.is_dir():
            continue
        try:
            fd = hold(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # held: a live proxy's or recorder's
        found.append((folder, fd))
    return found


def remove(folder: Path) -> None:
    """A folder recorded to the end (its lock file last: it is what marks it owned)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name != LOCK:
                with contextlib.suppress(OSError):
                    os.unlink(folder / name)
        os.unlink(folder / LOCK)
        os.rmdir(folder)


class Entry:
    """One exchange's files. Its methods do the I/O and are called in order by one thread (the
    recorder's spool writer, off the event loop). A write error (a full disk or quota) gives the
    entry up: its files go and `failed` says why; the request goes on unrecorded."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.failed: str | None = None
        self.written = 0  # the body's bytes in its file
        self._fd: int | None = None

    def path(self, suffix: str) -> Path:
        return self.folder / f"{self.name}{suffix}"

    def open(self, meta: bytes) -> None:
        """The body's file (a recorded one to write over when the pool has one), and what is
        known of the exchange at its start."""
        body = self.path(".body")
        try:
            for i in range(POOL):
                with contextlib.suppress(FileNotFoundError):
                    os.rename(_free(self.folder, i), body)
                    self._fd = os.open(body, os.O_WRONLY | os.O_CLOEXEC)
                    break
            if self._fd is None:
                self._fd = os.open(body, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                   | os.O_CLOEXEC, 0o600)  # fmt: skip
            _pwrite_all(self._fd, _length(0), 0)
            self._meta(meta)
        except OSError as exc:
            self.give_up(_why(exc))

    def extend(self, chunk: bytes) -> None:
        self.extend_all([chunk])

    def extend_all(self, chunks: list[bytes]) -> None:
        """The chunks after the body's bytes so far, in gathered writes, then its length."""
        if self._fd is None:
            return
        try:
            for at in range(0, len(chunks), IOV_MAX):
                group = chunks[at : at + IOV_MAX]
                size = sum(map(len, group))
                n = os.pwritev(self._fd, group, HEAD + self.written)
                if n < size:  # a short write: the rest in one
                    _pwrite_all(self._fd, b"".join(group)[n:], HEAD + self.written + n)
                self.written += size
            # After the bytes it counts: a proxy killed between the two leaves the shorter.
            _pwrite_all(self._fd, _length(self.written), 0)
        except OSError as exc:
            self.give_up(_why(exc))

    def give_up(self, why: str) -> None:
        if self.failed is None:
            self.failed = why
        self._close()
        for suffix in (".body", ".json", ".json.tmp"):
            with contextlib.suppress(OSError):
                os.unlink(self.path(suffix))

    def _close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _meta(self, raw: bytes) -> None:
        """Written whole, then renamed over the one before: a reader sees one or the other."""
        tmp = self.path(".json.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, raw)
        finally:
            os.close(fd)
        os.replace(tmp, self.path(".json"))

    def finish(self, meta: bytes) -> bool:
        """The exchange ended: its final record written. False when it was given up."""
        if self._fd is not None:  # an earlier body's bytes past this one's go
            try:
                os.ftruncate(self._fd, HEAD + self.written)
            except OSError as exc:
                self.give_up(_why(exc))
        self._close()
        if self.failed is not None:
            return False
        try:
            self._meta(meta)
        except OSError as exc:
            self.give_up(_why(exc))
            return False
        return True


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


IOV_MAX = 1024  # buffers one pwritev takes (Linux's limit)


def _pwrite_all(fd: int, data: bytes, at: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        view, at = view[n:], at + n


def _length(n: int) -> bytes:
    return n.to_bytes(HEAD, "little")


def body_of(path: Path) -> bytes:
    """The body a spool body file holds (b"" when it holds none yet)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return b""
    try:
        n = int.from_bytes(os.pread(fd, HEAD, 0).ljust(HEAD, b"\0"), "little")
        parts = []
        at = HEAD
        while at < HEAD + n:
            got = os.pread(fd, HEAD + n - at, at)
            if not got:
                break
            parts.append(got)
            at += len(got)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


def meta_bytes(ex: Exchange, *, final: bool) -> bytes:
    return json.dumps(to_meta(ex, final=final), ensure_ascii=False).encode()


def _why(exc: OSError) -> str:
    if exc.errno in FULL:
        return f"the spool's disk is full ({os.strerror(exc.errno or 0)})"
    return f"the spool could not be written ({type(exc).__name__}: {exc.strerror or exc})"


def to_meta(ex: Exchange, *, final: bool) -> dict[str, Any]:
    a = ex.answer
    answer = None
    if a is not None:
        answer = {**asdict(a), "raw": base64.b64encode(a.raw).decode() if a.raw else None}
    return {
        "final": final, "rid": ex.rid, "method": ex.method, "path": ex.path,
        "upstream": ex.upstream, "protocol": ex.protocol,
        "request_headers": hdr.kept(ex.request_headers),
        "response_headers": (hdr.kept(ex.response_headers)
                             if ex.response_headers is not None else None),
        "started": ex.started, "status": ex.status, "first_byte_ms": ex.first_byte_ms,
        "total_ms": ex.total_ms, "outcome": ex.outcome, "note": ex.note, "answer": answer,
        "rewritten": ex.rewritten, "elided": {str(k): v for k, v in ex.elided.items()},
    }  # fmt: skip


CUT_NOTE = "The proxy ended before the answer did; recorded from its spool."


def from_meta(meta: dict[str, Any], body: bytes) -> Exchange:
    """The exchange a spool entry holds. One the proxy never finished (it was killed) is `cut`."""
    a = meta.get("answer")
    answer = None
    if isinstance(a, dict):
        raw = a.get("raw")
        answer = Answer(**{**a, "raw": base64.b64decode(raw) if raw else None})
    ex = Exchange(
        method=meta["method"], path=meta["path"], upstream=meta["upstream"],
        protocol=meta["protocol"], request_headers=[(k, v) for k, v in meta["request_headers"]],
        body=body, started=meta["started"], rid=meta["rid"], status=meta.get("status"),
        response_headers=([(k, v) for k, v in meta["response_headers"]]
                          if meta.get("response_headers") is not None else None),
        first_byte_ms=meta.get("first_byte_ms"), total_ms=meta.get("total_ms"),
        outcome=meta.get("outcome", "complete"), note=meta.get("note"), answer=answer,
        rewritten=bool(meta.get("rewritten")),
        elided={int(k): v for k, v in (meta.get("elided") or {}).items()},
    )  # fmt: skip
    if not meta.get("final"):
        ex.outcome = "cut"
        ex.note = CUT_NOTE
    return ex


def entries(folder: Path, *, finals_only: bool) -> list[str]:
    """The names of the exchanges a folder holds, in the order they started."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in names:
        if n.endswith(".json"):
            name = n[: -len(".json")]
            if finals_only and not is_final(folder, name):
                continue
            out.append(name)
    return sorted(out)


def is_final(folder: Path, name: str) -> bool:
    try:
        return bool(json.loads((folder / f"{name}.json").read_bytes()).get("final"))
    except (OSError, ValueError):
        return False


def read(folder: Path, name: str) -> Exchange:
    meta = json.loads((folder / f"{name}.json").read_bytes())
    body_path = folder / f"{name}.body"

    def body() -> bytes:
        return body_of(body_path)

    ex = from_meta(meta, body())
    ex.reread = body  # the recorder lets go of the bytes once parsed (`record.build`)
    return ex


def discard(folder: Path, name: str) -> None:
    """An entry's files gone (recorded, or unreadable): its body's file to the pool when the
    pool has room, for the next body to be written over."""
    body = folder / f"{name}.body"
    for i in range(POOL):
        try:
            os.link(body, _free(folder, i))
            break
        except FileExistsError:
            continue
        except OSError:
            break
    for suffix in (".json", ".body", ".json.tmp"):
        with contextlib.suppress(OSError):
            os.unlink(folder / f"{name}{suffix}")
