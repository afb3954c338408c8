"""The viewer's screens."""
