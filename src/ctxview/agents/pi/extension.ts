// ctxview's extension for pi (written by `ctxview install pi`; `ctxview uninstall pi` removes it).
// Each built-in tool's result goes to ctxview's resident engine (its command socket, in this
// user's private folder under /tmp) and comes back as the Context hygiene 3.0.0 text; a compaction is told to the engine,
// which answers the files-read table, given to the model after pi's summary. `recall` is a tool
// of this extension (pi takes no MCP servers). On any trouble pi's own result goes through and
// the failure is appended to the store's failure log, for `ctxview doctor`.
import { execFile } from "node:child_process";
import { appendFileSync, lstatSync, readFileSync, realpathSync, statSync } from "node:fs";
import { createConnection } from "node:net";
import { basename, dirname, join, resolve } from "node:path";

const STORE = process.env.CTXVIEW_STORE || "__CTXVIEW_STORE__";
const PYTHON = "__CTXVIEW_PYTHON__";
const HOOK_CLIENT = "__CTXVIEW_HOOK_CLIENT__";
const BUDGET_MS = 2000; // as Claude Code's hooks: past it, pi's own result goes through
const MAX_BEFORE = 8 << 20; // an edited file's old text is sent up to this size
const BUILT_IN = new Set(["read", "bash", "edit", "write", "grep", "find", "ls"]);

function crc32(bytes: Buffer): number {
	let c = ~0;
	for (const x of bytes) {
		c ^= x;
		for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
	}
	return ~c >>> 0;
}

function adler32(bytes: Buffer): number {
	let a = 1;
	let b = 0;
	for (const x of bytes) {
		a = (a + x) % 65521;
		b = (b + a) % 65521;
	}
	return ((b << 16) | a) >>> 0;
}

function socketFile(): string {
	// As `engine_socket.socket_file`: the store's real path, hashed short (a Unix socket's path
	// is limited to ~100 bytes). STORE may be one pi's environment names, so it is not installed.
	let real: string;
	try {
		real = realpathSync(STORE);
	} catch {
		real = join(realpathSync(dirname(STORE)), basename(STORE)); // no store yet
	}
	const name = Buffer.from(real, "utf8");
	const hex = (n: number) => n.toString(16).padStart(8, "0");
	return `/tmp/ctxview-${process.getuid?.()}/${hex(crc32(name))}${hex(adler32(name))}.sock`;
}

function privateFolder(folder: string): void {
	// As the hook client: another user's socket there would read the tool's output and answer.
	const st = lstatSync(folder);
	if (!st.isDirectory() || st.uid !== process.getuid?.() || (st.mode & 0o077) !== 0) {
		throw new Error(`${folder} is not a private folder of this user`);
	}
}

function exchange(where: string, request: string): Promise<string> {
	// The engine's command socket, as the hook client reaches it: one request per connection (the
	// event, a newline, the JSON), our side shut once sent, the answer all the engine writes
	// before it closes (nothing when pi keeps its own output, or the engine failed and recorded
	// it). About 0.8 ms less than a loopback http request to the engine from Node.
	return new Promise((done, fail) => {
		const chunks: Buffer[] = [];
		const socket = createConnection(where, () => socket.end(request));
		const timer = setTimeout(() => {
			socket.destroy();
			fail(Object.assign(new Error(`no answer within ${BUDGET_MS} ms`), { name: "TimeoutError" }));
		}, BUDGET_MS);
		socket.on("data", (chunk: Buffer) => chunks.push(chunk));
		socket.on("end", () => {
			clearTimeout(timer);
			done(Buffer.concat(chunks).toString("utf8"));
		});
		socket.on("error", (err) => {
			clearTimeout(timer);
			fail(err);
		});
	});
}

function failed(event: string, what: string, detail: Record<string, unknown>): void {
	try {
		const line = JSON.stringify({ ts: Date.now() / 1000, event, error: what, ...detail });
		appendFileSync(`${STORE}.hook-failures.jsonl`, `${line}\n`, { mode: 0o600 });
	} catch {
		// nothing can be recorded: pi goes on with its own output all the same
	}
}

function startEngine(): Promise<void> {
	// `_ping` starts the store's resident engine when none runs, and waits until it answers.
	return new Promise((done) => {
		const child = execFile(PYTHON, ["-S", HOOK_CLIENT, "_ping", "--store", STORE], { timeout: 5000 }, () => done());
		child.stdin?.end(); // the client reads its input to the end first
	});
}

async function ask(event: string, body: Record<string, unknown>): Promise<any> {
	if (process.env.CTXVIEW_HOOK_FAIL) throw new Error("failure forced by CTXVIEW_HOOK_FAIL");
	const where = socketFile();
	const request = `pi.${event}\n${JSON.stringify({ hook_event_name: `pi.${event}`, ...body })}`;
	let text: string;
	try {
		privateFolder(dirname(where));
		text = await exchange(where, request);
	} catch (err: any) {
		if (!["ENOENT", "ECONNREFUSED"].includes(err?.code)) throw err;
		await startEngine(); // the engine exited (idle) or died: started again, asked once more
		privateFolder(dirname(where));
		text = await exchange(where, request);
	}
	return text ? JSON.parse(text) : {};
}

function session(ctx: any): Record<string, unknown> {
	const sm = ctx.sessionManager;
	return { session_id: sm.getSessionId(), session_file: sm.getSessionFile() ?? null, cwd: ctx.cwd };
}

function why(err: any): string {
	if (err?.name === "TimeoutError") return `the ${BUDGET_MS / 1000} s budget ran out`;
	const code = err?.code ?? err?.cause?.code;
	const cause = code ? ` (${code})` : "";
	return `${err?.name ?? "Error"}: ${err?.message ?? err}${cause}`;
}

export default function (pi: any) {
	const before = new Map<string, string | null>(); // tool call id -> the edited file's old text
	let table: string | null = null; // the files-read table given after the latest compaction

	pi.on("session_start", async (_event: any, ctx: any) => {
		await startEngine();
		try {
			const out = await ask("session_start", session(ctx));
			table = typeof out.table === "string" && out.table ? out.table : null;
		} catch (err) {
			failed("pi.session_start", why(err), session(ctx));
		}
	});

	pi.on("session_shutdown", async (_event: any, ctx: any) => {
		try {
			await ask("shutdown", session(ctx));
		} catch (err) {
			failed("pi.session_shutdown", why(err), session(ctx));
		}
	});

	pi.on("tool_call", async (event: any, ctx: any) => {
		if (event.toolName !== "edit" && event.toolName !== "write") return;
		const path = event.input?.path;
		if (typeof path !== "string") return;
		try {
			const full = resolve(ctx.cwd, path.replace(/^@/, ""));
			before.set(event.toolCallId, statSync(full).size <= MAX_BEFORE ? readFileSync(full, "utf8") : null);
		} catch {
			before.set(event.toolCallId, null); // a new file
		}
	});

	pi.on("tool_result", async (event: any, ctx: any) => {
		if (!BUILT_IN.has(event.toolName)) return;
		const old = before.get(event.toolCallId);
		before.delete(event.toolCallId);
		const detail = { ...session(ctx), tool_name: event.toolName, tool_call_id: event.toolCallId };
		try {
			const out = await ask("tool_result", {
				...detail,
				input: event.input,
				content: event.content,
				is_error: event.isError,
				details: event.details ?? null,
				before: old === undefined ? undefined : old,
			});
			if (typeof out.text !== "string") return;
			return { content: [{ type: "text", text: out.text }] };
		} catch (err) {
			failed("pi.tool_result", why(err), detail);
			return;
		}
	});

	pi.on("session_compact", async (event: any, ctx: any) => {
		const entry = event.compactionEntry ?? {};
		try {
			const out = await ask("compact", { ...session(ctx), summary: entry.summary ?? "", entry_id: entry.id ?? null,
				tokens_before: entry.tokensBefore ?? null });
			table = typeof out.table === "string" && out.table ? out.table : null;
		} catch (err) {
			failed("pi.compact", why(err), session(ctx));
		}
	});

	pi.on("context", async (event: any) => {
		// The table follows pi's summary in every request after the compaction.
		if (!table) return;
		const at = event.messages.findLastIndex((m: any) => m.role === "compactionSummary");
		if (at < 0) return;
		const messages = [...event.messages];
		messages.splice(at + 1, 0, { role: "user", content: [{ type: "text", text: table }], timestamp: Date.now() });
		return { messages };
	});

	pi.registerTool({
		name: "recall",
		label: "Recall",
		description:
			"Show a stored result of this session again, in full: elided output, the lines a stub " +
			"or a cap left out. `id` is the result's id as shown in its bracket (#a3f2).",
		promptSnippet: "Show a stored tool result again in full by its id (#a3f2)",
		parameters: {
			type: "object",
			properties: {
				id: { type: "string", description: "the result's id, as #a3f2" },
				offset: { type: "integer", description: "first line to show (1-based)" },
				limit: { type: "integer", description: "how many lines" },
			},
			required: ["id"],
		},
		async execute(toolCallId: string, params: any, _signal: any, _onUpdate: any, ctx: any) {
			try {
				const out = await ask("recall", { ...session(ctx), tool_call_id: toolCallId, input: params });
				if (typeof out.text !== "string") throw new Error("the engine gave no text (see `ctxview doctor`)");
				return { content: [{ type: "text", text: out.text }], details: {} };
			} catch (err) {
				failed("pi.recall", why(err), { ...session(ctx), tool_call_id: toolCallId });
				return { content: [{ type: "text", text: `recall failed: ${why(err)}` }], details: {}, isError: true };
			}
		},
	});
}
