"""The base of ctxview's screens: a screen's work stops first when it goes, however it goes.

Textual takes a screen down children first: its message loop ends, its children are pruned, and
only then does its Unmount cancel its workers. A worker that woke in between and looked for a
child (the status line, the list's table) raised NoMatches and stopped the app. Every way a
screen goes (popped, switched away, dismissed, removed, its mode removed, the app exiting) starts
with a Prune message to it, so its workers and its widgets' are cancelled there, and none starts
after (a handler still queued behind the Prune, a cancelled worker's `finally`)."""

from __future__ import annotations

import inspect
from typing import Any, TypeVar

from textual import getters, on
from textual.messages import Prune
from textual.screen import Screen
from textual.worker import Worker

from ctxview.viewer.reader_app import ReaderApp

ResultT = TypeVar("ResultT")


class CtxviewScreen(Screen[ResultT]):
    """A screen whose work stops at the start of its teardown."""

    app = getters.app(ReaderApp)  # typed: ctxview's app, its reader
    _leaving = False

    @on(Prune)
    def _stop_work(self) -> None:
        """Before Textual's own handler closes the queue and the children go."""
        self._leaving = True
        for node in (self, *self.walk_children()):
            self.workers.cancel_node(node)

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Worker[Any]:
        worker = super().run_worker(work, *args, **kwargs)
        if self._leaving:
            worker.cancel()  # cancelled before its first step: none of it runs
            if inspect.iscoroutine(work):
                work.close()  # never to be awaited now (else Python warns at its collection)
        return worker
