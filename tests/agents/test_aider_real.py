"""The real aider 0.86.2 (tests/agents/aider/.venv, pinned by hash; `.ci/run` installs it) run
headless against the scripted Chat Completions (fake_openai.py) through litellm's `openai/`
route, in a temporary HOME and repository: the `.aider.chat.history.md` it writes is what
`ctxview import` and `ctxview follow` read (issue 19 point 3), so these fixtures are aider's own.

aider runs with `--message` (one prompt, then it exits), `--yes-always`, `--no-git` and the diff
edit format; the scripted model answers with text and a SEARCH/REPLACE block, which aider applies.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from agent_project import HERE, AgentProject, Following, needs, wait_for
from fake_openai import Say, Scripted

AIDER = HERE / "aider" / ".venv" / "bin" / "aider"

needs_aider = needs(AIDER, "aider", "aider", how="tests/agents/aider/.venv, see .ci/run")
pytestmark = [needs_aider, pytest.mark.e2e]

EDIT = """hello.py
```python
<<<<<<< SEARCH
print("hello")
=======
print("hello, world")
>>>>>>> REPLACE
```"""
REPLY = f"I will change the greeting.\n\n{EDIT}\n\nThe greeting now names the world."
BYE = """hello.py
```python
<<<<<<< SEARCH
print("hello, world")
=======
print("goodbye, world")
>>>>>>> REPLACE
```"""
BYE_REPLY = f"Now it says goodbye.\n\n{BYE}\n\nDone."


class Repo(AgentProject):
    """`root`: the repository aider runs in (its history files are written here)."""

    scrub: ClassVar[tuple[str, ...]] = ("OPENAI", "AIDER", "ANTHROPIC", "LITELLM")
    own_xdg: ClassVar[bool] = True
    ctxview_timeout: ClassVar[float] = 120

    @property
    def history(self) -> Path:
        return self.root / ".aider.chat.history.md"

    def env(self) -> dict[str, str]:
        # litellm's price list from its own file, not fetched from the network
        return self.agent_env(OPENAI_API_KEY="test-key", LITELLM_LOCAL_MODEL_COST_MAP="True")

    def aider(self, api: Scripted, message: str) -> str:
        """One headless aider run; its terminal output."""
        p = subprocess.run(
            [str(AIDER), "--model", "openai/fake-model", "--openai-api-base", api.base_url,
             "--no-git", "--yes-always", "--no-check-update", "--no-analytics",
             "--no-show-model-warnings", "--no-show-release-notes", "--no-pretty",
             "--edit-format", "diff", "--map-tokens", "0", "--message", message, "hello.py"],
            cwd=self.root, env=self.env(), capture_output=True, text=True, timeout=180,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert p.returncode == 0, p.stdout + p.stderr
        return p.stdout

    def ctxview_env(self) -> dict[str, str]:
        return self.env()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo", tmp_path / "home", tmp_path / "store.db")
    r.root.mkdir()
    r.home.mkdir()
    (r.root / "hello.py").write_text('print("hello")\n')
    return r


def rows(store: Path, sql: str, *args: object) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(store)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def messages(store: Path, sid: str, role: str) -> list[str]:
    return [str(t) for (t,) in rows(store, "SELECT text FROM events WHERE session = ? AND "
                                    "kind = 'message' AND role = ? ORDER BY seq", sid, role)]  # fmt: skip


def results(store: Path, sid: str) -> list[tuple[str, str, str]]:
    """(tool, rule, shown) of each result, in order."""
    return [(str(t), str(k), str(s)) for t, k, s in rows(
        store, "SELECT e.tool, e.rkind, b.shown FROM events e JOIN bodies b ON b.session = "
        "e.session AND b.rid = e.rid WHERE e.session = ? AND e.kind = 'result' ORDER BY e.seq",
        sid)]  # fmt: skip


def sessions(store: Path) -> list[tuple[str, str, str]]:
    return [(str(i), str(s), str(w)) for i, s, w in
            rows(store, "SELECT id, source, workspace FROM sessions ORDER BY started")]  # fmt: skip


def typed(history: Path) -> list[str]:
    """What aider's input history says the person typed (`+` lines), each once, in order."""
    out: list[str] = []
    for line in history.read_text().splitlines():
        if line.startswith("+") and line[1:] not in out:
            out.append(line[1:])
    return out


def test_an_aider_run_imports_as_one_session_of_what_was_said(repo: Repo) -> None:
    with Scripted([Say(REPLY)]) as api:
        out = repo.aider(api, "Greet the world")
    # aider really ran against the scripted model and applied its edit.
    [request] = api.requests
    assert request["messages"][-1]["content"].startswith("Greet the world\n")
    assert (repo.root / "hello.py").read_text() == 'print("hello, world")\n'
    assert "Applied edit to hello.py" in out
    assert typed(repo.root / ".aider.input.history") == ["Greet the world"]

    # The folder holds aider's two files: the chat history is the session, the input history
    # is not a second one.
    p = repo.ctxview("import", str(repo.root))
    assert p.returncode == 0, p.stderr
    [(sid, source, workspace)] = sessions(repo.store)
    assert re.fullmatch(r"ai-\d{8}T\d{6}-[0-9a-f]{6}", sid) and source == "aider"
    assert workspace == str(repo.root)
    assert messages(repo.store, sid, "user") == typed(repo.root / ".aider.input.history")
    assert messages(repo.store, sid, "assistant") == [REPLY]  # the model's words, as it said them
    # aider's own report after the reply: each of its lines as aider printed it.
    said = messages(repo.store, sid, "system")[-1].splitlines()
    assert said[-1] == "Applied edit to hello.py" and said[0].startswith("Tokens: ")
    assert all(line in out.splitlines() for line in said)
    [(tool, rule, shown)] = results(repo.store, sid)
    assert (tool, rule) == ("edit", "full") and EDIT in shown
    [(args,)] = rows(repo.store, "SELECT args FROM events WHERE session = ? AND kind = 'call'", sid)
    assert '"hello.py"' in str(args)
    # A second import of the same history adds nothing.
    p = repo.ctxview("import", str(repo.history))
    assert p.returncode == 0 and p.stdout.startswith("Imported 0 new lines"), p.stdout


def test_a_run_command_s_output_is_not_taken_from_aider_s_question(repo: Repo) -> None:
    """aider 0.86 prints a `/run` command's output to the terminal and gives it to the model, but
    writes only its question and "Added N lines of output to the chat." to the history: that is
    not the command's output, so no bash result is made of it."""
    with Scripted([]) as api:
        out = repo.aider(api, "/run seq 1 300")
    assert "\n150\n" in out and "150" not in repo.history.read_text()
    p = repo.ctxview("import", str(repo.history))
    assert p.returncode == 0, p.stderr
    [(sid, _, _)] = sessions(repo.store)
    assert messages(repo.store, sid, "user") == ["/run seq 1 300"]
    assert results(repo.store, sid) == []
    assert "Added 300 lines of output to the chat." in messages(repo.store, sid, "system")[-1]


def _follow(repo: Repo) -> Following:
    return Following(repo.history, repo.root, repo.env())


def test_follow_takes_a_second_run_appended_to_the_history(repo: Repo) -> None:
    with Scripted([Say(REPLY)]) as api:
        repo.aider(api, "Greet the world")
    follow = _follow(repo)
    try:
        wait_for(repo.store, lambda: len(sessions(repo.store)) == 1, "the first run")
        [(first, _, _)] = sessions(repo.store)
        # The first run is over: its last block (aider's report of the edit) is final too.
        wait_for(repo.store, lambda: results(repo.store, first), "the first run's edit")
        with Scripted([Say(BYE_REPLY)]) as api:
            repo.aider(api, "Say goodbye")
        assert (repo.root / "hello.py").read_text() == 'print("goodbye, world")\n'

        def second() -> bool:
            new = [s for s, _, _ in sessions(repo.store) if s != first]
            return bool(new) and len(results(repo.store, new[0])) == 1

        wait_for(repo.store, second, "the second run and its edit")
    finally:
        follow.stop()
    [second_sid] = [s for s, _, _ in sessions(repo.store) if s != first]
    assert messages(repo.store, second_sid, "user") == ["Say goodbye"]
    assert messages(repo.store, second_sid, "assistant") == [BYE_REPLY]
    [(tool, _, shown)] = results(repo.store, second_sid)
    assert tool == "edit" and BYE in shown
    assert messages(repo.store, first, "assistant") == [REPLY]  # the first run not imported twice
