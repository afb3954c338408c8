"""Turning a session's events into blocks and blocks into lines of styled text."""
