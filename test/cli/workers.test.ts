import { execFileSync } from "node:child_process";
import { renameSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { startServe } from "../../src/cli/run-sync.js";
import { slowCall, spawnCli } from "./run-cli.js";

// `serve --workers 2`: node:cluster workers on one port, drained on SIGTERM.

let f: Fixture;
beforeAll(() => {
  f = buildFixture();
});
afterAll(() => f.cleanup());

describe("marketdata serve --workers 2", () => {
  it("answers from two worker processes, and SIGTERM under load finishes the requests in flight and exits 0", async () => {
    // No rate limit: the load below runs as fast as the workers answer, near the default 1,000 a second per key
    // (a 429 here was a flaky failure in CI), and this test is about draining, not limits.
    const { child, url, output } = await startServe(["--db", f.dbPath, "--port", "0", "--workers", "2", "--rate-limit", "0"], { env: { LOG_LEVEL: "info" } });
    try {
      const u = `${url}/v1/collection/scores?contractAddress=${COLLECTION}`;
      // New connections are spread over the workers (round-robin).
      for (let i = 0; i < 20; i++) {
        const r = await fetch(u, { headers: { "x-api-key": f.key, connection: "close" } });
        expect(r.status).toBe(200);
        await r.text();
      }
      // Log lines are written asynchronously: wait for all 20 (a loaded machine lags).
      const requestLines = () => output().split("\n").filter((l) => l.includes('"msg":"request"'));
      for (let waited = 0; requestLines().length < 20 && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      const pids = new Set(requestLines().map((l) => (JSON.parse(l) as { pid: number }).pid));
      expect(pids.size).toBe(2);
      // Never the key in a log line.
      expect(output()).not.toContain(f.key);

      // Load on kept-alive connections, plus calls whose bodies are still arriving.
      const inFlight = Array.from({ length: 6 }, () => slowCall(url, f.key, COLLECTION));
      let stop = false;
      const statuses: number[] = [];
      const networkErrors: string[] = [];
      const loops = Array.from({ length: 8 }, async () => {
        while (!stop) {
          try {
            const r = await fetch(u, { headers: { "x-api-key": f.key } });
            statuses.push(r.status);
            await r.text();
          } catch (err) {
            // Once the workers stop listening a new connection is refused; that is not a request in flight.
            networkErrors.push(String((err as { cause?: { code?: string } }).cause?.code ?? err));
            break;
          }
        }
      });
      await new Promise((r) => setTimeout(r, 500));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      for (const call of inFlight) call.finish();
      const results = await Promise.all(inFlight.map((c) => c.done));
      for (const r of results) {
        expect(r.status).toBe(200);
        expect(JSON.parse(r.text).successful).toBe(1);
      }
      stop = true;
      await Promise.all(loops);
      expect(await exited).toBe(0);
      expect(statuses.length).toBeGreaterThan(50);
      // Every response the load got is an answer or a "closing" refusal, never a server error.
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(networkErrors.filter((e) => e !== "ECONNREFUSED" && e !== "ECONNRESET" && e !== "UND_ERR_SOCKET")).toEqual([]);
      expect(output()).toMatch(/shutting down: workers finish requests in flight/);
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("answers GET /metrics on the API port with the sum of both workers' counts, whichever worker takes the scrape (issue 49, item 17)", async () => {
    const { child, url } = await startServe(["--db", f.dbPath, "--port", "0", "--workers", "2"]);
    try {
      const u = `${url}/v1/collection/scores?contractAddress=${COLLECTION}`;
      // Requests on new connections: spread over both workers.
      for (let i = 0; i < 10; i++) {
        const r = await fetch(u, { headers: { "x-api-key": f.key, connection: "close" } });
        await r.text();
      }
      const scoresAnswered = async () => {
        const r = await fetch(`${url}/metrics`, { headers: { connection: "close" } });
        expect(r.status).toBe(200);
        const text = await r.text();
        return [...text.matchAll(/^marketdata_requests_total\{[^}]*scores[^}]*\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
      };
      // Scrapes on new connections reach both workers: each answers all 10 (one worker's alone would say fewer).
      for (let i = 0; i < 6; i++) expect(await scoresAnswered()).toBe(10);
    } finally {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    }
  });

  it("refuses a missing store before forking, with the CLI's message", async () => {
    const child = spawnCli(["serve", "--db", `${f.dir}/missing.sqlite`, "--port", "0", "--workers", "2"]);
    let err = "";
    child.stderr?.on("data", (c: Buffer) => (err += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    expect(err).toMatch(/^marketdata: store .*missing\.sqlite does not exist/);
  });
});

describe("a worker that keeps dying at start", () => {
  it("is restarted with a growing delay, then the server stops and exits 1 with the reason (the review: every second, forever)", async () => {
    const g = buildFixture();
    const { child, output } = await startServe(["--db", g.dbPath, "--port", "0", "--workers", "2"], { env: { LOG_LEVEL: "info" } });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      // Replacements cannot open the store any more; the running worker keeps its open file.
      renameSync(g.dbPath, `${g.dbPath}.moved`);
      const workers = execFileSync("ps", ["-o", "pid=", "--ppid", String(child.pid)], { encoding: "utf8" }).trim().split(/\s+/).map(Number);
      process.kill(workers[0]!, "SIGKILL");
      const started = performance.now();
      expect(await exited).toBe(1);
      const took = performance.now() - started;
      const delays = [...output().matchAll(/"restartInMs":(\d+)/g)].map((m) => Number(m[1]));
      expect(delays).toEqual([500, 1000, 2000, 4000]);
      expect(output()).toMatch(/^marketdata: serve: 5 workers in a row died within 10 s of starting \(the last with exit code 1\); stopping$/m);
      expect(took).toBeLessThan(40_000);
    } finally {
      child.kill("SIGKILL");
      g.cleanup();
    }
  }, 60_000);
});
