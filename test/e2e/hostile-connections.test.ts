import http from "node:http";
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServe } from "../../src/cli/run-sync.js";
import { runCli } from "../cli/run-cli.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { H2_EMPTY_SETTINGS, H2_PREFACE, idleSocket, timeUntilClosed } from "../support/raw.js";
import { startTestServer, type TestServer } from "../support/server.js";

// Connections that never bring a complete request are closed after their
// phase's timeout, whatever protocol they pretend to speak, and a shutdown
// completes by its deadline whatever is still open; requests that race the
// shutdown on kept-alive connections are answered (200 or 503), never reset.

const TIMEOUTS = { headersMs: 300, requestMs: 1000, keepAliveMs: 300, idleMs: 600, shutdownMs: 1500 };
/** Timeouts are checked on intervals, and Node keeps idle keep-alive sockets 1 s past theirs: allow this much beyond each. */
const SLACK_MS = 1500;

let f: Fixture;
let server: TestServer;
let port: number;

beforeAll(async () => {
  f = buildFixture();
  server = await startTestServer(f.dbPath, { timeouts: TIMEOUTS });
  port = Number(new URL(server.url).port);
});
afterAll(async () => {
  await server?.close();
  f?.cleanup();
});

describe("every phase of a connection is bounded", () => {
  it.each([
    ["an idle TCP connection (no bytes)", undefined, TIMEOUTS.headersMs],
    ["23 of the 24 bytes of the HTTP/2 preface", H2_PREFACE.slice(0, 23), TIMEOUTS.headersMs],
    ["one byte that could start either protocol", "P", TIMEOUTS.headersMs],
    ["the HTTP/2 preface only", H2_PREFACE, TIMEOUTS.idleMs],
    ["the HTTP/2 preface and SETTINGS", Buffer.concat([Buffer.from(H2_PREFACE), H2_EMPTY_SETTINGS]), TIMEOUTS.idleMs],
    ["HTTP/1.1 headers that never end", "GET /v1/collection/scores HTTP/1.1\r\nHost: x\r\n", TIMEOUTS.headersMs],
    [
      "an HTTP/1.1 body that never arrives",
      () => `POST /marketdata.v1.AssetService/ListSales HTTP/1.1\r\nHost: x\r\nx-api-key: ${f.key}\r\nContent-Type: application/proto\r\nContent-Length: 1000\r\n\r\n{`,
      TIMEOUTS.requestMs,
    ],
    ["a kept-alive HTTP/1.1 connection after its request", "GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n", TIMEOUTS.keepAliveMs],
  ])("%s is closed after its timeout", async (_, bytes, timeout) => {
    const closedAfter = await timeUntilClosed(port, typeof bytes === "function" ? bytes() : bytes, timeout + SLACK_MS + 2000);
    expect(closedAfter).not.toBe("open");
    expect(closedAfter).toBeGreaterThanOrEqual(timeout - 50);
    expect(closedAfter).toBeLessThan(timeout + SLACK_MS);
  });

  it("an HTTP/2 stream whose body never ends is cancelled after the request timeout", async () => {
    const session = http2.connect(server.url);
    session.on("error", () => {});
    // Keep the session active (PINGs), so only the stream's own deadline can end it.
    const ping = setInterval(() => session.ping(() => {}), 100);
    try {
      const started = performance.now();
      const stream = session.request({ ":method": "POST", ":path": "/marketdata.v1.AssetService/ListSales", "content-type": "application/grpc", "x-api-key": f.key });
      stream.write(Buffer.from([0, 0, 0, 0, 10, 1]));
      stream.on("data", () => {});
      const code = await new Promise<number>((resolve) => stream.on("close", () => resolve(stream.rstCode)));
      expect(code).toBe(http2.constants.NGHTTP2_CANCEL);
      expect(performance.now() - started).toBeLessThan(TIMEOUTS.requestMs + SLACK_MS);
    } finally {
      clearInterval(ping);
      session.destroy();
    }
  });

  it("300 idle connections are all closed; the server keeps answering meanwhile", async () => {
    const closed = Promise.all(Array.from({ length: 300 }, () => timeUntilClosed(port, undefined, TIMEOUTS.headersMs + SLACK_MS + 2000)));
    const ok = await fetch(`${server.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": f.key } });
    expect(ok.status).toBe(200);
    expect((await closed).filter((t) => t === "open")).toEqual([]);
  });
});

describe("shutdown", () => {
  it("completes by its deadline with idle, half-open and slow connections still open", async () => {
    const s = await startTestServer(f.dbPath, { timeouts: { ...TIMEOUTS, headersMs: 60_000, requestMs: 60_000, idleMs: 60_000 } });
    const p = Number(new URL(s.url).port);
    const sockets = await Promise.all([idleSocket(p), idleSocket(p), idleSocket(p)]);
    sockets[1]!.write(H2_PREFACE);
    sockets[2]!.write("POST /marketdata.v1.AssetService/ListSales HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{");
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    await s.close();
    // By its deadline, not the connections' 60 s timeouts; the margin is the event loop's under a loaded 2-core CI run
    // (2.2 and 2.4 s seen there, with a 500 ms margin failing).
    expect(performance.now() - started).toBeLessThan(TIMEOUTS.shutdownMs + 1500);
    for (const socket of sockets) socket.destroy();
  });

  it("answers every request written on kept-alive connections while it drains: 200 or 503, never a reset", async () => {
    const s = await startTestServer(f.dbPath, { drainMs: 1000, timeouts: { ...TIMEOUTS, keepAliveMs: 5000, shutdownMs: 5000 } });
    const url = `${s.url}/v1/collection/scores?contractAddress=${COLLECTION}`;
    const statuses = new Map<number, number>();
    const errors: string[] = [];
    let closed = false;
    // Each loop on a kept-alive connection of its own (node:http tells whether a request went on a reused one).
    const get = (agent: http.Agent) =>
      new Promise<{ status: number } | { error: string; reused: boolean }>((resolve) => {
        const req = http.get(url, { agent, headers: { "x-api-key": f.key } }, (res) => {
          res.resume();
          res.once("end", () => resolve({ status: res.statusCode ?? 0 }));
          res.once("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, reused: req.reusedSocket }));
        });
        req.once("error", (err: NodeJS.ErrnoException) => resolve({ error: err.code ?? err.message, reused: req.reusedSocket }));
      });
    const loop = async () => {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        while (!closed) {
          const r = await get(agent);
          if ("status" in r) statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          // Once the port is closed, new connections are refused, and one the kernel had queued but the
          // server never accepted is reset: neither carried a request on a kept-alive connection. A reset
          // of a reused connection is what must not happen.
          else if (r.reused) errors.push(r.error);
          else await new Promise((res) => setTimeout(res, 20));
        }
      } finally {
        agent.destroy();
      }
    };
    const loops = Array.from({ length: 16 }, loop);
    await new Promise((r) => setTimeout(r, 500));
    await s.close();
    closed = true;
    await Promise.all(loops);
    expect(errors).toEqual([]);
    expect([...statuses.keys()].sort()).toEqual([200, 503]);
  });

  it("SIGTERM ends `serve` by --shutdown-timeout while an idle connection stays open", async () => {
    const { child, url } = await startServe(["--db", f.dbPath, "--port", "0", "--workers", "1", "--shutdown-timeout", "1", "--headers-timeout", "30"]);
    try {
      const socket = await idleSocket(Number(new URL(url).port));
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      const started = performance.now();
      child.kill("SIGTERM");
      expect(await exited).toBe(0);
      expect(performance.now() - started).toBeLessThan(3000);
      socket.destroy();
    } finally {
      child.kill("SIGKILL");
    }
  });

  it.each([
    [["--shutdown-timeout", "soon"], /--shutdown-timeout \(SHUTDOWN_TIMEOUT\) must be a number of seconds from 0.01 to 86400, got "soon"/],
    [["--headers-timeout", "60", "--request-timeout", "30"], /--headers-timeout \(HEADERS_TIMEOUT\) \(60 s\) must not exceed --request-timeout \(REQUEST_TIMEOUT\) \(30 s\)/],
  ])("validates the timeout flags: %j", (args, message) => {
    const r = runCli(["serve", "--db", f.dbPath, ...args]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(message);
  });
});
