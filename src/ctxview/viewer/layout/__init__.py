"""The transcript's layout model: the outline of blocks and their heights, no rendering."""
