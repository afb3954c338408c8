"""Gemini CLI's sub-agents imported from their chat files: each one's session is a child of the
parent's, linked to the parent's own `invoke_agent` call that started it, two at once in one
turn included, whichever file is imported first."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from gemini_subagent_files import AGENTS, CALLS, PARENT, write
from test_import_agents import run

LINKED = {f"gm-{agent}": (f"gm-{PARENT}", call) for agent, call in zip(AGENTS, CALLS, strict=True)}


def _links(store: Path) -> dict[str, tuple[str | None, str | None]]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT id, parent_session, parent_call FROM sessions").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


@pytest.mark.parametrize("order", ["folder", "parent first", "agents first", "one each side"])
def test_each_sub_agent_is_linked_to_its_own_invoke_agent_call(order: str, tmp_path: Path) -> None:
    parent, agents = write(tmp_path / "tmp")
    store = tmp_path / "s.db"
    paths = {"folder": [tmp_path / "tmp"], "parent first": [parent, *agents],
             "agents first": [*agents, parent],
             "one each side": [agents[1], parent, agents[0]]}[order]  # fmt: skip
    for p in paths:
        code, _, err = run(store, "import", str(p))
        assert code == 0, err
    links = _links(store)
    assert links.pop(f"gm-{PARENT}") == (None, None)
    assert links == LINKED, links
    with sqlite3.connect(store) as db:  # each call is stored in the parent under that ref
        refs = {r[0] for r in db.execute("SELECT call_ref FROM events WHERE session = ?",
                                         (f"gm-{PARENT}",))}  # fmt: skip
    assert set(CALLS) <= refs, refs
