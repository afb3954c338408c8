// ctxview's extension for pi (written by `ctxview install pi`; `ctxview uninstall pi` removes it).
// Each built-in tool's result goes to ctxview's resident engine (loopback http, the store's
// secret) and comes back as the Context hygiene 3.0.0 text; a compaction is told to the engine,
// which answers the files-read table, given to the model after pi's summary. `recall` is a tool
// of this extension (pi takes no MCP servers). On any trouble pi's own result goes through and
// the failure is appended to the store's failure log, for `ctxview doctor`.
import { execFile } from "node:child_process";
import { appendFileSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";

const STORE = process.env.CTXVIEW_STORE || "__CTXVIEW_STORE__";
const PYTHON = "__CTXVIEW_PYTHON__";
const HOOK_CLIENT = "__CTXVIEW_HOOK_CLIENT__";
const BUDGET_MS = 2000; // as Claude Code's hooks: past it, pi's own result goes through
const MAX_BEFORE = 8 << 20; // an edited file's old text is sent up to this size
const BUILT_IN = new Set(["read", "bash", "edit", "write", "grep", "find", "ls"]);

type Endpoint = { port: number; secret: string };

function endpoint(): Endpoint {
	const data = JSON.parse(readFileSync(`${STORE}.hook-endpoint.json`, "utf8"));
	return { port: data.port, secret: data.secret };
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
	const ep = endpoint();
	const headers: Record<string, string> = { "content-type": "application/json", "X-Ctxview-Secret": ep.secret };
	if (process.env.CTXVIEW_HOOK_FAIL) headers["X-Ctxview-Fail"] = "1";
	const post = () =>
		fetch(`http://127.0.0.1:${ep.port}/hook/pi.${event}`, {
			method: "POST",
			headers,
			body: JSON.stringify({ hook_event_name: `pi.${event}`, ...body }),
			signal: AbortSignal.timeout(BUDGET_MS),
		});
	let answer: Response;
	try {
		answer = await post();
	} catch (err: any) {
		if (err?.cause?.code !== "ECONNREFUSED") throw err;
		await startEngine(); // the engine exited (idle) or died: started again, asked once more
		answer = await post();
	}
	if (answer.status !== 200) throw new Error(`the engine answered ${answer.status}`);
	const out = await answer.json();
	if (out && out.error) throw new Error(out.error); // recorded by the engine already
	return out;
}

function session(ctx: any): Record<string, unknown> {
	const sm = ctx.sessionManager;
	return { session_id: sm.getSessionId(), session_file: sm.getSessionFile() ?? null, cwd: ctx.cwd };
}

function why(err: any): string {
	if (err?.name === "TimeoutError") return `the ${BUDGET_MS / 1000} s budget ran out`;
	const cause = err?.cause?.code ? ` (${err.cause.code})` : "";
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
				return { content: [{ type: "text", text: String(out.text) }], details: {} };
			} catch (err) {
				failed("pi.recall", why(err), { ...session(ctx), tool_call_id: toolCallId });
				return { content: [{ type: "text", text: `recall failed: ${why(err)}` }], details: {}, isError: true };
			}
		},
	});
}
