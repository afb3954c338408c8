// ctxview for OpenCode, written by `ctxview install opencode` (removed by `ctxview uninstall
// opencode`). Each tool result goes to ctxview's resident engine for this store before the model
// sees it, and the engine's 3.0.0 text replaces `output.output` in place; after a compaction the
// files-read table follows OpenCode's summary. `recall` is a tool of this plugin (OpenCode's MCP
// calls do not say whose session they are; a plugin tool's context does). On any trouble (no
// engine, a timeout, a bug) the tool's own output goes through and the failure is written where
// `ctxview doctor` reads it.
import { spawn } from "node:child_process"
import { appendFileSync, lstatSync, readFileSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads"

const STORE = __STORE__
const PYTHON = __PYTHON__
const HOOK_CLIENT = __HOOK_CLIENT__
const SOCKET = __SOCKET__ // the resident engine's command socket for this store
const BUDGET_MS = 2000 // as Claude Code's hooks: a step gives up inside it
const FAILURES = STORE + ".hook-failures.jsonl"
const HOLD_MS = 250 // the longest OpenCode's thread is held for an answer; the rest is awaited

function database() {
  if (process.env.OPENCODE_DB) return process.env.OPENCODE_DB
  const data = process.env.XDG_DATA_HOME || join(homedir(), ".local", "share")
  return join(data, "opencode", "opencode.db")
}

function record(event, error, detail) {
  try {
    const entry = { ts: Date.now() / 1000, event, error: String(error).slice(0, 500), ...detail }
    appendFileSync(FAILURES, JSON.stringify(entry) + "\n", { mode: 0o600 })
  } catch {}
}

let started = null
function start() {
  // The hook client starts the engine when none is running (and returns once it answers).
  if (!started) {
    started = new Promise((resolve) => {
      try {
        const child = spawn(PYTHON, ["-S", HOOK_CLIENT, "_ping", "--store", STORE], {
          stdio: ["ignore", "ignore", "ignore"],
        })
        child.on("exit", () => resolve())
        child.on("error", () => resolve())
      } catch {
        resolve()
      }
    })
  }
  return started
}

function privateFolder() {
  // As the hook client: the socket's folder in /tmp must be this user's and closed to others
  // (another user's socket there would read the tool's output and answer the model).
  const st = lstatSync(dirname(SOCKET))
  if (!st.isDirectory() || st.uid !== process.getuid() || (st.mode & 0o077) !== 0) {
    throw new Error(`${dirname(SOCKET)} is not a private folder of this user`)
  }
}

function exchange(request, until, laps) {
  // The engine's command socket, as Claude Code's command hooks reach it: one request per
  // connection (the event, a newline, the JSON), our side shut once sent, the answer all the
  // engine writes before it closes. Bun's own sockets: its node:net loses the answer to a
  // socket whose writing side was ended. `laps` (the bench's, or null): the wall clock in ms
  // when the socket opened and when the answer came.
  return new Promise((resolve, reject) => {
    const chunks = []
    let rest = Buffer.from(request, "utf8")
    let done = false
    let timer = null
    const finish = (err) => {
      if (done) return
      done = true
      clearTimeout(timer)
      if (err) reject(err)
      else resolve(Buffer.concat(chunks).toString("utf8"))
    }
    timer = setTimeout(() => finish(new Error(`no answer within ${BUDGET_MS} ms`)),
      Math.max(50, until - Date.now()))
    const pump = (socket) => {
      if (laps && laps.open === undefined) laps.open = clock()
      // A long output is more than one write takes: the rest goes at each drain.
      while (rest !== null && rest.length) {
        const n = socket.write(rest)
        if (n <= 0) return
        rest = rest.subarray(n)
      }
      if (rest !== null) {
        rest = null
        socket.shutdown() // its writing side: the engine reads to the end of the request
      }
    }
    Bun.connect({
      unix: SOCKET,
      socket: {
        open: pump,
        drain: pump,
        data(_socket, chunk) {
          if (laps && laps.data === undefined) laps.data = clock()
          chunks.push(Buffer.from(chunk))
        },
        end(socket) { finish(); socket.end() },
        close() { finish() },
        error(_socket, err) { finish(err) },
        connectError(_socket, err) { finish(err) },
      },
    }).catch(finish)
  })
}

function within(promise, until) {
  // A step never waits past its budget for the engine to start: the tool's output goes through.
  return Promise.race([promise, new Promise((resolve) => {
    setTimeout(resolve, Math.max(0, until - Date.now())).unref?.()
  })])
}

// The hand-off: a worker thread of the plugin's own owns the socket and reads the answer in its
// own event loop, while OpenCode's thread waits for it on a shared flag (Atomics.wait). Awaited
// on OpenCode's loop instead, the answer (the engine's is ready in 2-3 ms) waits in the socket
// until OpenCode's own work on the call ends, 6-17 ms after a `bash`. Past HOLD_MS the rest of
// the budget is awaited as before, so a stuck engine never holds OpenCode's thread longer.
const WORKER_JS = `
import { workerData, parentPort } from "node:worker_threads"
const { SOCKET, BUDGET_MS, port, shared } = workerData
const flag = new Int32Array(shared)
const clock = () => performance.timeOrigin + performance.now()
EXCHANGE
parentPort.on("message", async ({ id, request, until, laps }) => {
  let reply
  try {
    reply = { id, text: await exchange(request, until, laps), laps }
  } catch (err) {
    reply = { id, error: { name: err?.name, message: String(err?.message ?? err), code: err?.code }, laps }
  }
  port.postMessage(reply) // before the flag: the waiting thread takes it the moment it wakes
  Atomics.store(flag, 0, id)
  Atomics.notify(flag, 0)
})
`

let courier = null // the worker, its port and flag; false: none could start (answers awaited)
function courierOf() {
  if (courier !== null) return courier
  try {
    const { port1, port2 } = new MessageChannel()
    const shared = new SharedArrayBuffer(4)
    const source = WORKER_JS.replace("EXCHANGE", () => exchange.toString())
    const url = URL.createObjectURL(new Blob([source], { type: "application/javascript" }))
    const worker = new Worker(url, {
      workerData: { SOCKET, BUDGET_MS, port: port2, shared }, transferList: [port2],
    })
    worker.unref() // OpenCode exits when it is done, as without the plugin
    worker.on("error", (err) => {
      record("opencode.worker", why(err), {})
      courier = false
    })
    courier = { worker, port: port1, flag: new Int32Array(shared), next: 0,
      waiting: new Set(), arrived: new Map() }
  } catch (err) {
    record("opencode.worker", why(err), {})
    courier = false
  }
  return courier
}

function taken(c, id) {
  // The answer to `id` if it came. The port holds every answer that came: another call's (calls
  // run side by side, one awaiting past HOLD_MS while the next holds the thread) is kept for it;
  // one whose call gave up is dropped.
  for (let m = receiveMessageOnPort(c.port); m; m = receiveMessageOnPort(c.port)) {
    if (c.waiting.has(m.message.id)) c.arrived.set(m.message.id, m.message)
  }
  const reply = c.arrived.get(id) ?? null
  c.arrived.delete(id)
  return reply
}

async function handOff(request, until, laps) {
  const c = courierOf()
  if (!c) return exchange(request, until, laps)
  const id = ++c.next
  c.waiting.add(id)
  c.worker.postMessage({ id, request, until, laps: laps ? {} : null })
  const hold = Math.min(until, Date.now() + HOLD_MS)
  let reply = null
  try {
    for (;;) {
      const seen = Atomics.load(c.flag, 0) // read before the port: a later answer changes it
      reply = taken(c, id)
      if (reply) break
      const now = Date.now()
      if (now >= until) break
      if (now < hold) {
        Atomics.wait(c.flag, 0, seen, hold - now)
        continue
      }
      const wait = Atomics.waitAsync(c.flag, 0, seen, until - now)
      if (wait.async) await wait.value
    }
  } finally {
    c.waiting.delete(id)
    c.arrived.delete(id)
  }
  if (laps && reply?.laps) Object.assign(laps, reply.laps, { woke: clock() })
  if (!reply) throw new Error(`no answer within ${BUDGET_MS} ms`)
  if (reply.error) {
    const err = new Error(reply.error.message)
    err.name = reply.error.name ?? "Error"
    if (reply.error.code) err.code = reply.error.code
    throw err
  }
  return reply.text
}

let restarted = 0
async function ask(event, body, laps = null) {
  if (process.env.CTXVIEW_HOOK_FAIL) throw new Error("failure forced by CTXVIEW_HOOK_FAIL")
  const until = Date.now() + BUDGET_MS
  const request = `${event}\n${JSON.stringify({ hook_event_name: event, ...body })}`
  await within(start(), until)
  privateFolder()
  let text
  try {
    text = await handOff(request, until, laps)
  } catch (err) {
    // No engine (it exits after a long idle time, or was stopped): start one and ask once more,
    // at most every 10 s (an engine that cannot start must not slow every call).
    const gone = ["ENOENT", "ECONNREFUSED"].includes(err?.code)
    if (!gone || Date.now() - restarted < 10_000) throw err
    restarted = Date.now()
    started = null
    await within(start(), until)
    text = await handOff(request, until, null)
  }
  // The engine answers nothing when OpenCode keeps its own output, or when it failed (it
  // recorded that itself).
  return text ? JSON.parse(text) : null
}

// bench/bench_opencode_plugin.py: with CTXVIEW_PLUGIN_TIMES set to a file, each tool call's
// milliseconds by the plugin's own clock go there (the engine's round trip, the whole hook), and
// the wall clock when it asked, when the socket opened and when the answer came (`laps`), to line
// up with the engine's trace.
const TIMES = process.env.CTXVIEW_PLUGIN_TIMES
const clock = () => performance.timeOrigin + performance.now()

function times(input, began, asked, answered, laps) {
  try {
    const line = { tool: input.tool, call: input.callID, engine_ms: answered === null ? null : answered - asked,
      hook_ms: performance.now() - began, laps }
    appendFileSync(TIMES, JSON.stringify(line) + "\n")
  } catch {}
}

const EDITS = new Set(["edit", "write", "multiedit"])
const MAX_FILE_BYTES = 64 << 20
const before = new Map() // callID -> the edited file's text before the edit (null: none)

function fileText(path) {
  try {
    const st = statSync(path)
    if (!st.isFile() || st.size > MAX_FILE_BYTES) return undefined
    return readFileSync(path, "utf8")
  } catch (err) {
    return err?.code === "ENOENT" ? null : undefined
  }
}

const recalled = new Set() // callIDs of recall calls: the engine stored them as it answered

// OpenCode 1.18 takes a plugin tool's args as zod or, without zod (none is installed beside this
// file), as JSON Schema properties, every one of them required: so offset and limit may be null.
const RECALL = {
  description:
    "Show a stored tool result of this session again, in full: the lines a cap elided or a " +
    "stub left out. `id` is the result's id as its bracket shows it (#a3f2); offset (1-based " +
    "first line) and limit (how many lines) are null for the start.",
  args: {
    id: { type: "string", description: "the result's id, as #a3f2" },
    offset: { type: ["integer", "null"], description: "first line to show (1-based), or null" },
    limit: { type: ["integer", "null"], description: "how many lines, or null" },
  },
}

function why(err) {
  return `${err?.name ?? "Error"}: ${err?.message ?? err}`
}

const tables = new Map() // summary message id -> the files-read table after it
const asked = new Set() // summary message ids the engine was told of

function text(parts) {
  return parts
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n\n")
}

export const CtxviewPlugin = async ({ directory }) => {
  start()
  if (!process.env.CTXVIEW_HOOK_FAIL) courierOf() // its thread up before the first call
  return {
    tool: {
      recall: {
        ...RECALL,
        execute: async (args, context) => {
          const input = {}
          for (const key of ["id", "offset", "limit"]) {
            if (args?.[key] !== null && args?.[key] !== undefined) input[key] = args[key]
          }
          recalled.add(context.callID)
          try {
            const answer = await ask("opencode.recall", {
              session_id: context.sessionID, tool_use_id: context.callID, input,
              directory, database: database(),
            })
            if (typeof answer?.output !== "string") throw new Error("the engine gave no text")
            return answer.output
          } catch (err) {
            record("opencode.recall", why(err),
              { session_id: context.sessionID, tool_use_id: context.callID })
            return `recall failed: ctxview's engine did not answer (${why(err)}); the result ` +
              `is kept: \`ctxview recall ID --session oc-${context.sessionID}\` shows it.`
          }
        },
      },
    },
    "tool.execute.before": async (input, output) => {
      // An edit's diff needs the file as it was: OpenCode 1.18 reports only a patch.
      const path = output?.args?.filePath
      if (!EDITS.has(input.tool) || typeof path !== "string") return
      const text = fileText(path)
      if (text !== undefined) before.set(input.callID, text)
    },
    "tool.execute.after": async (input, output) => {
      const began = performance.now()
      const was = before.get(input.callID)
      before.delete(input.callID)
      if (recalled.delete(input.callID)) return // the engine's own answer, stored already
      if (typeof output?.output !== "string") return
      const body = {
        session_id: input.sessionID, tool_name: input.tool, tool_use_id: input.callID,
        args: input.args ?? {}, output: output.output, metadata: output.metadata ?? {},
        directory, database: database(),
      }
      if (was !== undefined) body.before = was
      let asked = began
      let answered = null // stays null when the engine did not answer
      const laps = TIMES ? {} : null
      try {
        asked = performance.now()
        if (laps) laps.asked = clock()
        const answer = await ask("opencode.tool", body, laps)
        answered = performance.now()
        if (typeof answer?.output === "string") output.output = answer.output
      } catch (err) {
        record("opencode.tool", why(err),
          { session_id: input.sessionID, tool_name: input.tool, tool_use_id: input.callID })
      }
      if (TIMES) times(input, began, asked, answered, laps)
    },
    "experimental.chat.messages.transform": async (_input, output) => {
      const messages = output?.messages
      if (!Array.isArray(messages)) return
      // The newest compaction summary in what goes to the model: the engine records it (once)
      // and gives the files-read table, which goes in after the summary as a text of its own.
      let at = -1
      for (let i = messages.length - 1; i >= 0; i--) {
        if (messages[i]?.info?.role === "assistant" && messages[i].info.summary) { at = i; break }
      }
      if (at < 0) return
      const summary = messages[at]
      const id = summary.info.id
      if (!asked.has(id)) {
        asked.add(id)
        try {
          const answer = await ask("opencode.compacted", {
            session_id: summary.info.sessionID, summary_id: id, summary: text(summary.parts),
            directory, database: database(),
          })
          if (typeof answer?.table === "string" && answer.table) tables.set(id, answer.table)
        } catch (err) {
          record("opencode.compacted", why(err),
            { session_id: summary.info.sessionID })
        }
      }
      const table = tables.get(id)
      if (!table) return
      summary.parts = [...summary.parts, {
        id: `prt_ctxview_${id}`, sessionID: summary.info.sessionID, messageID: id,
        type: "text", text: table, synthetic: true,
      }]
    },
  }
}
