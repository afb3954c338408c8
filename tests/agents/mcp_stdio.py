"""`ctxview mcp --tools all` spoken to as a host does, one JSON-RPC message a line on its stdin
and stdout, with no MCP client library between: for the tests of how its process ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

CTXVIEW = [sys.executable, "-m", "ctxview.cli"]


class RawMcp:
    """The server on `store`, started in `cwd` (`own_group`: in a process group of its own, as
    Codex starts it); `stderr` as for subprocess.Popen."""

    def __init__(self, store: Path, cwd: Path, *, stderr: int | IO[Any] = subprocess.PIPE,
                 own_group: bool = False) -> None:  # fmt: skip
        self.proc = subprocess.Popen(
            [*CTXVIEW, "--store", str(store), "mcp", "--tools", "all"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env={**os.environ},
            start_new_session=own_group,
        )  # fmt: skip

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def initialize(self, client: str) -> None:
        """The handshake, as `client`."""
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": client, "version": "1"}}})  # fmt: skip
        assert self.receive()["id"] == 1
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, name: str, arguments: dict[str, Any], **more: Any) -> dict[str, Any]:
        """One tool call (id 2; `more`: further params, such as `_meta`) and its answer."""
        self.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments, **more}})  # fmt: skip
        return self.receive()
