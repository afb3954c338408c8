"""Textual's web driver for a tab of `ctxview serve` (or any textual-serve), which ends when its
server has gone.

A tab's app reads its input from the server through stdin. Textual's driver only stops reading
at the end of that stream, so a tab whose server was killed (or crashed, or was stopped before
it had told each tab to quit) went on running, with the store open, for ever. The end of stdin
that nobody asked for means the server is gone: the app exits.
"""

from __future__ import annotations

from textual import messages
from textual.drivers.web_driver import WebDriver


class ServedDriver(WebDriver):
    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # set by stop_application_mode: an exit we asked for
            self._app.post_message(messages.ExitApp())
