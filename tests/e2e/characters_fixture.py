"""The session the character tests in a browser and in tmux share (issue 10.1): a result
holding a long sentence, CJK, emoji (one with a skin-tone modifier), combining marks and a word
wider than any screen; sessions with long titles, one in CJK, for the list."""

from __future__ import annotations

import re
from pathlib import Path

from ctxview.engine.session import Session
from ctxview.store import Writer

MIXED = (
    "Before I present a complete plan, let me check the remaining files once more. "
    + "汉字かな漢字" * 12 + " 😀🎉👍🏽 e\u0301 a\u0308 n\u0303 Zu\u0308rich " * 5
    + " family 👨\u200d👩\u200d👧 " * 6
    + "x" * 250 + " (the end)."
)  # fmt: skip
TITLES = {
    "ascii": "Please refactor the whole billing module so that every invoice total is rounded "
    "the same way, then update the changelog",
    "cjk": "修复购物车总价的舍入错误并为每个折扣规则添加测试然后更新文档和变更日志",
    "short": "chars",
}
WORKSPACE = "/srv/projects/tinyshop/a-rather-long/workspace/path/that/goes/on"
GUTTER = 2  # the cursor's mark ("▌ ") left of a block's rows
SCROLLBAR = 2  # the transcript's vertical scrollbar, drawn over its last columns
SPACE = re.compile(r"\s+")


def squeeze(text: str) -> str:
    """Without whitespace and the cursor's gutter mark: a wrap may break a line at a space, but
    must never drop, repeat or move a character."""
    return SPACE.sub("", text).replace("▌", "")


async def build_store(path: Path) -> tuple[str, int]:
    w = await Writer.open(path)
    main = ""
    rid = 0
    for key, title in TITLES.items():
        s = await Session.start(w, "/tmp", title=title)
        await w.update_session(s.id, workspace=WORKSPACE)
        if key == "short":
            await s.message("user", "show me the mixed output")
            await s.insert("bash", {"command": "echo mixed"}, MIXED)
            assert s.last is not None
            rid = s.last.rid
            # More than a screen after it: the scrollbar is drawn.
            await s.message("user", "\n".join(f"filler {i}" for i in range(80)))
            main = s.id
        else:
            await s.insert("bash", {"command": "echo hi"}, "hi")
    await w.close()
    return main, rid
