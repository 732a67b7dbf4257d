import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { bindingsOf, formatRequestLine, requestLineWriter } from "../../src/log.js";

// The server's log (src/log.ts) batches lines in memory before writing them:
// each case runs a process that logs and then ends one way or another, and
// checks that every line reached its stdout (a pipe here), whole and in order.

const LOG_MODULE = fileURLToPath(new URL("../../src/log.ts", import.meta.url));
// The compiled module (npm test builds it first), run by plain node: tsx
// itself makes stdout non-blocking, which would hide a destination that does not.
const BUILT_LOG_MODULE = fileURLToPath(new URL("../../dist/src/log.js", import.meta.url));

function run(ending: string, lines: number): string[] {
  const script = `
    const { createLogger } = await import(${JSON.stringify(LOG_MODULE)});
    const log = createLogger("info");
    for (let i = 0; i < ${lines}; i++) log.info({ i, pad: "x".repeat(100) }, "line");
    ${ending}
  `;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
  return r.stdout.split("\n").filter((l) => l.length > 0);
}

const indexes = (out: string[]) => out.map((l) => (JSON.parse(l) as { i?: number }).i).filter((i) => i !== undefined);
const upTo = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("the server's log", () => {
  it("writes every line by the time the process ends on its own, fewer than a batch", () => {
    expect(indexes(run("", 10))).toEqual(upTo(10));
  });

  it("writes every line on process.exit(), many batches in order", () => {
    expect(indexes(run("process.exit(0);", 5000))).toEqual(upTo(5000));
  });

  it("writes every line when the process crashes", () => {
    expect(indexes(run("throw new Error('boom');", 300))).toEqual(upTo(300));
  });

  it("keeps one destination per process: lines of two loggers stay in order, and no handler is added per logger", () => {
    const out = run(
      `const before = process.listenerCount("exit");
       const other = createLogger("info");
       for (let i = 300; i < 600; i++) other.info({ i }, "line");
       for (let k = 0; k < 20; k++) createLogger("warn");
       log.info({ listeners: [before, process.listenerCount("exit")] }, "count");
       process.exit(0);`,
      300,
    );
    expect(indexes(out)).toEqual(upTo(600));
    const [before, after] = (JSON.parse(out.at(-1)!) as { listeners: number[] }).listeners;
    expect(after).toBe(before);
  });

  it("never blocks the event loop on a reader that stalls, and writes everything, in order, once it reads again", async () => {
    // The parent reads nothing until the child says it is done: the pipe
    // (64 KB) fills after a few batches. The child logs 4 MB meanwhile and
    // measures how late a 10 ms timer fires; then it exits, and waits there
    // for the parent, now reading, to take the rest.
    const script = `
      const { createLogger } = await import(${JSON.stringify(BUILT_LOG_MODULE)});
      const log = createLogger("info");
      let i = 0, worst = 0, last = performance.now();
      const tick = setInterval(() => {
        const now = performance.now();
        worst = Math.max(worst, now - last - 10);
        last = now;
        for (let k = 0; k < 2000 && i < 20000; k++, i++) log.info({ i, pad: "x".repeat(100) }, "line");
        if (i === 20000) { clearInterval(tick); process.stderr.write(JSON.stringify({ worst }) + "\\n", () => process.exit(0)); }
      }, 10);
    `;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.pause();
    // A destination that blocks never lets the child report: it is killed, and the test fails.
    const guard = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const report = await new Promise<string>((resolve, reject) => {
      let err = "";
      child.stderr.on("data", (d: Buffer) => {
        err += d.toString();
        if (err.includes("\n")) resolve(err);
      });
      child.on("close", () => reject(new Error(`the child ended without reporting: ${err}`)));
    }).finally(() => clearTimeout(guard));
    const chunks: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => chunks.push(d)).resume();
    await new Promise((resolve) => child.on("close", resolve));
    const out = Buffer.concat(chunks).toString("utf8").split("\n").filter((l) => l.length > 0);
    expect(indexes(out)).toEqual(upTo(20000));
    // A write that waited for the reader would hold the loop until the parent read again (never, here).
    expect((JSON.parse(report) as { worst: number }).worst).toBeLessThan(1000);
  });

  it("writes a line within a tenth of a second, not only once a batch is full", () => {
    const out = run(`setTimeout(() => process.kill(process.pid, "SIGKILL"), 400);`, 3);
    // SIGKILL skips every exit handler: only what the timer wrote is there.
    expect(indexes(out)).toEqual(upTo(3));
  });
});

describe("the request line", () => {
  it("is written to the byte as pino writes the same fields at info, whatever the URL holds", () => {
    const urls = ["/v1/asset/sales?contractAddress=0xabc&limit=3", '/v1/x?q="quoted"\\back\u2028\u0001', "/v1/é?x=%20"];
    for (const url of urls) {
      const written: string[] = [];
      const log = pino({ level: "info" }, { write: (s: string) => void written.push(s) });
      const line = { reqId: "req-7", method: "GET", url, status: 200, ms: 0.12 };
      log.info(line, "request");
      const time = (JSON.parse(written[0]!) as { time: number }).time;
      expect(formatRequestLine(time, bindingsOf(log), line)).toBe(written[0]);
    }
  });

  it("writes nothing below info, and through the logger's own path for a logger made elsewhere", () => {
    const written: string[] = [];
    const quiet = pino({ level: "warn" }, { write: (s: string) => void written.push(s) });
    requestLineWriter(quiet)({ reqId: "req-1", method: "GET", url: "/", status: 200, ms: 1 });
    expect(written).toEqual([]);
    const other = pino({ level: "info", messageKey: "message" }, { write: (s: string) => void written.push(s) });
    requestLineWriter(other)({ reqId: "req-1", method: "GET", url: "/", status: 200, ms: 1 });
    expect(JSON.parse(written[0]!)).toMatchObject({ reqId: "req-1", message: "request" });
  });
});
