"""Redaction: every planted secret (22 kinds) gone from every format and every field (title,
workspace, path, call arguments, result, elided middle, message, thinking, summary, files-read
table, sub-agent), counted by kind; hashes, ids and uuids beside them left exactly as they were;
an export that fails leaves no file behind."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from export_fixture import AGENT, MAIN, make
from export_secrets import LOOKALIKES, SECRETS, secret_part

from ctxview.cli import main
from ctxview.export import redact as redact_module
from ctxview.export.redact import Redactor, redact_text
from ctxview.export.run import export_session
from ctxview.export.source import Source


def forms(secret: str) -> set[str]:
    """The ways a secret could appear in an output file: raw, JSON-escaped, HTML-escaped, and
    its longest run of letters and digits."""
    out = {secret, json.dumps(secret)[1:-1], html.escape(secret, quote=False)}
    longest = max(re.findall(r"[A-Za-z0-9]+", secret), key=len, default="")
    if len(longest) >= 10:
        out.add(longest)
    return out


@pytest.mark.parametrize(("kind", "secret"), SECRETS, ids=[f"{k}-{i}" for i, (k, _) in
                                                            enumerate(SECRETS)])  # fmt: skip
def test_each_secret_is_redacted_and_counted(kind: str, secret: str) -> None:
    for context in ("{}", "before {} after", "x={}\n", '{{"k": "{}"}}'):
        counts: Counter[str] = Counter()
        out = redact_text(context.format(secret), counts)
        assert secret_part(kind, secret) not in out, (kind, out)
        assert counts[kind] >= 1, (kind, out, counts)
        assert f"[redacted: {kind}]" in out


def test_at_least_twenty_kinds() -> None:
    assert len({k for k, _ in SECRETS}) >= 20


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_are_left_alone(text: str) -> None:
    counts: Counter[str] = Counter()
    assert redact_text(text, counts) == text
    assert not counts


def test_redaction_is_idempotent_and_json_kept_byte_for_byte() -> None:
    r = Redactor()
    once = r.text(" ".join(s for _, s in SECRETS))
    assert once is not None
    before = sum(r.counts.values())
    assert r.text(once) == once and sum(r.counts.values()) == before
    raw = '{"path":  "a.py", "n": 1}'  # odd spacing: kept as it is when nothing is found
    assert r.json_text(raw) == raw
    key = SECRETS[2][1]
    assert key not in (r.json_text(json.dumps({key: [key, {"x": key}]})) or "")
    assert Redactor(enabled=False).text(key) == key


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], dict[str, str]]:
    """The fixture store exported in every format, and then every session of it (--all)."""
    tmp = tmp_path_factory.mktemp("redact")
    store = tmp / "store.db"
    planted = make(store)
    texts: dict[str, str] = {}
    for fmt, name in (("html", "s.html"), ("md", "s.md"), ("json", "s.jsonl")):
        assert main(["--store", str(store), "export", MAIN, "--format", fmt,
                     "-o", str(tmp / name)]) == 0  # fmt: skip
        texts[fmt] = (tmp / name).read_text(encoding="utf-8")
    for fmt in ("html", "md", "json"):
        folder = tmp / f"all-{fmt}"
        assert main(["--store", str(store), "export", "--all", "--format", fmt,
                     "-o", str(folder)]) == 0  # fmt: skip
        texts[f"all-{fmt}"] = "".join(p.read_text(encoding="utf-8")
                                      for p in sorted(folder.iterdir()))  # fmt: skip
    return planted, texts


def test_every_field_held_a_secret(exported: tuple[dict[str, str], dict[str, str]]) -> None:
    planted, _ = exported
    assert all(planted.values()), planted  # each field got at least one


def test_no_secret_survives_in_any_format(
    exported: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, texts = exported
    for fmt, text in texts.items():
        for kind, secret in SECRETS:
            for form in forms(secret_part(kind, secret)):
                assert form not in text, f"{kind} survived in {fmt}: {form[:30]}…"


def test_lookalikes_survive_in_every_format(
    exported: tuple[dict[str, str], dict[str, str]],
) -> None:
    _, texts = exported
    for fmt, text in texts.items():
        for look in LOOKALIKES:
            shapes = (look, html.escape(look, quote=False), json.dumps(look)[1:-1])
            assert any(x in text for x in shapes), (fmt, look)


def test_the_export_says_what_it_redacted(
    exported: tuple[dict[str, str], dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    _, texts = exported
    end = json.loads(texts["json"].strip().split("\n")[-1])
    assert end["type"] == "end"
    counts = end["redactions"]
    kinds = {k for k, _ in SECRETS}
    assert kinds <= set(counts), kinds - set(counts)
    assert sum(counts.values()) >= len(SECRETS)
    assert "redacted" in end["note"] and "github-token" in end["note"]
    assert re.search(r"this page holds \d+ redacted secrets: ", texts["html"])
    assert re.search(r"this file holds \d+ redacted secrets: ", texts["md"])
    for kind in kinds:
        assert f"[redacted: {kind}]" in texts["json"]


def test_no_redact_keeps_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store.db"
    make(store)
    out = tmp_path / "raw.jsonl"
    assert main(["--store", str(store), "export", MAIN, "--format", "json", "--no-redact",
                 "-o", str(out)]) == 0  # fmt: skip
    text = out.read_text()
    assert SECRETS[0][1] in text and "[redacted:" not in text
    assert "not redacted" in capsys.readouterr().out
    assert AGENT in text  # the sub-agent travels with its session


def test_a_failing_redaction_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail closed: should the redactor break half-way, nothing is written that could leak."""
    store = tmp_path / "store.db"
    make(store)
    calls = [0]
    real = redact_module.redact_text

    def breaks(text: str, counts: Counter[str]) -> str:
        calls[0] += 1
        if calls[0] > 30:
            raise RuntimeError("redactor broke")
        return real(text, counts)

    monkeypatch.setattr(redact_module, "redact_text", breaks)
    for fmt, name in (("html", "x.html"), ("md", "x.md"), ("json", "x.jsonl")):
        calls[0] = 0
        source = Source(store, Redactor())
        with pytest.raises(RuntimeError):
            export_session(source, MAIN, fmt, tmp_path / name, None)
        source.close()
        assert not (tmp_path / name).exists(), fmt
