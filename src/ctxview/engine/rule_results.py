"""A tool's output made into the result the model is given, by the spec's rules: its id (§1),
the cap with its elision line (§3), the unchanged-read stub (§2), the same-result stub (§6),
an edit's diff (§5, src/ctxview/engine/edits.py), an error's sentence. Whatever ran the tool
(the engine, or a harness that inserts what it ran) comes here for the result."""

from __future__ import annotations

from typing import Any

from ctxview.engine import edits
from ctxview.engine.result import Result, sha256_text
from ctxview.rules import brackets
from ctxview.rules.cap import cap
from ctxview.rules.config import Config
from ctxview.rules.dedupe import DedupeTable, ReadEntry, ResultEntry, args_key
from ctxview.rules.ids import format_id
from ctxview.rules.lines import numbered
from ctxview.store.tree import IdSpace
from ctxview.store.writer import Writer
from ctxview.tools import ToolError


class RuleResults:
    """The results of one session: its ids, its dedupe table, the newest content it saw at each
    path (the session's own objects, shared)."""

    def __init__(self, writer: Writer, config: Config, ids: IdSpace, dedupe: DedupeTable,
                 known: dict[str, tuple[str, int]]) -> None:  # fmt: skip
        self.writer = writer
        self.config = config
        self.ids = ids
        self.dedupe = dedupe
        self.known = known

    def ref(self, rid: int) -> str:
        return format_id(rid, self.config["ids.digits"])

    def take_id(self) -> int:
        # Taken by this session's writer: a rewind gives back only that writer's ids.
        return self.ids.take(self.writer)

    def error(self, tool: str, err: ToolError) -> Result:
        rid = self.take_id()
        sentence = self.config.text(err.key, **err.fields)
        return Result(rid, tool, brackets.with_sentence(brackets.plain(self.ref(rid)), sentence),
                      sentence, "error")  # fmt: skip

    def generic(self, tool: str, output: str, note: str | None = None,
                 bounds: Config | None = None) -> Result:  # fmt: skip
        """§1 and §3: `[#id]`, a newline, the output, capped on the way in (by `bounds`, the
        session's config unless a host's limit fitted it)."""
        if note:
            output = f"{output}\n{note}" if output else note
        rid = self.take_id()
        ref = self.ref(rid)
        capped = cap(output, ref, bounds or self.config)
        if capped is None:
            body = output.replace("\r\n", "\n") if "\r" in output else output
            return Result(rid, tool, brackets.with_body(brackets.plain(ref), body), output, "full")
        return Result(rid, tool, brackets.with_body(brackets.plain(ref), capped.text), output,
                      "full", capped=True, elided_lines=capped.elided)  # fmt: skip

    def by_result(self, tool: str, args: dict[str, Any], output: str,
                   bounds: Config | None = None) -> Result:  # fmt: skip
        """§6: the same arguments and the same text as a result in the dedupe table: a stub."""
        key = args_key(args)
        text_sha = sha256_text(output)
        hit = self.dedupe.same_result(tool, key, text_sha)
        if hit is not None:
            rid = self.take_id()
            shown = brackets.with_sentence(
                brackets.plain(self.ref(rid)),
                self.config.text("text.same_result", ref=self.ref(hit.rid)),
            )
            return Result(rid, tool, shown, output, "same", points_to=hit.rid,
                          data={"args_key": key, "text_sha": text_sha})  # fmt: skip
        result = self.generic(tool, output, bounds=bounds)
        result.data = {"args_key": key, "text_sha": text_sha}
        self.dedupe.add_result(ResultEntry(result.rid, tool, key, text_sha))
        return result

    def read_result(self, path: str, key: str, first: int, shown_lines: list[str], total: int,
                     sha: str, *, own: bool, whole: bool = False) -> Result:  # fmt: skip
        """§1 and §2: a full read, or a stub when an earlier full read already shows the lines.
        `own`: `sha` hashes the file's bytes (else it stands in for them, and says nothing of
        the file's content). `whole`: the model got this read whole from its host, so it is
        full and kept out of the dedupe table (`Session.insert_read`)."""
        rid = self.take_id()
        ref, sha8 = self.ref(rid), sha[: self.config["sha_digits"]]
        facts: dict[str, Any] = {"path": path, "sha": sha, "line_total": total}
        data: dict[str, Any] = {"key": key}
        if own:
            data["own"] = True
            self.known[key] = (sha, rid)
        if whole:
            data["whole"] = True
        if total == 0:
            # An empty file is never a stub: its full answer is as short as one.
            if not whole:
                self.dedupe.add_read(ReadEntry(rid, key, path, 0, 0, 0, sha))
            return Result(rid, "read", brackets.read_empty(ref, path, sha8), "", "full",
                          line_from=0, line_to=0, data=data, **facts)  # fmt: skip
        last = first + len(shown_lines) - 1
        body = numbered(shown_lines, first)
        bracket = brackets.read(ref, path, first, last, total, sha8)
        hit = None if whole else self.dedupe.unchanged(key, sha, first, last)
        if hit is not None:
            sentence = self.config.text(
                "text.unchanged", ref=self.ref(hit.rid), lines=f"{hit.first}-{hit.last}"
            )
            return Result(rid, "read", brackets.with_sentence(bracket, sentence), body,
                          "unchanged", points_to=hit.rid, line_from=first, line_to=last,
                          data=data, **facts)  # fmt: skip
        if not whole:
            self.dedupe.add_read(ReadEntry(rid, key, path, first, last, total, sha))
        return Result(rid, "read", brackets.with_body(bracket, body), body, "full",
                      line_from=first, line_to=last, data=data, **facts)  # fmt: skip

    def edit_result(self, tool: str, changes: list[edits.Change], notes: list[str]) -> Result:
        result = edits.edit_result(self.take_id(), tool, changes, notes, self.config)
        edits.remember(self.known, result.data["files"], result.rid)
        return result
