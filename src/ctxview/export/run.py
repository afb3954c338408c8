"""One export from start to end: plan, write, count what was redacted; on any failure the
files written so far are removed (an export never leaves a half-redacted file behind)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ctxview.export import fit as summary
from ctxview.export import html, jsonl, markdown
from ctxview.export.plan import SPLIT_BYTES, build
from ctxview.export.redact import Redactor
from ctxview.export.source import Source
from ctxview.export.tally import Tally
from ctxview.store.records import SessionRow

EXTENSIONS = {"html": "html", "md": "md", "json": "jsonl"}
DEFAULT_PAGE_MB = 10.0


@dataclass
class ExportResult:
    files: list[Path] = field(default_factory=list)
    sessions: int = 0
    pages: int = 1
    sizes: list[int] = field(default_factory=list)
    held: Tally = field(default_factory=Tally)  # the redaction markers of every file written
    chars: int = 0  # Markdown: the characters written (GitHub counts characters)


def safe_name(session_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", session_id)[:120] or "session"


def default_output(session_id: str, fmt: str) -> Path:
    return Path(f"{safe_name(session_id)}.{EXTENSIONS[fmt]}")


def export_session(source: Source, session_id: str, fmt: str, out: Path,
                   page_bytes: int | None, workers: int = 1,
                   fit: int | None = None) -> ExportResult:  # fmt: skip
    """One session (and its sub-agents) to `out`; `workers` 2: HTML's blocks made in two
    processes (a command's choice: a process with threads, such as the viewer, must not fork);
    `fit`: Markdown, a summary in fewer characters than that (fit.py). Each file says what
    redactions it holds; the result, what they all hold."""
    enabled = source.redactor.enabled
    info = source.tree(session_id)
    written: list[Path] = []
    try:
        if fmt == "json":
            tally = Tally(enabled)
            written = jsonl.write(source, info, out, tally)
            return ExportResult(written, 1, 1, [out.stat().st_size], tally)
        split_at = None
        if fmt == "html" and workers > 1:
            split_at = min(4 * page_bytes, SPLIT_BYTES) if page_bytes else SPLIT_BYTES
        plan = build(source, info, split_at)
        if fmt == "md" and fit is not None:
            written, tally = summary.write(source, plan, out, fit)
            chars = len(out.read_text(encoding="utf-8"))
            return ExportResult(written, 1, 1, [out.stat().st_size], tally, chars)
        if fmt == "md":
            md = markdown.MdExport(source, plan, out)
            written = md.run()
            return ExportResult(written, 1, 1, [out.stat().st_size], md.tally, md.chars)
        writer = html.HtmlExport(source, plan, out, page_bytes)
        try:
            writer.run(workers)
        finally:
            written = writer.files
        pages = max(1, len(written) - (len(written) > 1))
        return ExportResult(written, 1, pages, [p.stat().st_size for p in written], writer.held)
    except BaseException:
        for p in written or _guess(out):
            p.unlink(missing_ok=True)
        raise


def _guess(out: Path) -> list[Path]:
    stem = out.name[:-5] if out.name.endswith(".html") else out.name
    return [out, *out.parent.glob(f"{stem}.p[0-9][0-9][0-9].html")]


def export_all(source: Source, fmt: str, folder: Path, page_bytes: int | None,
               fit: int | None = None) -> ExportResult:  # fmt: skip
    """Every top-level session (sub-agents go inside theirs) and an index of them; each file
    says what it holds, the index too."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = source.sessions()
    ids = {r.id for r in rows}
    top = [r for r in rows if not r.parent_session or r.parent_session not in ids]
    result = ExportResult(held=Tally(source.redactor.enabled))
    listed: list[tuple[SessionRow, str, int]] = []  # (session, its file, its sub-agents)
    for row in top:
        name = f"{safe_name(row.id)}.{EXTENSIONS[fmt]}"
        one = export_session(source, row.id, fmt, folder / name, page_bytes, fit=fit)
        result.files.extend(one.files)
        result.sizes.extend(one.sizes)
        result.held.update(one.held)
        result.sessions += 1
        agents = sum(1 for r in rows if r.parent_session == row.id)
        listed.append((row, name, agents))
    index = folder / f"index.{'json' if fmt == 'json' else fmt}"
    tally = Tally(source.redactor.enabled)
    if fmt == "html":
        html.session_index(index, listed, tally)
    elif fmt == "md":
        _md_index(index, listed, tally)
    else:
        import json

        sessions = [{**jsonl.session_record(r), "file": n} for r, n, _ in listed]
        tally.add(json.dumps(sessions, ensure_ascii=False))
        index.write_text(json.dumps(
            {"format": jsonl.FORMAT, "version": jsonl.VERSION, "sessions": sessions,
             "redactions": dict(tally.counts), "note": tally.note()},
            ensure_ascii=False, indent=1))  # fmt: skip
    result.held.update(tally)
    result.files.insert(0, index)
    result.sizes.insert(0, index.stat().st_size)
    return result


def _md_index(path: Path, listed: list[tuple[SessionRow, str, int]], tally: Tally) -> None:
    lines = ["# Sessions\n",
             "| session | started | state | results | saved | title | source | workspace |",
             "|---|---|---|---:|---:|---|---|---|"]  # fmt: skip
    for row, name, _ in listed:
        state, source = html.list_facts(row)
        title, source, workspace = (
            " ".join(t.split()).replace("|", "\\|").replace("<", "&lt;")
            for t in (row.title, source, row.workspace))  # fmt: skip
        lines.append(f"| [`{row.id}`]({name}) | {markdown._when(row.started)} | {state} | "
                     f"{row.results:,} | {row.chars_saved:,} | {title} | {source} | "
                     f"{workspace or '—'} |")  # fmt: skip
    for line in lines:
        tally.add(line)
    lines.append(f"\n{tally.note()}.\n")
    path.write_text("\n".join(lines), encoding="utf-8")


__all__ = ["DEFAULT_PAGE_MB", "ExportResult", "Redactor", "Tally", "export_all", "export_session"]
