"""Export a session to share it: one self-contained HTML file (pages past a size), Markdown for
GitHub, or JSON Lines that `ctxview import` reads back; secrets redacted unless asked not to.
Export reads the store and never runs a tool; the viewer reaches it only through the command."""

from ctxview.export.run import ExportResult, export_all, export_session

__all__ = ["ExportResult", "export_all", "export_session"]
