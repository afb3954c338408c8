"""A readable form for each common tool call, instead of one line of JSON cut with "…".

Task/Agent: the description, the prompt folded as Markdown; TodoWrite: a checklist;
ExitPlanMode: the plan as Markdown; AskUserQuestion: the questions and their options;
WebFetch/WebSearch: the URL or the query; Write: the file, coloured by its language, folded;
a multi-line command: folded under its first line; anything else: its arguments on one line when
they fit, else indented JSON, folded. Pure: arguments in, rich Texts out."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.style import Style
from rich.text import Text

from ctxview.viewer.render.colours import Palette
from ctxview.viewer.render.highlight import highlight_code, highlight_lines
from ctxview.viewer.render.markdown import render_markdown

INLINE_JSON = 100  # arguments this short stay on the call's line
PLAN_FOLD = 20  # lines of a plan shown before its fold


@dataclass
class CallForm:
    summary: str | None = None  # the call's line after the tool's name; None: the default
    lines: list[Text] = field(default_factory=list)  # always shown (a checklist, a question)
    detail: list[Text] = field(default_factory=list)  # folded until opened (t)
    detail_name: str = ""  # what the detail is: "prompt", "content", "input"
    detail_fold: int = 0  # lines of the detail shown while folded


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def call_form(tool: str, args: dict[str, Any], palette: Palette, width: int) -> CallForm | None:
    """The form of a call, or None when the one-line summary says it all (read, grep, …)."""
    name = tool.lower()
    p = palette
    if name in ("task", "agent"):
        what = _str(args.get("description")) or "sub-agent"
        kind = _str(args.get("subagent_type"))
        who = _str(args.get("name"))
        summary = what + "".join(f" · {x}" for x in (kind, who) if x)
        prompt = _str(args.get("prompt"))
        return CallForm(summary, detail=render_markdown(prompt, p, width) if prompt else [],
                        detail_name="prompt")  # fmt: skip
    if name == "todowrite":
        todos = args.get("todos")
        if not isinstance(todos, list):
            return None
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        return CallForm(f"{done} of {len(todos)} done", lines=_checklist(todos, p))
    if name == "exitplanmode":
        plan = _str(args.get("plan"))
        return CallForm("the plan", detail=render_markdown(plan, p, width), detail_name="plan",
                        detail_fold=PLAN_FOLD)  # fmt: skip
    if name == "askuserquestion":
        return CallForm("", lines=_questions(args, p, width))
    if name == "webfetch":
        prompt = _str(args.get("prompt"))
        asked = [Text(f"  {prompt}", p.dim, end="")] if prompt else []
        return CallForm(_str(args.get("url")), lines=asked)
    if name == "websearch":
        summary = _str(args.get("query"))
        domains = args.get("allowed_domains")
        if isinstance(domains, list) and domains:
            summary += "  (on " + ", ".join(map(str, domains)) + ")"
        return CallForm(summary)
    if name == "write":
        path = _str(args.get("file_path") or args.get("path"))
        content = _str(args.get("content"))
        lines = content.split("\n")
        if content.endswith("\n"):
            lines.pop()
        coloured = highlight_lines(lines, path, p.pygments) or [Text(x, end="") for x in lines]
        return CallForm(f"{path}  ({len(lines):,} lines)", detail=coloured, detail_name="content")
    if name in ("bash", "exec_command", "shell"):
        command = _str(args.get("command") or args.get("cmd"))
        if "\n" not in command:
            return None
        lines = command.split("\n")
        coloured = highlight_code(lines, "bash", p.pygments) or [Text(x, end="") for x in lines]
        return CallForm(lines[0], detail=coloured, detail_name="command")
    if name in _SUMMARISED:
        return None
    compact = json.dumps(args, ensure_ascii=False, sort_keys=True)
    if len(compact) <= INLINE_JSON and "\\n" not in compact:
        return CallForm(compact)  # read whole (the shared one-line summary picks one argument)
    pretty = json.dumps(args, ensure_ascii=False, indent=2, sort_keys=True).split("\n")
    coloured = highlight_code(pretty, "json", p.pygments) or [Text(x, end="") for x in pretty]
    return CallForm(_short(args), detail=coloured, detail_name="input")


# The engine's own tools and their Claude Code names: their one-line summary is their form.
_SUMMARISED = frozenset({"read", "edit", "multiedit", "apply_patch", "recall", "grep", "glob",
                         "list", "search", "ls", "notebookedit"})  # fmt: skip


def _short(args: dict[str, Any]) -> str:
    """`key: value` pairs, each value's first line cut short: enough to recognise the call."""
    parts = []
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        first = text.split("\n", 1)[0]
        if len(first) > 40 or "\n" in text:
            first = first[:40] + "…"
        parts.append(f"{key}: {first}")
    out = ", ".join(parts)
    return out if len(out) <= 160 else out[:159] + "…"


def _checklist(todos: list[Any], p: Palette) -> list[Text]:
    out = []
    for todo in todos:
        if not isinstance(todo, dict):
            continue
        status = todo.get("status")
        text = _str(todo.get("content") or todo.get("subject") or todo.get("activeForm"))
        if status == "completed":
            line = Text("  ☑ ", p.add, end="")
            line.append(text, p.dim + Style(strike=True))
        elif status == "in_progress":
            line = Text("  ◐ ", p.assistant, end="")
            line.append(text, Style(bold=True))
        else:
            line = Text("  ☐ ", p.dim, end="")
            line.append(text)
        out.append(line)
    return out


def _questions(args: dict[str, Any], p: Palette, width: int) -> list[Text]:
    questions = args.get("questions")
    if not isinstance(questions, list):  # the older form: one question as Markdown
        text = _str(args.get("question"))
        return [Text("  ", end="") + line for line in render_markdown(text, p, width - 2)]
    out: list[Text] = []
    for q in questions:
        if not isinstance(q, dict):
            continue
        head = Text("  ? ", p.assistant, end="")
        if q.get("header"):
            head.append(f"{_str(q.get('header'))}: ", p.dim)
        head.append(_str(q.get("question")), Style(bold=True))
        if q.get("multiSelect"):
            head.append("  (any of)", p.dim)
        out.append(head)
        for option in q.get("options") or []:
            if isinstance(option, dict):
                line = Text("    ○ ", p.dim, end="")
                line.append(_str(option.get("label")))
                if option.get("description"):
                    line.append(f" — {_str(option.get('description'))}", p.dim)
            else:
                line = Text(f"    ○ {option}", end="")
            out.append(line)
    return out
