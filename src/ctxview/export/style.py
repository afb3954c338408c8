"""The exported page's CSS and script: the ctxview themes' colours (light, and dark when the
reader's system asks for it), pygments' token colours for both, and a few lines of script that
only add comfort (the page reads the same with it off)."""

from __future__ import annotations

import ast
from functools import cache

from pygments.formatters import HtmlFormatter

_VARS = {
    "bg": "background", "fg": "foreground", "surface": "surface", "panel": "panel",
    "primary": "primary",
}  # fmt: skip
_CTX = ("diff-add", "diff-add-bg", "diff-remove", "diff-remove-bg", "diff-hunk", "link",
        "link-stale", "bracket", "stub", "elision", "recall", "error", "boundary",
        "boundary-bg", "user", "assistant", "tool", "dim")  # fmt: skip


@cache
def theme_values(name: str) -> tuple[dict[str, str], str]:
    """A ctxview theme's colours (Theme's fields and its variables) and its pygments style,
    read from src/ctxview/themes/<name>.py as literals: importing it would import Textual (~0.5 s), a third
    of a small export's time. Falls back to the import should the file stop being literals."""
    import importlib.util
    from pathlib import Path

    try:
        # find_spec locates the package without running its __init__ (which imports Textual).
        spec = importlib.util.find_spec("ctxview.themes")
        folders = list(spec.submodule_search_locations or []) if spec else []
        tree = ast.parse((Path(folders[0]) / f"{name}.py").read_text(encoding="utf-8"))
        values: dict[str, str] = {}
        style = ""
        for node in tree.body:
            if not isinstance(node, ast.Assign) or not isinstance(node.targets[0], ast.Name):
                continue
            if node.targets[0].id == "PYGMENTS_STYLE":
                style = ast.literal_eval(node.value)
            elif node.targets[0].id == "THEME" and isinstance(node.value, ast.Call):
                for kw in node.value.keywords:
                    value = ast.literal_eval(kw.value)
                    if kw.arg == "variables":
                        values.update(value)
                    elif isinstance(value, str) and kw.arg:
                        values[kw.arg] = value
        if style and "background" in values and "ctx-link" in values:
            return values, style
    except (OSError, SyntaxError, ValueError, IndexError):
        pass
    import importlib

    module = importlib.import_module(f"ctxview.themes.{name}")
    theme = module.THEME
    fields = {k: getattr(theme, k) for k in _VARS.values()}
    return {**fields, **theme.variables}, module.PYGMENTS_STYLE


def _theme_vars(dark: bool) -> str:
    values, _ = theme_values("dark" if dark else "light")
    out = [f"--{k}: {values[v]};" for k, v in _VARS.items()]
    out += [f"--{k}: {values[f'ctx-{k}']};" for k in _CTX]
    return " ".join(out)


def _pygments(dark: bool) -> str:
    _, style = theme_values("dark" if dark else "light")
    rules = HtmlFormatter(style=style).get_style_defs("pre.hl").splitlines()  # type: ignore[no-untyped-call]  # unhinted in types-pygments
    # Token colours only: the page's own background shows through (and a diff line's). Scoped
    # to `pre.hl`, the blocks that hold token spans: ctxview's own spans elsewhere (`.m`, `.err`)
    # share pygments' short class names.
    return "\n".join(r for r in rules if r.startswith("pre.hl .") and "background" not in r)


@cache
def css() -> str:
    return f"""
:root {{ {_theme_vars(False)} color-scheme: light dark; }}
@media (prefers-color-scheme: dark) {{ :root {{ {_theme_vars(True)} }} }}
{_pygments(False)}
@media (prefers-color-scheme: dark) {{
{_pygments(True)}
}}
* {{ box-sizing: border-box; }}
html {{ scroll-padding-top: 3em; }}
body {{ margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", sans-serif; }}
main, header.top, nav.toc, footer, nav.pages {{ max-width: 72rem; margin: 0 auto; padding: 0 1rem; }}
pre, code, .mono, .bracket, .call {{
  font-family: ui-monospace, "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", monospace;
  font-size: 13px; }}
pre {{ margin: 0; padding: .25rem .5rem; white-space: pre-wrap; overflow-wrap: anywhere;
  background: var(--surface); border-radius: 4px; }}
a {{ color: var(--link); }}
a.id {{ text-decoration: none; border-bottom: 1px dotted var(--link); }}
a.id.stale {{ color: var(--link-stale); border-bottom-style: dashed; }}
.note, .dim {{ color: var(--dim); }}
.note {{ font-style: italic; font-size: 90%; }}
header.top h1 {{ font-size: 1.4rem; margin: 1rem 0 .25rem; overflow-wrap: anywhere; }}
dl.facts {{ display: grid; grid-template-columns: max-content 1fr; gap: 0 1rem; margin: .5rem 0;
  color: var(--dim); font-size: 90%; }}
dl.facts dt {{ font-weight: 600; }} dl.facts dd {{ margin: 0; overflow-wrap: anywhere; }}
nav.toc, nav.pages {{ margin-top: .5rem; }}
nav.toc ol {{ margin: .25rem 0; padding-left: 1.5rem; }}
nav.toc li.boundary a {{ color: var(--boundary); font-weight: 600; }}
nav.pages {{ display: flex; gap: 1rem; color: var(--dim); border-bottom: 1px solid var(--panel);
  padding-bottom: .5rem; }}
section.msg {{ margin: 1rem 0; }}
.who {{ font-weight: 600; }}
.who.user {{ color: var(--user); }} .who.assistant {{ color: var(--assistant); }}
.who.system {{ color: var(--dim); }}
.usage {{ color: var(--dim); font-size: 85%; margin-left: .75rem; font-weight: 400; }}
.md {{ overflow-wrap: anywhere; }} .md p {{ margin: .3rem 0; }}
.md pre {{ margin: .3rem 0; }}
.md table {{ border-collapse: collapse; }} .md td, .md th {{ border: 1px solid var(--panel);
  padding: 0 .4rem; }}
section.msg.user > .md {{ border-left: 3px solid var(--user); padding-left: .6rem; }}
details > summary {{ cursor: pointer; color: var(--dim); }}
details.thinking {{ margin: .2rem 0; }} details.thinking .md {{ color: var(--dim); }}
section.tool {{ margin: .6rem 0; border-left: 2px solid var(--panel); padding-left: .6rem; }}
.call {{ color: var(--tool); overflow-wrap: anywhere; }} .call .tname {{ font-weight: 700; }}
.stat .add {{ color: var(--diff-add); }} .stat .rem {{ color: var(--diff-remove); }}
.bracket {{ color: var(--bracket); margin: .15rem 0; overflow-wrap: anywhere; }}
.bracket.stub {{ color: var(--stub); }} .bracket.recall {{ color: var(--recall); }}
.bracket.error {{ color: var(--error); }}
:target, .flash {{ outline: 2px solid var(--primary); outline-offset: 2px; border-radius: 3px; }}
pre .err {{ color: var(--error); }}
pre .ln {{ color: var(--dim); user-select: none; }}
pre .da, pre .dr, pre .dh {{ display: inline-block; min-width: 100%; }}
pre .da {{ background: var(--diff-add-bg); }} pre .dr {{ background: var(--diff-remove-bg); }}
pre .da > .m {{ color: var(--diff-add); }} pre .dr > .m {{ color: var(--diff-remove); }}
pre .dh {{ color: var(--diff-hunk); }} pre .df {{ color: var(--bracket); font-weight: 600; }}
details.more > summary, details.elision > summary {{ font-family: ui-monospace, monospace;
  font-size: 13px; padding: .1rem .5rem; }}
details.elision {{ background: var(--surface); }}
details.elision > summary {{ color: var(--elision); }}
details.elision > pre {{ border-left: 3px solid var(--elision); border-radius: 0; }}
.pointers {{ font-size: 85%; color: var(--dim); }}
section.boundary {{ margin: 1.5rem 0; padding: .5rem 1rem; background: var(--boundary-bg);
  border: 2px solid var(--boundary); border-radius: 6px; }}
section.boundary h2 {{ color: var(--boundary); font-size: 1.1rem; margin: 0 0 .3rem; }}
table.files {{ border-collapse: collapse; margin-top: .5rem; font-size: 13px; }}
table.files caption {{ text-align: left; font-weight: 600; color: var(--dim); }}
table.files td, table.files th {{ border: 1px solid var(--panel); padding: .1rem .5rem;
  text-align: left; }}
details.agent {{ margin: .4rem 0 .4rem .5rem; border: 1px solid var(--panel); border-radius: 6px;
  padding: .2rem .6rem; }}
details.agent > summary {{ color: var(--accent, var(--tool)); font-weight: 600; }}
.event {{ color: var(--dim); font-size: 90%; margin: .3rem 0; }}
footer {{ margin: 2rem auto; color: var(--dim); font-size: 90%; border-top: 1px solid var(--panel);
  padding-top: .5rem; }}
table.sessions {{ border-collapse: collapse; width: 100%; font-size: 14px; }}
table.sessions td, table.sessions th {{ border-bottom: 1px solid var(--panel); padding: .2rem .4rem;
  text-align: left; vertical-align: top; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
"""


# Comfort only: a link to a result inside a closed fold (a sub-agent, folded lines) opens the
# folds around it and scrolls it into view, and the target flashes.
SCRIPT = """
(function () {
  function reveal() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) return;
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
    el.scrollIntoView({block: "center"});
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1500);
  }
  window.addEventListener("hashchange", reveal);
  if (location.hash) window.addEventListener("load", reveal);
})();
"""
