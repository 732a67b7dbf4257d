import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The server's log (src/log.ts) batches lines in memory before writing them:
// each case runs a process that logs and then ends one way or another, and
// checks that every line reached its stdout (a pipe here), whole and in order.

const LOG_MODULE = fileURLToPath(new URL("../../src/log.ts", import.meta.url));

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

  it("writes a line within a tenth of a second, not only once a batch is full", () => {
    const out = run(`setTimeout(() => process.kill(process.pid, "SIGKILL"), 400);`, 3);
    // SIGKILL skips every exit handler: only what the timer wrote is there.
    expect(indexes(out)).toEqual(upTo(3));
  });
});
