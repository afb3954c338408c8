"""The demo: a scripted agent session run through the engine over a small sample project.

The story: a customer reports that the cart total is wrong with a discount code. The agent looks
around, runs the tests (1,500 lines of output, capped), recalls the elided failures, re-reads
and re-greps (stubs), fixes the bug with edits and a multi-file patch, the context is compacted,
and after the summary it does one more small change. Every tool call is a real engine call over a
real copy of `demo_project/`, so each rule of the spec shows up in the store as it would live.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ctxview.engine.session import Session
from ctxview.store import Writer

PROJECT_NAME = "tinyshop"
TITLE = "Fix: cart total wrong with a discount code"
DEFAULT_PACE = 1.0


def project_source() -> Path:
    """The sample project shipped as package data."""
    return Path(str(resources.files("ctxview.demo") / "project"))


def copy_project(dest_parent: Path) -> Path:
    """A fresh copy of the sample project to work on (the engine edits it)."""
    dest = dest_parent / PROJECT_NAME
    shutil.copytree(project_source(), dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@dataclass
class DemoRun:
    """An opened demo: the store and session exist, the script has not run yet."""

    store: Path
    workspace: Path
    writer: Writer
    session: Session
    children: list[Session] = field(default_factory=list)
    done: bool = False

    @property
    def session_id(self) -> str:
        return self.session.id

    async def close(self) -> None:
        """End what is still live (the viewer was closed mid-story) and close the writer."""
        try:
            for s in [*self.children, self.session]:
                info = await self.writer.session_info(s.id)
                if info is not None and info.get("ended") is None:
                    await s.end()
        finally:  # a store kept locked fails the end: the writer still closes, the process exits
            await self.writer.close()


def temp_store() -> Path:
    """A store in a fresh temporary folder; the folder holds nothing else, so the viewer's
    watcher on it hears only the store."""
    root = Path(tempfile.mkdtemp(prefix="ctxview-demo-"))
    (root / "store").mkdir(mode=0o700)
    return root / "store" / "store.db"


async def open_demo(store: Path | None = None, workspace_root: Path | None = None) -> DemoRun:
    """Create (or open) the store, copy the project (into a new folder in `workspace_root`, the
    system's temporary folder by default), start the session."""
    # Its folders are made by the writer's open, 0700 (store/paths.py): made here first with the
    # umask's mode, ctxview's own folder was then "tightened", warning about a folder it had
    # just made itself.
    store = Path(store) if store is not None else temp_store()
    workspace = copy_project(Path(tempfile.mkdtemp(prefix="ctxview-demo-workspace-",
                                                   dir=workspace_root)))  # fmt: skip
    try:
        writer = await Writer.open(store)
    except BaseException:
        shutil.rmtree(workspace.parent, ignore_errors=True)
        raise
    try:
        session = await Session.start(writer, workspace, title=TITLE, source="demo")
    except BaseException:  # (a store kept locked): no connection left open, no folder left
        await writer.close()
        shutil.rmtree(workspace.parent, ignore_errors=True)
        raise
    return DemoRun(store, workspace, writer, session)


class _Script:
    """The steps, with a pause before each; tracks a plausible token count for usage data."""

    def __init__(self, run: DemoRun, pace: float) -> None:
        self.run = run
        self.pace = max(0.0, pace)
        self.context_chars = 0

    async def pause(self, weight: float = 1.0) -> None:
        # pace 0 still yields, so the viewer in the same process keeps drawing.
        await asyncio.sleep(self.pace * weight)

    def ref(self, session: Session | None = None) -> str:
        s = session or self.run.session
        assert s.last is not None
        return s.ref(s.last.rid)

    async def user(self, text: str) -> None:
        await self.pause(1.5)
        self.context_chars += len(text)
        await self.run.session.message("user", text)

    async def say(self, text: str, thinking: str | None = None, *,
                  session: Session | None = None) -> None:  # fmt: skip
        await self.pause(1.2)
        data = {"thinking": thinking} if thinking else None
        usage = self._usage(text)
        self.context_chars += len(text)
        await (session or self.run.session).message("assistant", text, data=data, usage=usage)

    async def tool(self, name: str, args: dict[str, Any], *,
                   session: Session | None = None) -> str:  # fmt: skip
        await self.pause()
        shown = await (session or self.run.session).run(name, args)
        self.context_chars += len(shown)
        return shown

    def _usage(self, text: str) -> dict[str, int]:
        # Four characters a token is the usual rough rule; the cache holds what came before,
        # after a system prompt and tool definitions of some 9,000 tokens.
        context = 9_000 + self.context_chars // 4
        return {
            "input_tokens": 40 + len(text) // 40,
            "output_tokens": max(1, len(text) // 4),
            "cache_read_tokens": int(context * 0.9),
            "cache_write_tokens": context - int(context * 0.9),
        }


FIX_OLD = "        return subtotal - FIXED_CODES[code]\n"
FIX_NEW = "        return max(0.0, subtotal - FIXED_CODES[code])\n"

PATCH = """*** Begin Patch
*** Update File: tests/test_pricing.py
@@ def test_total(price, qty, code):
     assert cart.total() == expected_total(price, qty, code), (
         f"expected {expected_total(price, qty, code):.2f}, got {cart.total():.2f}"
     )
+
+
+def test_fiveoff_stops_at_the_subtotal():
+    cart = Cart(code="FIVEOFF")
+    cart.add("sticker", 0.99)
+    assert cart.total() == 4.99  # the sticker is free; shipping is not
*** Update File: shop/__init__.py
@@
 \"\"\"tinyshop: a cart, discount codes, tax, shipping and a receipt.\"\"\"
\x20
-__version__ = "0.3.0"
+__version__ = "0.3.1"
*** Add File: CHANGELOG.md
+# Changelog
+
+## 0.3.1
+
+- FIVEOFF on an order under $5 no longer takes more off than the order is worth: the
+  discount stops at the subtotal, and shipping is charged in full.
*** End Patch
"""

SUMMARY = """The user reported wrong cart totals with discount codes in tinyshop.

- Ran the tests: 11 of 1,505 cases failed, all FIVEOFF orders under $5: `apply_discount`
  subtracted $5 without a floor, so the discounted subtotal went negative.
- Fixed `apply_discount` in shop/pricing.py (`max(0.0, subtotal - 5.00)`), renamed the
  variables in `Cart.total` for clarity, added a regression test, a CHANGELOG entry and
  bumped the version to 0.3.1.
- All 1,506 cases pass now (`python3 -B run_tests.py`)."""

RECEIPT_OLD = '        lines.append(f"Code {cart.code}")\n'
RECEIPT_NEW = """        saved = cart.subtotal() - round(apply_discount(cart.subtotal(), cart.code), 2)
        lines.append(f"{'Code ' + cart.code:<24} {-saved:>8.2f}" if saved else f"Code {cart.code}")
"""

RECEIPT_TEST = """from shop.cart import Cart
from shop.receipt import receipt


def test_receipt_shows_what_the_code_saved():
    cart = Cart(code="SAVE25")
    cart.add("mug", 8.00, qty=2)
    assert "Code SAVE25" in receipt(cart)
    assert "-4.00" in receipt(cart)


def test_receipt_without_a_saving_shows_the_code_only():
    cart = Cart(code="FREESHIP")
    cart.add("mug", 8.00)
    assert "Code FREESHIP" in receipt(cart).splitlines()
"""


async def play(run: DemoRun, pace: float = DEFAULT_PACE) -> None:
    """Run the whole story through the engine, pausing `pace` seconds between steps."""
    s = _Script(run, pace)
    tests_v = {"command": "python3 -B run_tests.py -v"}
    tests_q = {"command": "python3 -B run_tests.py"}
    grep_fiveoff = {"pattern": "FIVEOFF", "path": "."}

    await s.user(
        "A customer says the cart total is wrong with a discount code: FIVEOFF on a $0.99 "
        "sticker came to $0.66, less than the shipping alone. Can you find out why and fix "
        "it? The tests run with `python3 run_tests.py`."
    )
    await s.say(
        "I'll start with the layout of the project and its README.",
        thinking="Less than shipping smells like a fixed discount with no floor. Check pricing.",
    )
    await s.tool("list", {"path": "."})
    await s.tool("read", {"path": "README.md"})
    await s.say("Discount codes live in pricing; the total is worked out in the cart.")
    await s.tool("read", {"path": "shop/cart.py"})
    await s.tool("read", {"path": "shop/pricing.py"})
    await s.tool("grep", grep_fiveoff)
    grep_ref = s.ref()

    await s.say("Let me run the tests verbosely to see which cases fail.")
    await s.tool("bash", tests_v)
    run_ref = s.ref()
    await s.say(
        f"The run {run_ref} printed about 1,500 lines and was capped: the summary says 11 "
        "cases failed, but the failing lines are in the elided middle. I'll recall that part."
    )
    await s.tool("recall", {"id": run_ref, "offset": 900, "limit": 40})
    await s.say(
        "Every failure is a FIVEOFF order under $5: `expected 4.99, got 0.66` and the like. "
        "The code takes $5 off a $0.99 subtotal, so the discounted subtotal goes negative and "
        "eats into the shipping. I'll hand the search for other uses of the code to a "
        "sub-agent."
    )

    await _sub_agent(s, grep_fiveoff)

    await s.say("Let me look at `apply_discount` once more before I change it.")
    await s.tool("read", {"path": "shop/pricing.py"})
    await s.say(f"And check again that pricing.py is the only place ({grep_ref}) using FIVEOFF.")
    await s.tool("grep", grep_fiveoff)
    await s.say("Same as before. The fix: the fixed discount must stop at zero.")
    await s.tool(
        "edit",
        {"path": "shop/pricing.py", "old_string": FIX_OLD.replace(" - ", "-"),
         "new_string": FIX_NEW},
    )  # fmt: skip
    await s.say("The spacing was off in my old_string; again with the exact line.")
    await s.tool("edit", {"path": "shop/pricing.py", "old_string": FIX_OLD, "new_string": FIX_NEW})
    await s.say("While I'm here, `amt` in `Cart.total` means three different things; naming them.")
    await s.tool(
        "multiedit",
        {
            "path": "shop/cart.py",
            "edits": [
                {
                    "old_string": "        amt = round(apply_discount(self.subtotal(), "
                    "self.code), 2)\n        amt = round(amt + tax(amt), 2)\n",
                    "new_string": "        discounted = round(apply_discount(self.subtotal(), "
                    "self.code), 2)\n        taxed = round(discounted + tax(discounted), 2)\n",
                },
                {
                    "old_string": "return round(amt + shipping(amt, self.code), 2)",
                    "new_string": "return round(taxed + shipping(taxed, self.code), 2)",
                },
            ],
        },
    )
    await s.say("A regression test, a CHANGELOG entry and the version, in one patch.")
    await s.tool("apply_patch", {"patch": PATCH})
    await s.say("Now the whole suite, quietly this time.")
    await s.tool("bash", tests_q)
    await s.say(
        "All cases pass, the new regression test too. FIVEOFF on a $0.99 sticker now costs "
        "$4.99 (shipping only) instead of a negative amount."
    )
    await s.user("Great, thanks. The context is getting long; summarise and carry on.")
    await s.pause(1.5)
    await run.session.compact(SUMMARY)
    s.context_chars = len(SUMMARY)

    await s.user(
        "One more thing: the receipt only names the discount code. Could it also show how "
        "much the code saved?"
    )
    await s.say(
        f"The test run before the summary ({run_ref}) is no longer in my context, but I only "
        "need the receipt and the cart. Reading them again."
    )
    await s.tool("read", {"path": "shop/receipt.py"})
    await s.tool("read", {"path": "shop/cart.py", "offset": 20, "limit": 10})
    await s.tool(
        "edit",
        {"path": "shop/receipt.py", "old_string": "from .cart import Cart\n",
         "new_string": "from .cart import Cart\nfrom .pricing import apply_discount\n"},
    )  # fmt: skip
    await s.tool(
        "edit", {"path": "shop/receipt.py", "old_string": RECEIPT_OLD, "new_string": RECEIPT_NEW}
    )
    await s.say("And a test for it.")
    await s.tool("write", {"path": "tests/test_receipt_savings.py", "content": RECEIPT_TEST})
    await s.tool("bash", tests_q)
    await s.say(
        "Done: the receipt now shows the saving next to the code (`Code SAVE25  -4.00`), a "
        "code that saves nothing (FREESHIP) is shown as before, and all tests pass."
    )
    await s.pause()
    await run.session.end()
    run.done = True


async def _sub_agent(s: _Script, grep_args: dict[str, Any]) -> None:
    """A sub-agent session under the main one: its own results, its answer a `task` result."""
    run = s.run
    call_ref = "task-1"
    child = await Session.start(
        run.writer, run.workspace, title="sub-agent: where is FIVEOFF handled?",
        source="demo", parent_session=run.session.id, parent_call=call_ref,
    )  # fmt: skip
    run.children.append(child)
    await s.pause()
    await child.message("user", "Find every place the FIVEOFF discount code is handled.")
    await s.tool("grep", grep_args, session=child)
    await s.tool("grep", {"pattern": "apply_discount", "path": "."}, session=child)
    await s.tool("read", {"path": "shop/pricing.py", "offset": 11, "limit": 8}, session=child)
    answer = (
        "FIVEOFF is defined once, in FIXED_CODES in shop/pricing.py, and only `apply_discount` "
        "uses it (`return subtotal - FIXED_CODES[code]`, no floor). `Cart.total` in shop/cart.py "
        "is the only caller. The tests name it in tests/test_pricing.py."
    )
    await s.say(answer, session=child)
    await child.end()
    await run.session.insert(
        "task", {"description": "Where is FIVEOFF handled?", "subagent": child.id}, answer,
        call_ref=call_ref,
    )  # fmt: skip


async def run_demo(
    store: Path | None = None,
    pace: float = DEFAULT_PACE,
    on_open: Callable[[DemoRun], Awaitable[None] | None] | None = None,
    workspace_root: Path | None = None,
) -> DemoRun:
    """Open the demo, tell `on_open`, play it to the end and close it (for --no-view)."""
    run = await open_demo(store, workspace_root)
    try:
        if on_open is not None:
            maybe = on_open(run)
            if maybe is not None:
                await maybe
        await play(run, pace)
    finally:
        await run.close()
    return run
