"""The demo: a scripted agent session over a small sample project, played into a store."""
