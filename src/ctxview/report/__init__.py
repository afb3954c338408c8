"""What the viewer, the exports and the CLI show alike: hygiene's savings and a call on one line."""
