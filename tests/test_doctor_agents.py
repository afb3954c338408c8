"""`ctxview doctor` says where ctxview is set up in each agent, not only in Claude Code: what
`ctxview uninstall` would take away, looked at without writing anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CTXVIEW = Path(sys.executable).with_name("ctxview")


def _ctxview(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "CODEX_HOME": str(home / ".codex"),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".state")}  # fmt: skip
    return subprocess.run([str(CTXVIEW), "--store", str(home / "s.db"), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60, check=False)  # fmt: skip


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}  # fmt: skip


def test_doctor_names_each_agent_set_up_and_the_rest(tmp_path: Path) -> None:
    proj, home = tmp_path / "proj", tmp_path / "home"
    proj.mkdir()
    home.mkdir()
    said = _ctxview(proj, home, "doctor").stdout
    assert "not set up in codex, gemini, opencode, pi (`ctxview install NAME`)" in said, said
    for host, scope in (("gemini", "--project"), ("pi", "--user"), ("codex", "--user")):
        done = _ctxview(proj, home, "install", host, scope)
        assert done.returncode == 0, done.stderr
    before = _tree(tmp_path)
    said = _ctxview(proj, home, "doctor").stdout
    assert _tree(tmp_path) == before  # doctor wrote nothing
    assert "gemini: set up (project)" in said and "pi: set up (user)" in said, said
    assert "codex: set up (user)" in said and "not set up in opencode (" in said, said
    # A file where ctxview's pi extension goes that is not it: said, and a problem.
    (proj / ".pi" / "extensions").mkdir(parents=True)
    (proj / ".pi" / "extensions" / "ctxview.ts").write_text("export default () => {}\n")
    done = _ctxview(proj, home, "doctor")
    assert done.returncode == 1 and "pi (project): " in done.stdout, done.stdout
    assert "is not ctxview's extension" in done.stdout
