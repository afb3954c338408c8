"""A secret broken over two lines or cut short is still redacted, in every field and every
format: every planted secret (a kind each) wrapped onto the next line at every position of it
and, when its prefix is known, cut short to every length from 12 characters, in each field an
export writes; then no 12 characters of any secret are left in the HTML (one page and paged),
the Markdown or the JSON, as written or with the whitespace taken out (a wrap, or Markdown's
title on one line, could hide what is left)."""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from export_fixture import FIELDS, MAIN, ROW, build_fields
from export_secrets import LEAD, SECRETS, fragments, plantings

from ctxview.cli import main
from ctxview.export.redact import redact_text

FRAGMENTS = {f: kind for kind, text in SECRETS for f in fragments(kind, text)}


def leaks(text: str) -> list[tuple[str, str]]:
    """(kind, fragment) for each 12 characters of a secret found in `text`."""
    found = []
    for run in re.findall(r"\S{12,}", text):
        for i in range(len(run) - 11):
            kind = FRAGMENTS.get(run[i : i + 12])
            if kind:
                found.append((kind, run[i : i + 12]))
    return found


def views(fmt: str, text: str) -> list[str]:
    """The file as written and what it says with its whitespace taken out: HTML's text
    (tags out, entities read), JSON's strings."""
    if fmt == "json":
        strings: list[str] = []

        def walk(v: object) -> None:
            if isinstance(v, str):
                strings.append(v)
            elif isinstance(v, dict):
                for k, x in v.items():
                    strings.append(k)
                    walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        for line in text.splitlines():
            walk(json.loads(line))
        said = "\n".join(strings)
    elif fmt == "html":
        said = html.unescape(re.sub(r"<[^>]+>", "", text))
    else:
        said = text
    return [text, re.sub(r"\s+", "", said)]


def test_each_planting_is_redacted_alone() -> None:
    """The redactor itself, a planting at a time: what it leaves holds no 12 characters of the
    secret (with the line breaks taken out too)."""
    left = []
    for kind, text in SECRETS:
        frags = fragments(kind, text)
        for planted in plantings(kind, text):
            out = redact_text(planted, Counter())
            flat = re.sub(r"\s+", "", out)
            if any(f in out or f in flat for f in frags):
                left.append((kind, planted[len(LEAD) :], out[len(LEAD) :]))
    assert not left, f"{len(left)} left, e.g. {left[:5]}"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    tmp = tmp_path_factory.mktemp("wrapped")
    lines = [p for kind, text in SECRETS for p in plantings(kind, text)]
    store = tmp / "store.db"
    texts = {f: (ROW if f == "table" else "\n").join(f"{f}: {p}" for p in lines) for f in FIELDS}
    asyncio.run(build_fields(store, texts))
    out: dict[str, list[Path]] = {}
    for fmt, name, extra in (("html", "s.html", []), ("md", "s.md", []), ("json", "s.jsonl", []),
                             ("html", "paged/s.html", ["--page-mb", "0.5"])):  # fmt: skip
        target = tmp / name
        target.parent.mkdir(exist_ok=True)
        assert main(["--store", str(store), "export", MAIN, "--format", fmt, "-o", str(target),
                     *extra]) == 0  # fmt: skip
        out[name] = sorted(target.parent.glob("s*.html")) if extra else [target]
    return out


@pytest.mark.parametrize("name", ["s.html", "s.md", "s.jsonl", "paged/s.html"])
def test_no_fragment_survives(written: dict[str, list[Path]], name: str) -> None:
    fmt = {"html": "html", "md": "md", "jsonl": "json"}[name.rsplit(".", 1)[1]]
    files = written[name]
    assert files and (name != "paged/s.html" or len(files) > 2), files
    found: Counter[str] = Counter()
    example: dict[str, str] = {}
    for path in files:
        for view in views(fmt, path.read_text(encoding="utf-8")):
            for kind, frag in leaks(view):
                found[kind] += 1
                example.setdefault(kind, frag)
    assert not found, f"{name}: fragments left {dict(found)}, e.g. {example}"


def test_the_fields_held_the_plantings(written: dict[str, list[Path]]) -> None:
    """The export wrote every field (each redacted): its name leads each planting's line."""
    text = written["s.jsonl"][0].read_text(encoding="utf-8")
    for f in FIELDS:
        assert f"{f}: {LEAD}" in text, f
    assert "[redacted: github-token]" in text
