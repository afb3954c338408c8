"""ctxview inside pi (`@mariozechner/pi-coding-agent`): an extension (`extension.ts`, written by
`ctxview install pi`) hands each built-in tool's result to the resident engine, whose pi
handler (`engine.py`) answers the 3.0.0 text in pi's own result form."""
