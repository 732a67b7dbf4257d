import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, startServe } from "../../src/cli/run-sync.js";
import { numberedSale } from "../support/sales.js";
import { openSse, type SseStream } from "../../bench/sse-client.js";
import { runCli } from "./run-cli.js";

// The live feeds across processes on one SQLite file: `serve --workers 2`
// and another `serve` beside it, and `import` in a third process. Every
// worker of every server sees the import's commit (each polls the file's
// data version) and sends its subscribers every sale; on SIGTERM each of
// their streams ends with an "end" event holding its resume position, and
// the server exits 0.

const C = "0x5555555555555555555555555555555555555555";
let dir: string;
let db: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-feeds-"));
  db = join(dir, "store.sqlite");
  const file = join(dir, "collections.ndjson");
  writeFileSync(file, `${JSON.stringify({ contractAddress: C, name: "processes" })}\n`);
  expect(runCli(["import", "--db", db, "collections", file]).status).toBe(0);
  const created = runCli(["keys", "create", "--db", db, "--name", "feeds"]);
  key = created.stdout.trim().split("\n").pop()!.trim();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function streams(server: ServeProcess, n: number): Promise<SseStream[]> {
  const url = new URL("/v1/asset/sales/stream", server.url);
  url.searchParams.set("contractAddress", C);
  const out: SseStream[] = [];
  // One connection each: new connections are spread over the workers. Every
  // other one gives its key as an EventSource must, in the URL (never logged).
  for (let i = 0; i < n; i++) {
    const withKey = new URL(url);
    withKey.searchParams.set("apiKey", key);
    out.push(await (i % 2 === 0 ? openSse(url.toString(), { "x-api-key": key }) : openSse(withKey.toString())));
  }
  return out;
}

async function hashes(stream: SseStream, n: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < n) out.push((JSON.parse((await stream.next())!.data) as { hash: string }).hash);
  return out;
}

describe("live feeds across processes on one SQLite file", () => {
  it("every worker of every server sends an import's sales to its subscribers; SIGTERM ends each stream with its position", async () => {
    const [a, b] = await Promise.all([
      startServe(["--db", db, "--port", "0", "--workers", "2", "--rate-limit", "0"], { env: { LOG_LEVEL: "info" } }),
      startServe(["--db", db, "--port", "0", "--workers", "1", "--rate-limit", "0"]),
    ]);
    try {
      const onA = await streams(a, 4);
      const onB = await streams(b, 1);
      for (const s of [...onA, ...onB]) expect(s.status).toBe(200);
      const sales = Array.from({ length: 25 }, (_, i) => numberedSale(i, C));
      const file = join(dir, "sales.ndjson");
      writeFileSync(file, sales.map((s) => JSON.stringify(s)).join("\n") + "\n");
      expect(runCli(["import", "--db", db, "sales", file]).status).toBe(0);
      for (const s of [...onA, ...onB]) expect(await hashes(s, sales.length)).toEqual(sales.map((x) => x.hash));

      const exited = new Promise<number | null>((resolve) => a.child.once("exit", resolve));
      a.child.kill("SIGTERM");
      for (const s of onA) {
        const end = await s.next();
        expect(end?.event).toBe("end");
        const data = JSON.parse(end!.data) as { code: string; cursor: string };
        expect(data.code).toBe("unavailable");
        expect(data.cursor).toBe(s.lastEventId);
        s.close();
      }
      expect(await exited).toBe(0);
      // Both workers of the first server held streams (their request lines name their pids).
      const pids = new Set(
        a
          .output()
          .split("\n")
          .filter((l) => l.includes('"msg":"request"') && l.includes("/v1/asset/sales/stream"))
          .map((l) => (JSON.parse(l) as { pid: number }).pid),
      );
      expect(pids.size).toBe(2);
      expect(a.output()).not.toContain(key);
      expect(a.output()).toContain("apiKey=[redacted]");
      for (const s of onB) s.close();
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  }, 120_000);
});
