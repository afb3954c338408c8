"""Where Claude Code's http hooks reach the resident engine of a store, and the secret they
prove themselves with: `<store>.hook-endpoint.json` beside the store (mode 0600, in the store's
0700 folder), made by `ctxview install claude-code` and read by the engine when it starts.

Why a secret, and why there: a port on 127.0.0.1 is open to every local user and to any web page
the person's browser opens (it may POST to loopback). Claude Code sends what a hook's settings
say, and can put a fixed header in every request, so install writes a random 256-bit secret into
the hook's `headers` (in a settings file only the person can read: `.claude/settings.local.json`
or `~/.claude/settings.json`, made 0600) and here; the engine refuses any request without it.
A browser cannot send that header to another origin without a preflight, which the engine never
grants, and cannot read the answer either. The engine binds 127.0.0.1 only (`LOOPBACK`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from ctxview.files.regular import read_regular
from ctxview.files.regular import stamp as file_stamp

LOOPBACK = "127.0.0.1"  # the only address the engine ever binds
HEADER = "X-Ctxview-Secret"
FAIL_HEADER = "X-Ctxview-Fail"  # `$CTXVIEW_HOOK_FAIL` from Claude Code's environment
PORTS = range(20000, 32000)  # below Linux's ephemeral ports (32768-60999): no client holds one
MAX_BYTES = 4096  # ctxview writes about 100; anything longer is not one of ours


@dataclass(frozen=True)
class Endpoint:
    port: int
    secret: str

    def url(self, event: str) -> str:
        return f"http://{LOOPBACK}:{self.port}/hook/{event}"


def path(store: Path | str) -> Path:
    return Path(f"{os.fspath(store)}.hook-endpoint.json")


def load(store: Path | str) -> Endpoint | None:
    """The store's endpoint, or None when there is none (or it is not one ctxview wrote).

    Read as a regular file only, and only so far: a FIFO someone put there would otherwise
    block the engine's loop (which looks for a late endpoint) and with it every hook."""
    try:
        data = json.loads(read_regular(path(store), MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    port, secret = data.get("port"), data.get("secret")
    if not isinstance(port, int) or port not in range(1024, 65536) or not isinstance(
            secret, str) or len(secret) < 32:  # fmt: skip
        return None
    return Endpoint(port, secret)


def stamp(store: Path | str) -> tuple[int, int, int] | None:
    """The endpoint file's stamp (`files.regular.stamp`): the engine reads the file again only
    when it changed."""
    return file_stamp(path(store))


def ensure(store: Path) -> Endpoint:
    """The store's endpoint, made on first need: a free port of `PORTS` and a new secret."""
    found = load(store)
    if found is not None:
        return found
    from ctxview.store.paths import prepare

    prepare(Path(store))  # the store's folder, 0700
    made = Endpoint(_free_port(), secrets.token_hex(32))
    target = path(store)
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"port": made.port, "secret": made.secret}, f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, target)
    return made


def _free_port() -> int:
    """A port nothing listens on now; chosen at random, so two stores (two people's, two
    tests') seldom pick the same one."""
    rng = secrets.SystemRandom()
    for _ in range(200):
        port = rng.choice(PORTS)
        with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port on {LOOPBACK} between {PORTS.start} and {PORTS.stop - 1}")


def listener_uid(port: int) -> int | None:
    """The user whose socket listens on 127.0.0.1:`port` (or on every address), from
    /proc/net/tcp; None when nothing listens there, or this is not Linux."""
    want = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    try:
        with open("/proc/net/tcp", encoding="ascii") as f:
            next(f)
            for line in f:
                fields = line.split()
                if len(fields) > 7 and fields[1] in want and fields[3] == "0A":  # LISTEN
                    return int(fields[7])
    except (OSError, StopIteration, ValueError):
        return None
    return None
