"""What ctxview's screens and widgets ask of the app they run in: the store's reader, and the heap
of a loaded transcript kept out of the cyclic collector's reach.

`CtxviewApp` (app.py) is this app. It is a class of its own so that the screens, which the app
opens, can name their app's type (`getters.app(ReaderApp)`) without importing the app: the arrow
runs app -> screens -> reader_app, never back."""

from __future__ import annotations

import gc

from textual.app import App

from ctxview.store import Reader


class ReaderApp(App[None]):
    """A Textual app over a ctxview store: it reads the store and never writes it."""

    reader: Reader  # opened in the app's on_mount

    def keep_loaded(self) -> None:
        """What is loaded now goes out of the cyclic collector's reach: a transcript's outline
        is a heap of small objects (195,000 at 100,000 results) that each full collection
        scanned (50-290 ms pauses, in the middle of a jump). Its objects are still freed by
        their reference counts. With `release_loaded`, the one place the viewer calls `gc`."""
        gc.freeze()

    def release_loaded(self) -> None:
        """A transcript went (or its load was cancelled): what was kept may be collected."""
        gc.unfreeze()
