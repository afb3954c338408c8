"""The engine's face for a host that ran the tool itself and shows its output in a form of its
own (Claude Code's hooks): `Session.insert_read(host_form=…)`, `Session.insert_beside`,
`Session.advance_ids`. Real store, real files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ctxview.engine.result import Result
from ctxview.engine.session import Session
from ctxview.store import Writer


async def test_a_read_in_the_hosts_form_and_an_output_kept_beside(tmp_path: Path) -> None:
    store = tmp_path / "store.db"
    writer = await Writer.open(store)
    try:
        s = await Session.start(writer, tmp_path)
        seen: list[str] = []

        def numbered_by_host(result: Result) -> str:
            seen.append(result.rkind)
            return "0\t" + result.shown.split("\n", 1)[0]

        args = {"path": "a.py"}
        first = await s.insert_read(args, "a.py", "a.py", 1, ["x = 1"], 1, "ab" * 32,
                                    call_ref="t1", host_form=numbered_by_host)  # fmt: skip
        again = await s.insert_read(args, "a.py", "a.py", 1, ["x = 1"], 1, "ab" * 32,
                                    call_ref="t2", host_form=numbered_by_host)  # fmt: skip
        assert seen == ["full", "unchanged"]  # the rules ran: the second is the stub
        assert first == "0\t[#1000 a.py lines 1-1 of 1 sha abababab]"
        assert again.startswith("0\t[#1001 a.py") and "Unchanged since #1000" in again
        # Beside: stored in full, the model given one line; never a same-result stub.
        lines = [await s.insert_beside("grep", {"pattern": "x"}, "a.py:1:x = 1",
                                       lambda ref: f"[{ref}] is the id of this output.",
                                       call_ref=f"g{i}") for i in range(2)]  # fmt: skip
        assert lines == ["[#1002] is the id of this output.", "[#1003] is the id of this output."]
        s.advance_ids(0x1010)
        assert await s.insert("bash", {"command": "true"}, "") == "[#1010]"
        s.advance_ids(0x1000)  # never back
        assert (await s.insert("bash", {"command": "true"}, "")).startswith("[#1011]")
    finally:
        await writer.close()
    conn = sqlite3.connect(store)
    rows = dict(conn.execute("SELECT rid, shown FROM bodies").fetchall())
    stored = dict(conn.execute("SELECT rid, stored FROM bodies").fetchall())
    kinds = [r[0] for r in conn.execute("SELECT rkind FROM events WHERE kind = 'result' "
                                        "ORDER BY seq")]  # fmt: skip
    conn.close()
    assert rows[0x1000] == first and rows[0x1002] == lines[0]
    assert stored[0x1003] == "a.py:1:x = 1"
    assert kinds[:4] == ["full", "unchanged", "full", "full"]
