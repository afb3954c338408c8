"""ctxview inside real agents: Claude Code through hooks, any MCP host through `ctxview mcp`.

The contract between the hooks (src/ctxview/agents/claude_code/hooks.py, `ctxview hook EVENT`) and the
MCP server (src/ctxview/agents/mcp/server.py, `ctxview mcp`), so both write one session:

- A hooked Claude Code session is the store session `cc-<session_id>` (Claude Code's own
  `session_id`, as the importer names it), source `"claude-code"` (`importers.detect.CLAUDE`, the
  name the store already uses for Claude Code), workspace = the hook's `cwd` resolved
  (`Path(cwd).resolve()`), `source_path` = the hook's `transcript_path` resolved, so that
  `ctxview import` / `follow` of that transcript lands in the same session. Its `data` JSON holds
  `{"hooked": true}` from the start: the importer then adds messages, usage and sub-agents and
  never inserts a result the hook already stored (paired by `call_ref` = Claude Code's
  `tool_use_id`).
- The first hook to fire (SessionStart, or any later one if that was missed) creates it, and
  SessionStart writes a message, so the session's newest event is its latest activity. It is
  live (`ended IS NULL`) while Claude Code runs; SessionEnd ends it (a `--resume` makes it
  live again). A sub-agent's hooks (their input has `agent_id`) write `cc-<agent_id>`, whose
  parent is `cc-<session_id>`, as the importer names sub-agent files.
- `ctxview mcp` started by Claude Code finds the session from its environment: Claude Code
  2.1.328 starts MCP servers with `CLAUDE_CODE_SESSION_ID` set (and their cwd = the project
  folder, `CLAUDE_PROJECT_DIR`), so the session is `cc-$CLAUDE_CODE_SESSION_ID`.
  `live.live_session(store_path, "claude-code", cwd)` does exactly that, at each call (the hook
  may create the session after the server started), and without the variable falls back to the
  live `claude-code` session whose workspace is that cwd, the one with the most recent event.
  `CTXVIEW_SESSION` in the environment, when set, wins over both.
- A session and its sub-agents share one id space (`store/tree.py`): ids are taken from the
  tree's next id (the largest `next_rid` of its sessions) by whichever process writes. A hook
  (the parent's or a sub-agent's) and the MCP server may run at the same moment (Claude Code
  runs tools and sub-agents in parallel), so each takes
  `async with live.session_lock(store_path, root)` for the tree's top session around "bring the
  session up to date, insert, commit": a process that keeps a session in memory takes in what
  others wrote since (`Session.catch_up`, `Session.advance_ids`), never trusting a cached
  counter.
- The hook engine answers a tool call before it stores it (its events wait for Claude Code's
  record of the call in the transcript). Its steps go through one lane per session tree
  (`claude_code.lane.Lane`), which holds the tree's lock from a call's arrival until every call
  it answered is stored: the parent's and its sub-agents' calls are answered in order, one at a
  time, while earlier calls are still being stored. The ids an answer gives are put in the
  store's counter (the session's `next_rid`, so the tree's) before the answer goes, and kept in
  a journal (`hook_journal.py`) until stored; a step that fails before its answer gives back
  only the ids it took (`IdSpace.rewind`). An import in another process that meets a hooked call
  not stored yet waits for the tree's lock (`live.HookPending`) rather than store it a second
  time.
- The MCP server answers a sub-agent's recall in the sub-agent's session: Claude Code tells it
  only the call's `claudecode/toolUseId`, and the transcript holding that tool_use names the
  conversation (`caller.py`).
- The hook lets `mcp__ctxview__*` tools pass untouched: their results already went through the
  engine in the MCP server, with their own ids.
"""
