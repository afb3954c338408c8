"""The real Gemini CLI 0.61 headless against the scripted Gemini API: plain, then with
`ctxview install gemini` (the rules' text reaches the model through the AfterTool hook's tail
call), then with the hook failing (Gemini's own output, a recorded failure)."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

import pytest

from ctxview.agents import failures, hook_trace
from tests.agents.agent_project import Following, wait_for
from tests.agents.fake_gemini import (
    SUMMARY,
    Call,
    Say,
    Scripted,
    function_responses,
    response_text,
)
from tests.agents.gemini_helpers import (
    CLI,
    chat_files,
    clock_ahead,
    clock_at,
    ctxview,
    env,
    follow_once,
    installed,
    run_gemini,
    scripted_run,
)

pytestmark = pytest.mark.skipif(not CLI.exists(), reason="npm ci --prefix tests/agents/gemini")
LINES = [f"line {i}" for i in range(1, 41)]


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "notes.txt").write_text("\n".join(LINES) + "\n")
    return proj


def _steps(proj: Path) -> list[Call | Say]:
    f = str(proj / "notes.txt")
    return [Call("read_file", {"file_path": f}), Call("read_file", {"file_path": f}),
            Call("read_file", {"file_path": f, "start_line": 3, "end_line": 5}),
            Call("run_shell_command", {"command": "seq 1 5000"}),
            Call("grep_search", {"pattern": "line 7"}), Call("grep_search", {"pattern": "line 7"}),
            Call("replace", {"file_path": f, "old_string": "line 2\n", "new_string": "line two\n",
                             "instruction": "rename"}),
            Say("finished.")]  # fmt: skip


def _unwrap(text: str) -> str:
    """The MCP tool's text inside the wrapper Gemini CLI puts around every MCP result."""
    head, tail = "<untrusted_context>\n", "\n</untrusted_context>"
    assert text.startswith(head) and text.endswith(tail), text[:200]
    return text[len(head) : -len(tail)].replace(
        "&lt;/untrusted_context&gt;", "</untrusted_context>"
    )


def _answers(server: Scripted) -> list[tuple[str, str]]:
    """(tool, text) of every tool result the model was sent, in order, from the last turn."""
    last = server.turns()[-1]
    return [(fr["name"], response_text(fr)) for fr in function_responses(last)]


def test_plain_gemini_runs_headless(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    steps: list[Call | Say] = [
        Call("read_file", {"file_path": str(proj / "notes.txt")}),
        Say("ok."),
    ]
    s, done = scripted_run(proj, env(tmp_path, ""), steps, "read notes.txt")
    assert done.returncode == 0, done.stderr
    assert "ok." in done.stdout
    [(tool, text)] = _answers(s)
    assert tool == "read_file" and text.startswith("line 1\nline 2\n")


def test_hooked_session_gets_the_rules(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    with installed(proj, environ) as store:
        s, done = scripted_run(proj, environ, _steps(proj), "work on notes.txt")
        assert done.returncode == 0, done.stderr
        answers = _answers(s)
    # The bash client reached the engine over http, but for the first call: no engine ran, so
    # it handed that one to the Python client, which started it.
    transports = [
        t["transport"] for t in hook_trace.read(store) if t["event"] == "gemini.AfterTool"
    ]
    assert transports == ["command"] + ["http"] * 6, transports
    tools = [t for t, _ in answers]
    assert tools == ["read_file", "read_file", "read_file", "run_shell_command", "grep_search",
                     "grep_search", "replace"], answers  # fmt: skip
    texts = [_unwrap(t) for _, t in answers]
    first = re.match(
        r"\[#(\w{4}) \S*notes\.txt lines 1-40 of 40 sha (\w+)\]\n1: line 1\n", texts[0]
    )
    assert first, texts[0]
    rid = first.group(1)
    assert f"] Unchanged since #{rid}, which already shows lines 1-40." in texts[1], texts[1]
    assert "line 1\n" not in texts[1], texts[1]
    # the long command: capped, with the elision line
    assert re.search(r"lines? elided|elided", texts[3]), texts[3][:3000]
    assert len(texts[3]) < 20000
    # the second search: the same-result stub naming the first
    m = re.match(r"\[#(\w{4})", texts[4])
    assert m and f"#{m.group(1)}" in texts[5] and len(texts[5]) < 200, texts[5]
    # the edit: a diff
    assert "-line 2" in texts[6] and "+line two" in texts[6], texts[6]
    db = sqlite3.connect(store)
    sessions = [r[0] for r in db.execute("select id from sessions")]
    assert len(sessions) == 1 and sessions[0].startswith("gm-"), sessions
    shown = [r[0] for r in db.execute(
        "select b.shown from events e join bodies b on b.rid = e.rid and b.session = e.session "
        "where e.kind = 'result' order by e.seq")]  # fmt: skip
    for got, want in zip(shown, texts, strict=True):
        assert got == want, (got[-300:], want[-300:])


def _read_twice_and_run(proj: Path) -> list[Call | Say]:
    f = str(proj / "notes.txt")
    return [Call("read_file", {"file_path": f}), Call("read_file", {"file_path": f}),
            Call("run_shell_command", {"command": "seq 1 3"}), Say("fin.")]  # fmt: skip


def _results(store: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(store) as db:
        return db.execute(
            "SELECT e.session, e.call_ref, b.shown FROM events e JOIN bodies b ON b.rid = e.rid "
            "AND b.session = e.session WHERE e.kind = 'result' ORDER BY e.session, e.seq"
        ).fetchall()


def test_import_and_follow_of_a_hooked_session_store_it_once(tmp_path: Path) -> None:
    """The chat file of a session the hooks stored, followed then imported: the same session
    `gm-<id>`, gaining its messages, each call once with the text the model got."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    steps = _read_twice_and_run(proj)
    with installed(proj, environ) as store:
        s, done = scripted_run(proj, environ, steps, "read notes.txt twice")
        assert done.returncode == 0, done.stderr
        answers = [_unwrap(t) for _, t in _answers(s)]
    hooked = _results(store)
    assert [r[2] for r in hooked] == answers, (hooked, answers)
    [chat] = chat_files(Path(environ["HOME"]))
    said = follow_once(proj, environ, chat)
    [sid] = {r[0] for r in hooked}
    assert f"→ {sid}" in said, said
    imported = ctxview(proj, environ, "import", str(chat))
    assert imported.returncode == 0, imported.stderr
    with sqlite3.connect(store) as db:
        sessions = [r[0] for r in db.execute("SELECT id FROM sessions")]
        prompts = [r[0] for r in db.execute(
            "SELECT text FROM events WHERE kind = 'message' AND role = 'user'")]  # fmt: skip
        calls = db.execute("SELECT count(*) FROM events WHERE kind = 'call'").fetchone()[0]
    assert sessions == [sid]
    assert "read notes.txt twice" in prompts  # the follow did add the chat file's messages
    assert _results(store) == hooked  # no call a second time, each text as the model got it
    assert calls == len(hooked)


def _said(store: Path, role: str) -> list[str]:
    with sqlite3.connect(store) as db:
        return [r[0] for r in db.execute("SELECT text FROM events WHERE kind = 'message' AND "
                                         "role = ? AND text != '' ORDER BY seq", (role,))]  # fmt: skip


def test_a_session_followed_from_its_first_prompt_is_the_hooked_one(tmp_path: Path) -> None:
    """`ctxview follow` of the chat file from Gemini's first request, before any hook ran: the
    follow makes the session from the file's header and prompt, the hooks then answer in that
    same session, and the follow stores none of their calls a second time."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    steps = _read_twice_and_run(proj)
    store = Path(environ["CTXVIEW_STORE"])
    follows: list[Following] = []

    def follow_first(body: dict[str, object]) -> None:
        if follows or not body.get("tools"):
            return
        [chat] = chat_files(Path(environ["HOME"]))
        follows.append(Following(chat, proj, environ))
        wait_for(store, lambda: "read notes.txt twice" in _said(store, "user"), "the prompt")

    with installed(proj, environ):
        try:
            with Scripted(steps, hold=follow_first) as s:
                environ["GOOGLE_GEMINI_BASE_URL"] = s.base_url
                done = run_gemini(proj, environ, "read notes.txt twice")
            assert done.returncode == 0, done.stderr
            answers = [_unwrap(t) for _, t in _answers(s)]
            wait_for(store, lambda: "fin." in _said(store, "assistant"), "the last answer")
        finally:
            for following in follows:
                following.stop()
    results = _results(store)
    assert [r[2] for r in results] == answers, (results, answers)  # each once, as the model got it
    with sqlite3.connect(store) as db:
        sessions = [r[0] for r in db.execute("SELECT id FROM sessions")]
        calls = db.execute("SELECT count(*) FROM events WHERE kind = 'call'").fetchone()[0]
    assert len(sessions) == 1 and {r[0] for r in results} == set(sessions), (sessions, results)
    assert calls == len(answers) == 3
    assert _said(store, "user").count("read notes.txt twice") == 1


@pytest.mark.parametrize("later", [False, True], ids=["same-minute", "later-minute"])
def test_an_import_between_two_hooked_runs_is_kept(tmp_path: Path, later: bool) -> None:
    """Imported after a first run, then resumed hooked (the engine still up), then imported
    again: the engine's writes leave the import's state alone, so nothing comes in twice. A
    resume in a later minute than the chat file's name (Gemini's clock set ahead) leaves a
    second file of the session holding no message (importers/gemini_files.py): the import of
    the folder takes it as a part of the session, nothing from it, no error."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    f = str(proj / "notes.txt")
    minute = time.time() // 60 * 60 - 600  # a whole minute of Gemini's clock for the two runs
    if not later:  # two runs under load straddled a real minute: its second file, 1 run in 4
        environ.update(clock_at(minute + 1))
    with installed(proj, environ) as store:
        _, done = scripted_run(proj, environ, [Call("read_file", {"file_path": f}), Say("one.")],
                               "first")  # fmt: skip
        assert done.returncode == 0
        [chat] = chat_files(Path(environ["HOME"]))
        sid = json.loads(chat.read_text().splitlines()[0])["sessionId"]
        assert ctxview(proj, environ, "import", str(chat)).returncode == 0
        environ.update(clock_ahead(120) if later else clock_at(minute + 45))
        _, done = scripted_run(proj, environ, [Call("run_shell_command", {"command": "seq 1 3"}),
                                               Say("two.")], "second", "--resume", "latest")  # fmt: skip
        assert done.returncode == 0, done.stderr
    chats = chat_files(Path(environ["HOME"]))
    assert chats[0] == chat and len(chats) == 1 + later, chats
    if later:  # a follow of the file the resume left takes the resumed run from the first one
        assert f"→ gm-{sid}" in follow_once(proj, environ, chats[-1])
    imported = ctxview(proj, environ, "import", str(Path(environ["HOME"]) / ".gemini" / "tmp"))
    assert imported.returncode == 0, imported.stderr
    assert ctxview(proj, environ, "import", str(chats[-1])).returncode == 0
    with sqlite3.connect(store) as db:
        prompts = [r[0] for r in db.execute(
            "SELECT text FROM events WHERE kind = 'message' AND role = 'user' "
            "AND text IN ('first', 'second') ORDER BY seq")]  # fmt: skip
        said = [r[0] for r in db.execute(
            "SELECT text FROM events WHERE kind = 'message' AND role = 'assistant' "
            "AND text != '' ORDER BY seq")]  # fmt: skip
        results = db.execute("SELECT count(*) FROM events WHERE kind = 'result'").fetchone()[0]
        sessions = db.execute("SELECT id, source_path FROM sessions").fetchall()
    assert prompts == ["first", "second"]
    assert said == ["one.", "two."]
    assert results == 2
    assert len(sessions) == 1 and sessions[0][1] == str(chat), sessions


def test_recall_answers_from_this_session(tmp_path: Path) -> None:
    """The model recalls the id of a capped command's output (ctxview's MCP tool `recall`, which
    the AfterTool hook answers from the session `gm-<id>`): the request after it has the whole
    stored output, and the store holds the recall as a result of that session."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    steps: list[Call | Say] = [Call("run_shell_command", {"command": "seq 1 600"}),
                               Call("mcp_ctxview_recall", {"id": "#1000"}), Say("fin.")]  # fmt: skip
    with installed(proj, environ) as store:
        s, done = scripted_run(proj, environ, steps, "count to 600")
        assert done.returncode == 0, done.stderr
        answers = _answers(s)
    assert [t for t, _ in answers] == ["run_shell_command", "mcp_ctxview_recall"], answers
    # What the model is told: ctxview's MCP server's instructions, in the session's context.
    told = json.dumps(s.turns()[0])
    assert "mcp_ctxview_recall(id, offset?, limit?)" in told, told[-3000:]
    capped, recalled = (_unwrap(t) for _, t in answers)
    assert capped.startswith("[#1000]\n") and "elided" in capped and "\n450\n" not in capped
    head, _, body = recalled.partition("\n")
    assert head == "[#1001 recall #1000 lines 1-{0} of {0}]".format(body.count("\n") + 1), head
    with sqlite3.connect(store) as db:
        full = db.execute("SELECT stored FROM bodies WHERE rid = 4096").fetchone()[0]
        rows = db.execute("SELECT session, rkind, points_to FROM events WHERE rid = 4097"
                          ).fetchall()  # fmt: skip
    assert body == full, (body[-300:], full[-300:])  # the whole output, as stored
    assert [int(n) for n in re.findall(r"^(?:Output: )?(\d+)$", full, re.M)] == list(range(1, 601))
    [(sid, rkind, points_to)] = rows
    assert sid.startswith("gm-") and rkind == "recall" and points_to == 4096


def _texts(body: dict[str, object]) -> list[str]:
    """The text parts of a request, in order."""
    contents = body.get("contents")
    assert isinstance(contents, list)
    return [p["text"] for c in contents for p in c.get("parts", []) if "text" in p]


def test_gemini_compression_records_a_boundary_and_gives_the_table(tmp_path: Path) -> None:
    """Gemini's own compression, headless: a turn reports a prompt past half the model's window,
    and Gemini (its next-speaker check on, answered "model") goes on by itself, compressing
    first. The request after holds the files-read table right after Gemini's summary, a re-read
    after it is full text, and the store holds the boundary with Gemini's summary."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    settings = Path(environ["HOME"]) / ".gemini" / "settings.json"
    user = json.loads(settings.read_text())
    settings.write_text(json.dumps({**user, "model": {"skipNextSpeakerCheck": False}}))
    f = str(proj / "notes.txt")
    steps: list[Call | Say] = [Call("read_file", {"file_path": f}),
                               Call("read_file", {"file_path": f}),
                               Say("pause.", prompt_tokens=900_000, more=True),
                               Call("read_file", {"file_path": f}), Say("fin.")]  # fmt: skip
    with installed(proj, environ) as store:
        s, done = scripted_run(proj, environ, steps, "read notes.txt")
        assert done.returncode == 0, done.stderr
    assert any("Generate a new <state_snapshot>" in json.dumps(r["body"]) for r in s.requests)
    turns = s.turns()
    after = next(t for t in turns if "Please continue." in _texts(t))  # Gemini's own next turn
    said = "\n".join(_texts(after))
    head, _, table = said.partition(f"{SUMMARY}\n\n")
    assert head.endswith("</session_context>") and table.startswith(
        "## Files read before this summary\n"), said[-1500:]  # fmt: skip
    assert re.search(r"\| \S*notes\.txt \| 1-40 of 40 \| [0-9a-f]{8} \| #1000 \|", table), table
    last = turns[-1]
    assert f"{SUMMARY}\n\n## Files read before this summary\n" in "\n".join(_texts(last))
    reread = _unwrap(response_text(function_responses(last)[-1]))
    assert re.match(r"\[#1002 \S*notes\.txt lines 1-40 of 40 sha \w+\]\n1: line 1\n", reread), (
        reread
    )
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT text, json_extract(data, '$.trigger') FROM events "
                          "WHERE kind = 'compaction'").fetchall()  # fmt: skip
    assert rows == [(SUMMARY, "auto")]
    # Its chat file: into the hooked session, nothing more; into a store of its own (the texts
    # in it are the ones the hooks gave), the compaction from the file's record of it, in place.
    [chat] = chat_files(Path(environ["HOME"]))
    assert ctxview(proj, environ, "import", str(chat)).returncode == 0
    other = tmp_path / "other.db"
    assert ctxview(proj, environ, "import", "--store", str(other), str(chat)).returncode == 0
    for db_path, want in ((store, [(SUMMARY, "auto")]), (other, [(SUMMARY, None)])):
        with sqlite3.connect(db_path) as db:
            got = db.execute("SELECT text, json_extract(data, '$.trigger') FROM events "
                             "WHERE kind = 'compaction'").fetchall()  # fmt: skip
            kinds = [r[0] for r in db.execute("SELECT kind FROM events WHERE kind IN "
                                              "('result', 'compaction') ORDER BY seq")]  # fmt: skip
        assert got == want, db_path
        assert kinds == ["result", "result", "compaction", "result"], (db_path, kinds)


def test_failing_hook_keeps_gemini_output(tmp_path: Path) -> None:
    """CTXVIEW_HOOK_FAIL in Gemini's environment: every hook fails; the model gets Gemini's
    own outputs and each failure is recorded for `ctxview doctor`."""
    proj = _project(tmp_path)
    environ = env(tmp_path, "", CTXVIEW_HOOK_FAIL="1")
    f = str(proj / "notes.txt")
    steps: list[Call | Say] = [Call("read_file", {"file_path": f}),
                               Call("run_shell_command", {"command": "echo hi"}),
                               Call("mcp_ctxview_recall", {"id": "#1000"}), Say("ok.")]  # fmt: skip
    with installed(proj, environ) as store:
        s, done = scripted_run(proj, environ, steps, "read notes.txt")
    assert done.returncode == 0, done.stderr
    answers = _answers(s)
    assert answers[0] == ("read_file", "\n".join(LINES) + "\n")
    assert "hi" in answers[1][1] and "[#" not in answers[1][1]
    assert "ctxview's hook did not answer, so #1000 could not be recalled" in answers[2][1]
    recorded = failures.read(store)
    assert len([r for r in recorded if "CTXVIEW_HOOK_FAIL" in str(r)]) >= 2, recorded


def test_uninstall_restores_the_settings_exactly(tmp_path: Path) -> None:
    proj = _project(tmp_path)
    environ = env(tmp_path, "")
    settings = proj / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = '{\n\t"ui": {"theme": "GitHub"},\n\t"hooks": {"AfterTool": []}\n}'  # no final newline
    settings.write_text(mine)
    settings.chmod(0o640)
    assert ctxview(proj, environ, "install", "gemini").returncode == 0
    assert "gemini/hook_client.sh" in settings.read_text()
    again = ctxview(proj, environ, "install", "gemini")
    assert "already set up" in again.stdout, again.stdout
    assert ctxview(proj, environ, "uninstall", "gemini").returncode == 0
    assert settings.read_text() == mine
    assert settings.stat().st_mode & 0o777 == 0o640
    assert not (proj / ".gemini" / "ctxview-install.json").exists()
    # a folder with no settings before: nothing left after
    other = tmp_path / "other"
    other.mkdir()
    assert ctxview(other, environ, "install", "gemini").returncode == 0
    assert ctxview(other, environ, "uninstall", "gemini").returncode == 0
    assert not (other / ".gemini" / "settings.json").exists()
