"""The JSON export round-trips: exported, imported into a new store, every session, event,
sequence number, id and body is the same (the demo, the secrets fixture, a real Claude Code
session with sub-agents). A second import adds nothing; a newer export is refused."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from export_fixture import MAIN, make

from ctxview.cli import main
from ctxview.store.records import EVENT_COLUMNS

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"
REAL = REALDATA / "claude-code-log" / "-Users-dain-workspace-coderabbit-review-helper"

SESSION_COLS = ("id", "title", "workspace", "source", "source_path", "source_ref",
                "parent_session", "parent_call", "started", "ended", "config", "next_rid", "data")  # fmt: skip


def dump(store: Path, sessions: list[str]) -> dict[str, object]:
    conn = sqlite3.connect(store)
    marks = ",".join("?" * len(sessions))
    where = f"WHERE session IN ({marks}) ORDER BY session"
    out = {
        "sessions": conn.execute(
            f"SELECT {', '.join(SESSION_COLS)} FROM sessions WHERE id IN ({marks}) ORDER BY id",
            sessions,
        ).fetchall(),
        "events": conn.execute(
            f"SELECT session, seq, {', '.join(EVENT_COLUMNS)} FROM events {where}, seq", sessions
        ).fetchall(),
        "bodies": conn.execute(
            f"SELECT session, rid, shown, CAST(stored AS TEXT) FROM bodies {where}, rid", sessions
        ).fetchall(),
    }
    conn.close()
    return out


def tree(store: Path, top: str) -> list[str]:
    conn = sqlite3.connect(store)
    ids = [top]
    for sid in ids:
        ids.extend(r[0] for r in conn.execute("SELECT id FROM sessions WHERE parent_session = ?",
                                              (sid,)))  # fmt: skip
    conn.close()
    return ids


def round_trip(store: Path, session: str, tmp: Path) -> tuple[Path, Path]:
    out = tmp / "export.jsonl"
    assert main(["--store", str(store), "export", session, "--format", "json", "--no-redact",
                 "-o", str(out)]) == 0  # fmt: skip
    other = tmp / "other.db"
    assert main(["--store", str(other), "import", str(out)]) == 0
    return out, other


def check_same(store: Path, other: Path, session: str) -> None:
    ids = tree(store, session)
    assert len(ids) == len(tree(other, session))
    before, after = dump(store, ids), dump(other, ids)
    for key in ("sessions", "events", "bodies"):
        assert before[key] == after[key], key
    assert before["events"] and before["bodies"]


def test_demo_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "demo.db"
    subprocess.run([sys.executable, "-m", "ctxview.cli", "demo", "--no-view", "--pace",
                    "0", "--store", str(store)], check=True, capture_output=True, timeout=120)  # fmt: skip
    conn = sqlite3.connect(store)
    top = conn.execute("SELECT id FROM sessions WHERE parent_session IS NULL").fetchone()[0]
    conn.close()
    out, other = round_trip(store, top, tmp_path)
    check_same(store, other, top)
    # The file: a header, the sessions (parent first) and their events, an end record.
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["format"] == "ctxview-export" and records[0]["version"] == 1
    assert [r["type"] for r in records if r["type"] == "session"] == ["session", "session"]
    assert records[-1]["type"] == "end"
    result = next(r for r in records if r["type"] == "event" and r.get("capped"))
    assert len(result["stored"]) > len(result["shown"])  # the full stored text travels
    capsys.readouterr()
    # Importing the same file again adds nothing.
    assert main(["--store", str(other), "import", str(out)]) == 0
    assert "Imported 0 new lines" in capsys.readouterr().out
    check_same(store, other, top)


def test_redacted_export_imports_too(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    make(store)
    out = tmp_path / "red.jsonl"
    assert main(["--store", str(store), "export", MAIN, "--format", "json", "-o", str(out)]) == 0
    other = tmp_path / "other.db"
    assert main(["--store", str(other), "import", str(out)]) == 0
    a, b = dump(store, tree(store, MAIN)), dump(other, tree(other, MAIN))
    assert len(a["events"]) == len(b["events"]) and len(a["bodies"]) == len(b["bodies"])  # type: ignore[arg-type]
    assert [e[:2] for e in a["events"]] == [e[:2] for e in b["events"]]  # type: ignore[union-attr]
    assert "[redacted:" in json.dumps(b["bodies"])


def test_no_redact_round_trip_of_the_fixture(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    make(store)
    _, other = round_trip(store, MAIN, tmp_path)
    check_same(store, other, MAIN)


def test_a_newer_export_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "new.jsonl"
    f.write_text(json.dumps({"type": "export", "format": "ctxview-export", "version": 99}) + "\n")
    assert main(["--store", str(tmp_path / "x.db"), "import", str(f)]) == 1
    err = capsys.readouterr().err
    assert "newer ctxview" in err and err.count("\n") == 1


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/realdata is not here")
def test_real_session_round_trip(tmp_path: Path) -> None:
    store = tmp_path / "real.db"
    assert main(["--store", str(store), "import", str(REAL)]) == 0
    top = "cc-cb2e607c-c758-415a-8b45-c49e4631906a"
    assert len(tree(store, top)) >= 2  # it has sub-agents
    _, other = round_trip(store, top, tmp_path)
    check_same(store, other, top)
