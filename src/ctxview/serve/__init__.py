"""Serving the viewer in a browser: the guard in front of textual-serve and the page it serves."""
