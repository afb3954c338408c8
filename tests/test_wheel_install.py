"""The wheel installs everything under the one name `ctxview`: installed into a fresh venv next to
another project's own `backend` and `viewer` packages, it leaves them as they are, and its
`ctxview` command works there (--help, and a whole demo session written to a store).

Fast and offline: the wheel is built without build isolation (hatchling is a test dependency),
the venv is made without pip (this venv's pip installs into it with --python), and ctxview's
dependencies come from this venv's site-packages through a .pth line. That line adds the folder
only: its own .pth files (the editable install's path to this checkout) are not run, so the one
ctxview that can be imported there is the wheel's, which the test checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FOREIGN_PYPROJECT = """
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "someone-elses-app"
version = "1.0"

[tool.hatch.build.targets.wheel]
packages = ["backend", "viewer", "themes"]
"""


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        import hatchling  # noqa: F401
    except ImportError:
        pytest.skip("hatchling is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
        "-w", out, ROOT, cwd=out)  # fmt: skip
    (built,) = out.glob("ctxview-*.whl")
    return built


def test_the_wheel_has_nothing_top_level_but_ctxview(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"ctxview", "ctxview-0.1.0.dist-info"}
    for part in ("engine", "store", "agents", "viewer", "themes"):
        assert f"ctxview/{part}/__init__.py" in names
    # The package data the commands need at run time.
    assert "ctxview/rules/config.json" in names
    assert "ctxview/viewer/app.tcss" in names
    assert "ctxview/serve/page/app_index.html" in names  # serve's own page and icon
    assert "ctxview/serve/page/favicon.svg" in names
    assert any(n.startswith("ctxview/demo/project/") for n in names)


def test_installed_beside_another_backend_and_viewer(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                    cwd=tmp_path).strip())  # fmt: skip
    (site / "_deps_from_dev_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    # Someone else's project, with top-level packages of the same names, installed first.
    other = tmp_path / "other"
    for part in ("backend", "viewer", "themes"):
        (other / part).mkdir(parents=True)
        (other / part / "__init__.py").write_text(f"WHO = 'someone else: {part}'\n")
    (other / "pyproject.toml").write_text(FOREIGN_PYPROJECT)
    pip = (sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
           "--no-index", "--no-build-isolation")  # fmt: skip
    run(*pip, other, cwd=tmp_path)
    run(*pip, wheel, cwd=tmp_path)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CTXVIEW"))}
    env["HOME"] = str(tmp_path / "home")
    imported = run(python, "-c",
                   "import backend, viewer, themes, ctxview, ctxview.cli, ctxview.viewer;"
                   "print(backend.WHO); print(viewer.WHO); print(themes.WHO);"
                   "print(ctxview.__file__); print(ctxview.cli.__file__)",
                   cwd=tmp_path, env=env).splitlines()  # fmt: skip
    assert imported[:3] == [f"someone else: {p}" for p in ("backend", "viewer", "themes")]
    for path in imported[3:]:
        assert Path(path).is_relative_to(site), path  # the wheel's, not this checkout

    ctxview = venv / "bin" / "ctxview"
    helped = run(ctxview, "--help", cwd=tmp_path, env=env)
    assert "demo" in helped and "sessions" in helped
    store = tmp_path / "store.db"
    said = run(ctxview, "demo", "--no-view", "--pace", "0", "--store", store, cwd=tmp_path,
               env=env)  # fmt: skip
    session = said.split("session: ", 1)[1].split()[0]
    listed = run(ctxview, "--store", store, "sessions", cwd=tmp_path, env=env)
    assert session in listed
    shown = run(ctxview, "--store", store, "show", "--session", session, cwd=tmp_path, env=env)
    assert "[#1000" in shown
    # And the other project's packages are still its own.
    again = run(python, "-c", "import backend; print(backend.WHO)", cwd=tmp_path, env=env)
    assert again.strip() == "someone else: backend"
