"""A session as Markdown that reads well on GitHub: ids as `[#1005](#r-1005)` links to anchors
of the same name, results in fenced blocks with the file's language, long ones folded with
`<details>`, sub-agents folded under their call. Written as it is read."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ctxview.export.plan import EDIT_KINDS, STUB_KINDS, Plan, Space
from ctxview.export.source import Item, Source, extra
from ctxview.export.tally import MARKER, Tally
from ctxview.export.text import ANSI, ELISION, count_lines, cut, files_read_rows, language, link_ids
from ctxview.report.call_summary import args_summary, parse_args
from ctxview.store.records import Event

FOLD_AT = 30  # a result of more lines goes inside <details>
MAX_CHARS = 1_000_000  # of one result's text in the file
_FENCE_RUN = re.compile(r"`{3,}")
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")


def fence(text: str, lang: str = "") -> str:
    """A fenced block that its content cannot close (longer than any run of backticks in it)."""
    runs = [len(m.group(0)) for m in _FENCE_RUN.finditer(text)]
    ticks = "`" * max(3, max(runs, default=0) + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}\n"


def anchor(space: Space, rid: int) -> str:
    return f"r-{space.anchor(rid)}"


class MdExport:
    def __init__(self, source: Source, plan: Plan, out: Path) -> None:
        self.source = source
        self.plan = plan
        self.out = out

    # links

    def link(self, space: Space, epoch: int, rid: int, label: str) -> str:
        where = space.epoch_of.get(rid)
        # A sub-agent's or its parent's id (one id space per tree): its anchor is that session's.
        text = f"[{label}](#{anchor(space.holder(rid) or space, rid)})"
        if where is not None and where < epoch:
            text += f" *(not in context since boundary {where + 1})*"
        return text

    def linked(self, space: Space, epoch: int, text: str) -> str:
        """Prose (a message, a summary): ids linked, raw HTML neutralised outside code."""
        out = []
        in_fence = False
        for line in text.split("\n"):
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
                out.append(line)
                continue
            if in_fence or line.startswith("    "):
                out.append(line)
                continue
            out.append(self._line(space, epoch, line))
        return "\n".join(out)

    def _line(self, space: Space, epoch: int, line: str) -> str:
        parts = re.split(r"(`[^`]*`)", line)  # leave code spans as they are
        for i in range(0, len(parts), 2):
            parts[i] = link_ids(
                parts[i], lambda rid: space.holder(rid) is not None,
                lambda rid, label: self.link(space, epoch, rid, label),
                lambda s: _HTML_START.sub("&lt;", s),
            )  # fmt: skip
        return "".join(parts)

    chars = 0  # the characters written

    def run(self) -> list[Path]:
        row = self.plan.main.info.row
        self.tally = Tally(self.source.redactor.enabled)
        with open(self.out, "w", encoding="utf-8", newline="\n") as raw:
            f = _Counted(raw, self.tally)
            title = row.title or row.id
            f.write(f"# {self._one_line(title)}\n\n")
            f.write("| | |\n|---|---|\n")
            for k, v in (("session", f"`{row.id}`"), ("source", row.source),
                         ("workspace", f"`{row.workspace}`" if row.workspace else "—"),
                         ("started", _when(row.started)),
                         ("ended", _when(row.ended) if row.ended else "live"),
                         ("results", f"{row.results:,}"), ("compactions", str(row.compactions)),
                         ("saved", f"{row.chars_saved:,} characters"),
                         ("sub-agents", str(len(self.plan.spaces)))):  # fmt: skip
                f.write(f"| {k} | {self._one_line(v)} |\n")
            f.write("\n")
            if self.plan.toc:
                f.write("## Contents\n\n")
                for e in self.plan.toc:
                    target = f"b-{e.number}" if e.kind == "boundary" else f"m-{e.seq}"
                    label = f"━ {e.label}" if e.kind == "boundary" else e.label
                    f.write(f"- [{_link_text(self._one_line(label))}](#{target})\n")
                f.write("\n")
            f.write("---\n\n")
            for text in self._blocks(self.plan.main):
                f.write(text)
            for sub in self.plan.main.orphans:
                self._write_agent(f, sub)
            end = (f"\n---\n\n<a id=\"redactions\"></a>{self.tally.note()}. Exported by "
                   f"ctxview on {_when(time.time())}.\n")  # fmt: skip
            raw.write(end)
            self.chars = f.chars + len(end)
        return [self.out]

    @staticmethod
    def _one_line(text: str) -> str:
        return _HTML_START.sub("&lt;", " ".join(text.split())).replace("|", "\\|")

    def _write_agent(self, f: _Counted, sub: Space) -> None:
        for text in self._agent(sub):
            f.write(text)

    def _agent(self, sub: Space) -> Iterator[str]:
        row = sub.info.row
        back = ""
        parent = sub.parent
        if parent is not None and sub.parent_call and sub.parent_call in parent.call_rid:
            rid = parent.call_rid[sub.parent_call]
            back = f"Started by the call of {self.link(parent, 0, rid, parent.ref(rid))}.\n\n"
        yield (f'\n<details><summary>sub-agent {sub.number}: {self._one_line(row.title or row.id)}'
               f" · {row.results:,} results</summary>\n\n<a id=\"{sub.agent_anchor}\"></a>{back}")  # fmt: skip
        yield from self._blocks(sub)
        for orphan in sub.orphans:
            yield from self._agent(orphan)
        yield "\n</details>\n\n"

    def _blocks(self, space: Space) -> Iterator[str]:
        pending: list[_Pending] = []
        waiting: dict[str, _Pending] = {}
        epoch = 0
        for item in self.source.items(space.id):
            ev = item.event
            if ev.kind == "result" and ev.call_ref and ev.call_ref in waiting:
                block = waiting.pop(ev.call_ref)
                block.text = self._tool(space, block.epoch, block.call, item)
            else:
                if ev.kind == "compaction":
                    epoch += 1
                if ev.kind == "call" and ev.call_ref and ev.call_ref in space.call_rid:
                    block = _Pending(None, item, epoch)
                    waiting[ev.call_ref] = block
                    pending.append(block)
                else:
                    pending.append(_Pending(self._single(space, epoch, item), None, epoch))
            while pending and (text := pending[0].text) is not None:
                pending.pop(0)
                yield text
            if len(pending) > 2000:
                yield self._finish(space, pending.pop(0))
        for done in pending:
            yield self._finish(space, done)

    def _finish(self, space: Space, block: _Pending) -> str:
        """A block's text; a call still waiting for its result is written without one."""
        if block.text is not None:
            return block.text
        return self._tool(space, block.epoch, block.call, None)

    def _single(self, space: Space, epoch: int, item: Item) -> str:
        ev = item.event
        p = space.prefix
        if ev.kind == "message":
            x = extra(ev)
            head = f'<a id="{p}m-{ev.seq}"></a>\n**● {ev.role or "message"}**'
            out = [head + "\n\n"]
            if isinstance(x.get("thinking"), str) and x["thinking"]:
                out.append("<details><summary>✻ thinking</summary>\n\n"
                           f"{self.linked(space, epoch, x['thinking'])}\n\n</details>\n\n")  # fmt: skip
            text = ev.text or ""
            body = self.linked(space, epoch, text)
            if count_lines(text) > 80:
                body = (
                    f"<details><summary>{count_lines(text)} lines</summary>\n\n{body}\n\n</details>"
                )
            out.append(body + "\n\n")
            return "".join(out)
        if ev.kind == "compaction":
            x = extra(ev)
            out = [f'\n<a id="{p}b-{epoch}"></a>\n\n## ━━ compaction {epoch} ━━\n\n',
                   self.linked(space, epoch - 1, ev.text or ""), "\n\n"]  # fmt: skip
            rows = files_read_rows(x)
            if rows:
                out.append("**Files read before this summary**\n\n| path | lines | sha | result |\n"
                           "|---|---|---|---|\n")  # fmt: skip
                for path, span, sha, rid in rows:
                    link = ""
                    if rid is not None:
                        link = (self.link(space, epoch - 1, rid, space.ref(rid))
                                if rid in space.epoch_of else space.ref(rid))  # fmt: skip
                    out.append(f"| `{self._one_line(path)}` | {span} | `{sha}` | {link} |\n")
            out.append("\n---\n\n")
            return "".join(out)
        if ev.kind == "call":
            return self._tool(space, epoch, item, None)
        if ev.kind == "result":
            return self._tool(space, epoch, None, item)
        if ev.kind == "end":
            return "*■ the session ended*\n\n"
        return f"*‹{ev.kind}› {self._one_line(cut(ev.text or ev.tool or '', 300))}*\n\n"

    def _tool(self, space: Space, epoch: int, call: Item | None, result: Item | None) -> str:
        cev = call.event if call else None
        rev = result.event if result else None
        ev = cev or rev
        assert ev is not None
        tool = ev.tool or "tool"
        summary = args_summary(tool, parse_args(cev.args)) if cev else ""
        code = summary.replace("`", "'")
        head = f"**▸ {tool}** `{code}`" if summary else f"**▸ {tool}**"
        if rev is not None and rev.rkind in EDIT_KINDS:
            x = extra(rev)
            if isinstance(x.get("added"), int) and isinstance(x.get("removed"), int):
                head += f" +{x['added']} −{x['removed']}"
        out = [head + "\n\n"]
        if result is not None:
            out.append(self._result(space, epoch, result))
        for sub in space.by_call.get(ev.call_ref or "", []):
            out.extend(self._agent(sub))
        return "".join(out)

    def _result(self, space: Space, epoch: int, item: Item) -> str:
        ev = item.event
        shown = item.shown or ""
        bracket, _, body = shown.partition("\n")
        a = f'<a id="{anchor(space, ev.rid)}"></a>' if ev.rid is not None else ""
        line = self._line(space, epoch, bracket.replace("|", "\\|"))
        if ev.rkind in STUB_KINDS and ev.points_to is not None and ev.points_to in space.epoch_of:
            line += " stands for " + self.link(space, epoch, ev.points_to, space.ref(ev.points_to))
        out = [f"{a}{line}\n\n"]
        if not body:
            return out[0]
        if "\x1b" in body:
            body = ANSI.sub("", body)
        if len(body) > MAX_CHARS:
            body = _lines_within(body, MAX_CHARS) + (
                f"\n… (cut; `ctxview recall {space.ref(ev.rid or 0)}`)")  # fmt: skip
        lang = "diff" if ev.rkind in EDIT_KINDS else language(ev.path)
        block = fence(body, lang)
        n = count_lines(body)
        if n > FOLD_AT:
            block = f"<details><summary>{n:,} lines</summary>\n\n{block}\n</details>\n"
        out.append(block + "\n")
        middle = self._middles(item, body)
        if middle:
            out.append(middle)
        return "".join(out)

    def _middles(self, item: Item, body: str) -> str:
        if item.stored is None:
            return ""
        out = []
        stored_lines: list[str] | None = None
        for i, line in enumerate(body.split("\n")):
            m = ELISION.match(line) if line.startswith("[") else None
            if not m:
                continue
            if stored_lines is None:
                stored_lines = item.stored.split("\n")
            n = int(m.group(1))
            middle = _lines_within("\n".join(stored_lines[i : i + n]), MAX_CHARS)
            out.append(f"<details><summary>the {n:,} elided lines, from the stored text"
                       f"</summary>\n\n{fence(middle)}\n</details>\n\n")  # fmt: skip
        return "".join(out)


@dataclass(slots=True)
class _Pending:
    """A block in the order it is written: its text once known, else the call waiting for its
    result."""

    text: str | None
    call: Item | None
    epoch: int


class _Counted:
    """A file that counts the redaction markers of what is written to it."""

    def __init__(self, f: IO[str], tally: Tally) -> None:
        self.f = f
        self.tally = tally
        self.chars = 0

    def write(self, text: str) -> int:
        self.chars += len(text)
        return self.f.write(self.tally.add(text))


def _link_text(label: str) -> str:
    """A link's text with its brackets escaped, a redaction marker's kept (balanced brackets
    are allowed in a link's text, and an escaped marker is no longer one)."""
    parts = MARKER.split(label)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"[redacted: {part}]")
        else:
            out.append(part.replace("[", "\\[").replace("]", "\\]"))
    return "".join(out)


def _lines_within(text: str, limit: int) -> str:
    """`text` up to `limit` characters, cut at a line's end (a marker never spans lines)."""
    if len(text) <= limit:
        return text
    at = text.rfind("\n", 0, limit)
    return text[: at if at > 0 else limit]


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts)) if ts else "—"


__all__ = ["Event", "MdExport", "fence"]
