"""An OpenCode 1.x SQLite database built from an OpenCode storage/ folder, in the schema
FORMATS.md 9 records from the real v1.16.0 database (which is not in realdata: it has no
licence): the ids in columns, the rest of each JSON object in `data`. Built, not real: the
importer's database reader is tested on the same sessions as its storage/ reader."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

SCHEMA = """
CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT, time_created INTEGER);
CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, parent_id TEXT, slug TEXT,
  directory TEXT, title TEXT, version TEXT, share_url TEXT, time_created INTEGER,
  time_updated INTEGER, time_compacting INTEGER, time_archived INTEGER);
CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER,
  time_updated INTEGER, data TEXT);
CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, time_created INTEGER,
  time_updated INTEGER, data TEXT);
CREATE TABLE event (aggregate_id TEXT, seq INTEGER, type TEXT, data TEXT);
"""


def build_db(storage: Path, db: Path) -> Path:
    conn = sqlite3.connect(db)
    conn.executescript(SCHEMA)
    for f in sorted(storage.glob("session/*/*.json")):
        s = json.loads(f.read_text())
        conn.execute("INSERT INTO session (id, project_id, parent_id, directory, title, version,"
                     " time_created, time_updated) VALUES (?,?,?,?,?,?,?,?)",
                     (s["id"], s.get("projectID"), s.get("parentID"), s.get("directory"),
                      s.get("title"), s.get("version"), s["time"]["created"],
                      s["time"]["updated"]))  # fmt: skip
        for mf in sorted((storage / "message" / s["id"]).glob("*.json")):
            m = json.loads(mf.read_text())
            mid = m.pop("id")
            m.pop("sessionID", None)
            conn.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                         (mid, s["id"], m["time"]["created"], m["time"]["created"],
                          json.dumps(m)))  # fmt: skip
            for pf in sorted((storage / "part" / mid).glob("*.json")):
                p = json.loads(pf.read_text())
                pid = p.pop("id")
                p.pop("messageID", None)
                p.pop("sessionID", None)
                conn.execute("INSERT INTO part VALUES (?,?,?,?,?,?)",
                             (pid, mid, s["id"], 0, 0, json.dumps(p)))  # fmt: skip
    conn.commit()
    conn.close()
    return db
