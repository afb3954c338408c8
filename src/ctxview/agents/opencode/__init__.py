"""OpenCode: the plugin that puts the rules inside it, its install, and its answers."""
