"""A real store filled through the engine, with every kind of result the viewer shows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.engine.session import Session
from ctxview.store import Writer

STARTED = 1_764_000_000.0  # fixed, so nothing on screen depends on when the test runs
# Elision at a small scale: a few dozen steps of 60-line outputs take strides.
ELIDE = {"elide.enabled": True, "elide.threshold_chars": 2000, "elide.min_chars": 200,
         "elide.stride": 4, "elide.keep": 2}  # fmt: skip

APP_PY = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(30))
UTIL_PY = (
    'import os\n\n\ndef home() -> str:\n    """Where we live."""\n    return os.environ["HOME"]\n'
)


@dataclass
class Filled:
    store: Path
    workspace: Path
    session_id: str
    ids: dict[str, int] = field(default_factory=dict)


async def fill(tmp: Path, *, end: bool = False) -> Filled:
    """A session: messages, reads, an unchanged re-read, a grep twice, a capped test run with
    ANSI colour, an edit, a patch, a recall, an error, a compaction, more work after it."""
    ws = tmp / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text(APP_PY)
    (ws / "src" / "util.py").write_text(UTIL_PY)
    store = tmp / "store.db"
    writer = await Writer.open(store)
    s = await Session.start(writer, ws, title="sample", session_id="s-test", started=STARTED)
    ids: dict[str, int] = {}
    t = STARTED

    def tick() -> float:
        nonlocal t
        t += 1
        return t

    await s.message("user", "Fix the failing test in src/app.py, please. [/bold] stays text.",
                    ts=tick())  # fmt: skip
    await s.message(
        "assistant", "I'll read the code first.", ts=tick(),
        data={"usage": {"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 9000,
                        "cache_write_tokens": 0}},
    )  # fmt: skip
    await s.run("read", {"path": "src/app.py"})
    ids["read"] = s.last.rid  # type: ignore[union-attr]
    await s.run("read", {"path": "src/util.py"})
    ids["read_util"] = s.last.rid  # type: ignore[union-attr]
    await s.run("read", {"path": "src/app.py"})
    ids["unchanged"] = s.last.rid  # type: ignore[union-attr]
    await s.run("grep", {"pattern": "return", "path": "src"})
    ids["grep"] = s.last.rid  # type: ignore[union-attr]
    await s.run("grep", {"pattern": "return", "path": "src"})
    ids["same"] = s.last.rid  # type: ignore[union-attr]
    test_out = (
        "\n".join(f"\x1b[32mPASSED\x1b[0m tests/test_app.py::test_{i}" for i in range(1500))
        + "\n\x1b[31mFAILED\x1b[0m tests/test_app.py::test_last [/red]"
    )
    await s.insert("bash", {"command": "pytest -q"}, test_out, ts=tick())
    ids["capped"] = s.last.rid  # type: ignore[union-attr]
    await s.message("assistant", f"The run {s.ref(ids['capped'])} failed; see {s.ref(ids['read'])}.",
                    ts=tick())  # fmt: skip
    await s.run("edit", {"path": "src/app.py", "old_string": "return x + 3\n",
                         "new_string": "return x + 3  # fixed\n"})  # fmt: skip
    ids["edit"] = s.last.rid  # type: ignore[union-attr]
    patch = (
        "*** Begin Patch\n*** Update File: src/util.py\n@@\n def home() -> str:\n"
        '-    """Where we live."""\n+    """The home folder."""\n     return os.environ["HOME"]\n'
        "*** Add File: src/new.py\n+VALUE = 1\n+\n*** End Patch"
    )
    await s.run("apply_patch", {"patch": patch})
    ids["patch"] = s.last.rid  # type: ignore[union-attr]
    await s.run("recall", {"id": s.ref(ids["capped"]), "offset": 1, "limit": 5})
    ids["recall"] = s.last.rid  # type: ignore[union-attr]
    await s.run("read", {"path": "src/missing.py"})
    ids["error"] = s.last.rid  # type: ignore[union-attr]
    await s.compact("Summary: the test in src/app.py was fixed.\nNext: run the suite again.\n"
                    "Then look at util.\nAnd more.\nAnd the end.", ts=tick())  # fmt: skip
    await s.message("assistant", f"After the summary I still mention {s.ref(ids['read'])}.",
                    ts=tick())  # fmt: skip
    await s.run("read", {"path": "src/util.py"})
    ids["after"] = s.last.rid  # type: ignore[union-attr]
    if end:
        await s.end(ts=tick())
    await writer.close()
    return Filled(store, ws, s.id, ids)


@asynccontextmanager
async def long_session(
    tmp: Path, session_id: str, config: dict[str, object] | None
) -> AsyncIterator[tuple[Path, Session]]:
    """A store with one session over an empty workspace, the user's first message given: the
    long sessions the elision tests fill step by step. The writer closes on leaving."""
    ws = tmp / "ws"
    ws.mkdir()
    store = tmp / "store.db"
    async with await Writer.open(store) as writer:
        s = await Session.start(writer, ws, title="long", session_id=session_id,
                                started=STARTED, config=config)  # fmt: skip
        await s.message("user", "Work through the steps.")
        yield store, s
