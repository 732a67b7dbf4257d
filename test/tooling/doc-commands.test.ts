import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runDemo } from "../../src/cli/demo.js";
import { DOCS_DEMO_END } from "../../src/demo/generate.js";
import { resolveWebhooks } from "../../src/config/serve.js";
import { withKeys } from "../support/engine.js";
import { PYTHON, skipPython } from "../support/python.js";
import { startTestServer, type TestServer } from "../support/server.js";

// Every shell command the README and docs/ show, run as a user pastes it,
// against the store `npm start` builds (the default demo data set) served on
// an ephemeral port: each must succeed, and where the page shows its answer
// (the `# …` lines after it, or the ```json block after its ```sh block) the
// answer must be that one, `…` standing for anything. A command that cannot
// run here is in NOT_RUN with the test that covers it instead; a new one in
// the docs fails until it runs or is named there.

const ROOT = resolve(fileURLToPath(new URL("../..", import.meta.url)));
/** In page order: a page's commands may use what an earlier one set (WRITE_KEY). */
const PAGES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`), "packages/client/README.md"]
  // Benchmarks are run by `npm run bench:*`, not here.
  .filter((p) => p !== "docs/benchmarks.md");

const NOT_RUN: Record<string, string> = {
  "npm ci": "CI's first step (.ci/run)",
  "npm start": "test/cli/start.test.ts runs it and every line it prints",
  "npm test": "CI runs it (.ci/run)",
  "apt-get install -y protobuf-compiler protobuf-compiler-grpc python3-grpcio python3-protobuf": "CI installs these (.ci/run); the Python commands here skip without them",
};

/** The port and store the pages name, and the directories they write into. */
const DEFAULT_URL = "http://127.0.0.1:8080";
const DEFAULT_HOST = "127.0.0.1:8080";
const DEFAULT_DB = "data/marketdata.sqlite";
const OUTPUT_DIRS = ["contract/", "py/"];
/** The collection `npm start` puts in `C`: the demo store's 10,000-token one. */
const DEMO_COLLECTION = "0xb5c209a36fc912ae5d981b4f6d23a022d519460a";

export interface DocCommand {
  page: string;
  line: number;
  /** The shell text: continuation lines and a here-document included. */
  text: string;
  /** The answer the page shows, if it shows one. */
  expected?: string;
}

/** The commands of a page's ```sh blocks, each with the answer shown after it. */
export function docCommands(page: string, markdown: string): { commands: DocCommand[]; python: string[] } {
  const lines = markdown.split("\n");
  const commands: DocCommand[] = [];
  const python: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const [, indent, lang] = fence;
    const body: { text: string; line: number }[] = [];
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]!); i++) body.push({ text: lines[i]!.slice(indent!.length), line: i + 1 });
    if (lang === "python") python.push(body.map((b) => b.text).join("\n"));
    if (lang !== "sh") continue;
    let last: DocCommand | undefined;
    for (let j = 0; j < body.length; j++) {
      const { text, line } = body[j]!;
      if (text.trim() === "") {
        last = undefined;
      } else if (text.startsWith("#")) {
        if (last) last.expected = last.expected === undefined ? text.replace(/^# ?/, "") : `${last.expected}\n${text.replace(/^# ?/, "")}`;
      } else {
        let command = text;
        while (command.endsWith("\\") && j + 1 < body.length) command += `\n${body[++j]!.text}`;
        const heredoc = /<<-?'?(\w+)'?/.exec(command);
        if (heredoc) {
          while (j + 1 < body.length) {
            command += `\n${body[++j]!.text}`;
            if (body[j]!.text.trim() === heredoc[1]) break;
          }
        }
        last = { page, line, text: command };
        commands.push(last);
      }
    }
    // A ```json block right after the ```sh block is the answer of its last command.
    if (last && last.expected === undefined && /^\s*```json\s*$/.test(lines[i + 1] ?? "")) {
      const json: string[] = [];
      for (let k = i + 2; k < lines.length && !/^\s*```\s*$/.test(lines[k]!); k++) json.push(lines[k]!);
      last.expected = json.join("\n");
    }
  }
  return { commands, python };
}

/** Lines joined without their indentation (the pages break long answers), trailing space dropped. */
function flat(text: string): string {
  return text
    .trimEnd()
    .split("\n")
    .map((l) => l.trimStart())
    .join("");
}

/**
 * Whether `actual` is the answer shown: equal, `…` (and the spaces around
 * it) standing for any text (a shown status code before the body is the
 * reader's, not curl's output).
 */
export function isShownAnswer(actual: string, shown: string): boolean {
  // A stream's answer is shown up to its first blank line: what it sends at once.
  const opening = shown.split(/\n\s*\n/)[0]!;
  const parts = flat(opening.replace(/^\d{3} (?=[{[])/, "")).split(/\s*…\s*/);
  const got = flat(actual);
  if (parts.length === 1) return got === parts[0];
  if (!got.startsWith(parts[0]!)) return false;
  let at = parts[0]!.length;
  for (const part of parts.slice(1, -1)) {
    const found = got.indexOf(part, at);
    if (found < 0) return false;
    at = found + part.length;
  }
  const end = parts.at(-1)!;
  return got.endsWith(end) && got.length - end.length >= at;
}

describe("isShownAnswer", () => {
  it("takes … for any text, and nothing else", () => {
    expect(isShownAnswer('{"a":1,"b":[1,2,3]}', '{"a":1,"b":[1,…]}')).toBe(true);
    expect(isShownAnswer('{"a":1,"b":[1,2,3]}', '{"a":1,"b":[1, …]}')).toBe(true);
    expect(isShownAnswer('{"a":1,"b":[1,2,3]}\n', '{"a":1,\n "b":[1,2,3]}')).toBe(true);
    expect(isShownAnswer('{"a":1,"b":[1,2,3]}', '{"a":2,…]}')).toBe(false);
    expect(isShownAnswer('{"a":1}', '400 {"a":1}')).toBe(true);
    expect(isShownAnswer('{"a":1}', '{"a":1}x')).toBe(false);
    expect(isShownAnswer("retry: 2000\n: position\nid: abc\n\n", "retry: 2000\n: position\nid: a…\n\nid: later")).toBe(true);
  });
});

const pages = PAGES.map((page) => ({ page, ...docCommands(page, readFileSync(join(ROOT, page), "utf8")) }));
const skipPy = skipPython("the documentation's Python commands");

describe("the commands the README and docs show", () => {
  let dir: string;
  let db: string;
  let server: TestServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "marketdata-doc-commands-"));
    db = join(dir, "marketdata.sqlite");
    // The store the pages were taken from (docs/data.md, "Demo data").
    await runDemo(db, "1", "default", String(DOCS_DEMO_END));
    const key = await withKeys(db, async (admin) => (await admin.create("docs")).key);
    // As docs/webhooks.md starts it: webhooks to a receiver on this machine allowed.
    server = await startTestServer(db, { rateLimit: 0, webhooks: resolveWebhooks({ allowPrivateWebhooks: true }) });
    env = { KEY: key, C: DEMO_COLLECTION };
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The command as it runs here: this server, this store, output into the temporary directory. */
  function localised(text: string): string {
    let out = text.replaceAll(DEFAULT_URL, server.baseUrl).replaceAll(DEFAULT_HOST, new URL(server.baseUrl).host).replaceAll(DEFAULT_DB, db);
    for (const d of OUTPUT_DIRS) out = out.replaceAll(` ${d}`, ` ${join(dir, d)}/`);
    return out;
  }

  function bash(script: string): Promise<{ code: number; stdout: string; stderr: string }> {
    return new Promise((done) => {
      execFile("bash", ["-c", script], { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000, maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
        done({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr }),
      );
    });
  }

  it("every command is run here or named in NOT_RUN, and NOT_RUN names only commands the pages show", () => {
    const shown = new Set(pages.flatMap((p) => p.commands.map((c) => c.text.replace(/\s+#\s.*$/, ""))));
    for (const command of Object.keys(NOT_RUN)) expect(shown, command).toContain(command);
  });

  it.each(pages.filter((p) => p.commands.length > 0).map((p) => [p.page, p] as const))(
    "%s: each command succeeds and answers what the page shows",
    async (_page, { commands, python }) => {
      // Every difference at once: a page is corrected in one go.
      const wrong: string[] = [];
      for (const command of commands) {
        const where = `${command.page}:${command.line}: ${command.text}`;
        const bare = command.text.replace(/\s+#\s.*$/, "");
        if (bare in NOT_RUN) continue;
        if (skipPy && /buf generate --template clients\/python\//.test(bare)) continue;
        const assigned = /^(?:export\s+)?([A-Z_][A-Z0-9_]*)=/.exec(bare);
        // A stream runs until stopped: two seconds show what it sends at once.
        const script = assigned ? `${localised(command.text)}\nprintf %s "$${assigned[1]}"` : / -sN /.test(bare) ? `timeout 2 ${localised(command.text)}` : localised(command.text);
        const { code, stdout, stderr } = await bash(script);
        expect(code === 0 || (code === 124 && / -sN /.test(bare)), `${where}\nexit ${code}: ${stderr}`).toBe(true);
        if (assigned) {
          expect(stdout, where).not.toBe("");
          env[assigned[1]!] = stdout;
        }
        if (command.expected !== undefined && !isShownAnswer(stdout, command.expected)) wrong.push(`${where}\nanswered:\n${stdout}\nthe page shows:\n${command.expected}\n`);
      }
      expect(wrong.join("\n")).toBe("");
      if (skipPy) return;
      for (const program of python) {
        // The page's program, with the C and KEY the shell has, on this server's port, using the stubs generated above and
        // the helpers next to them (as docs/clients.md puts them on the path).
        const source = `import os\nC = os.environ["C"]\nKEY = os.environ["KEY"]\n${localised(program)}\n`;
        const { code, stderr } = await bash(`PYTHONPATH=${join(dir, "py")}:${join(ROOT, "clients/python")} ${PYTHON} - <<'PYTHON'\n${source}PYTHON`);
        expect(code, `${_page}: the Python program failed: ${stderr}`).toBe(0);
      }
    },
    240_000,
  );
});
