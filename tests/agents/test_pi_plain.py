"""The pinned pi runs headless here against the scripted Messages API, without ctxview: the
model gets pi's own result (the ground the hooked tests compare with)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_anthropic import FakeAnthropic
from pi_helpers import needs_pi, pi_project, results


@needs_pi
def test_plain_pi_reads_a_file_headless(tmp_path: Path) -> None:
    with pi_project(tmp_path) as p:
        (p.root / "a.py").write_text("x = 1\ny = 2\n")
        with FakeAnthropic([{"tool": "read", "input": {"path": "a.py"}}, {"text": "Read it."}]
                           ) as api:  # fmt: skip
            p.provider(api.url)
            out = p.print("read a.py")
        assert out.strip() == "Read it."
        assert results(api.main_requests[-1]) == {"toolu_0001_read": "x = 1\ny = 2\n"}
        (session,) = p.sessions()
        head = json.loads(session.read_text().splitlines()[0])
        assert head["type"] == "session" and head["cwd"] == str(p.root)
