"""The Textual viewer of a ctxview store."""

from ctxview.viewer.render.cells import measure_like_terminals

# Before anything is measured: rows are wrapped to the widths the terminal will draw.
measure_like_terminals()
