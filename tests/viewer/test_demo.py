"""`ctxview demo`: the scripted session is written through the real engine, with every kind of
result the viewer has to show."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from viewer_helpers import wait_for

from ctxview.commands.demo import HINT, _hint_then_play
from ctxview.demo.run import copy_project, open_demo, run_demo
from ctxview.store import Reader
from ctxview.viewer.app import CtxviewApp

# The installed console script (`python -m ctxview.cli` would load the cli module twice).
CTXVIEW = [str(Path(sys.executable).with_name("ctxview"))]


async def test_demo_writes_every_kind(tmp_path: Path) -> None:
    run = await run_demo(tmp_path / "store.db", pace=0, workspace_root=tmp_path)
    assert run.done
    async with await Reader.open(tmp_path / "store.db") as reader:
        sessions = {s.id: s for s in await reader.sessions()}
        main = sessions[run.session_id]
        events = await reader.events(run.session_id)
        results = [e for e in events if e.kind == "result"]
        kinds = {e.rkind for e in results}
        # An unchanged stub, a same-result stub, a recall, an error, diffs, a patch, a new file.
        assert {"unchanged", "same", "recall", "error", "edit", "patch", "created"} <= kinds
        capped = [e for e in results if e.capped]
        assert capped and capped[0].tool == "bash" and capped[0].stored_lines >= 1500
        assert capped[0].elided_lines and capped[0].elided_lines > 1000
        # The recall points at the capped run; the stubs at earlier full results.
        recall = next(e for e in results if e.rkind == "recall")
        assert recall.points_to == capped[0].rid
        for stub in (e for e in results if e.is_stub):
            target = await reader.result(run.session_id, stub.points_to)
            assert target is not None and target.rkind == "full"
        assert {e.tool for e in results} >= {"multiedit", "apply_patch", "write", "grep", "list"}
        # A compaction, then more work, then the end.
        order = [e.kind for e in events]
        boundary = order.index("compaction")
        assert "result" in order[boundary:] and order[-1] == "end"
        compaction = events[boundary]
        assert [r["path"] for r in compaction.extra["rows"]] == [
            "README.md", "shop/cart.py", "shop/pricing.py"
        ]  # fmt: skip
        # Messages between the steps, usage on the assistant's.
        roles = {e.role for e in events if e.kind == "message"}
        assert roles == {"user", "assistant"}
        assert all("usage" in e.extra for e in events if e.role == "assistant")
        assert main.title and not main.live and main.chars_saved > 0
        # The sub-agent session sits under the main one.
        children = [s for s in sessions.values() if s.parent_session == run.session_id]
        assert len(children) == 1 and not children[0].live
        # "The newest session" (no --session) is the main one, though its sub-agent started later.
        assert children[0].started > main.started
        assert (await reader.resolve_session(None)).id == run.session_id
    # The edits really happened in the workspace, and the project's tests pass there.
    assert "max(0.0" in (run.workspace / "shop" / "pricing.py").read_text()
    assert (run.workspace / "CHANGELOG.md").exists()


async def test_pace_spaces_the_steps(tmp_path: Path) -> None:
    started = time.monotonic()
    run = await run_demo(tmp_path / "store.db", pace=0.01, workspace_root=tmp_path)
    took = time.monotonic() - started
    async with await Reader.open(tmp_path / "store.db") as reader:
        steps = len([e for e in await reader.events(run.session_id) if e.kind != "call"])
    # About a pace per step (some weigh more); at pace 0 the same run takes well under this.
    assert took >= 0.01 * steps * 0.8


def test_sample_project_fails_before_the_fix(tmp_path: Path) -> None:
    """The story needs the copied project to fail the way the script says it does."""
    project = copy_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-B", "run_tests.py", "-v"], cwd=project, capture_output=True, text=True
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 1
    assert len(lines) >= 1500
    assert lines[-1].startswith("11 failed,")
    assert not list(project.rglob("__pycache__"))


def test_no_view_prints_store_and_session(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    done = subprocess.run(
        [*CTXVIEW, "--store", str(store), "demo", "--no-view", "--pace", "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["store"] == str(store)
    listed = subprocess.run(
        [*CTXVIEW, "--store", str(store), "sessions"], capture_output=True, text=True
    )
    assert lines["session"] in listed.stdout


def test_no_view_without_store_writes_the_default_store_and_leaves_no_folder(
    tmp_path: Path,
) -> None:
    """Issue 10.6: the demo writes to the default store (so the next plain `ctxview` finds it)
    and leaves no temporary folder behind (its copy of the sample project goes)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    default = tmp_path / "default.db"
    env = {"PATH": "/usr/bin:/bin", "CTXVIEW_STORE": str(default), "HOME": str(tmp_path),
           "TMPDIR": str(tmp)}  # fmt: skip
    done = subprocess.run([*CTXVIEW, "demo", "--no-view", "--pace", "0"], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"store: {default}"
    assert default.exists() and list(tmp.iterdir()) == []
    listed = subprocess.run([*CTXVIEW, "sessions"], capture_output=True, text=True, env=env)
    assert done.stdout.splitlines()[1].removeprefix("session: ") in listed.stdout


def test_plain_ctxview_without_a_store_says_what_to_run(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "CTXVIEW_STORE": str(tmp_path / "none.db"),
           "HOME": str(tmp_path)}  # fmt: skip
    done = subprocess.run(CTXVIEW, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "`ctxview demo`" in done.stderr and "`ctxview import ~/.claude/projects`" in done.stderr
    assert not (tmp_path / "none.db").exists()


def test_bad_pace_and_theme_are_one_sentence(tmp_path: Path) -> None:
    for extra, words in ((["--pace", "-1"], "--pace"), (["--theme", "nope"], "ctxview-dark")):
        done = subprocess.run(
            [*CTXVIEW, "--store", str(tmp_path / "s.db"), "demo", "--no-view", *extra],
            capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 1
        assert words in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "s.db").exists()


async def test_demo_plays_inside_the_app_and_a_quit_ends_it(tmp_path: Path) -> None:
    """What `ctxview demo` does: the story runs as a task in the app's own loop; quitting midway
    leaves no session marked live."""
    run = await open_demo(tmp_path / "store.db", tmp_path)
    app = CtxviewApp(run.store, session=run.session_id)
    async with app.run_test(size=(120, 30)) as pilot:
        task = asyncio.create_task(_hint_then_play(app, run, 0.05))
        await wait_for(pilot, lambda: any(n.message == HINT for n in app._notifications))
        assert getattr(app.screen, "session_id", None) == run.session_id

        async def results() -> int:
            async with await Reader.open(run.store) as reader:
                row = await reader.session(run.session_id)
            return row.results if row else 0

        # Some steps, not all: quit once the first result is in (a fixed 0.5 s pause saw none
        # on a loaded machine); the paced steps left take seconds more.
        deadline = time.monotonic() + 30
        while await results() == 0:
            assert time.monotonic() < deadline, "the demo never stored a result"
            await pilot.pause(0.05)
        assert not task.done()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await run.close()
    async with await Reader.open(run.store) as reader:
        sessions = await reader.sessions()
        main = next(s for s in sessions if s.id == run.session_id)
        assert 0 < main.results < 21
        assert not any(s.live for s in sessions)


def test_the_first_demo_warns_of_no_folder_it_made(tmp_path: Path) -> None:
    """Issue 16 §4.5: the first `ctxview demo` (no store yet) warned that ctxview's folder was
    0755, a folder it had just made itself (with the umask's mode, then "tightened")."""
    import os
    import stat

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items()
           if k not in ("XDG_STATE_HOME", "CTXVIEW_STORE")} | {"HOME": str(home)}  # fmt: skip
    done = subprocess.run([*CTXVIEW, "demo", "--no-view", "--pace", "0"], env=env, text=True,
                          capture_output=True, timeout=120, umask=0o022)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    own = home / ".local" / "state" / "ctxview"
    for folder in (home / ".local", home / ".local" / "state", own):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((own / "store.db").stat().st_mode) == 0o600
