import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openReadOnly } from "../../src/store/sqlite/database.js";
import { runCli, spawnCli } from "./run-cli.js";
import { numberedSale } from "../support/sales.js";

// `marketdata import KIND FILE --follow`: lines appended to a growing file
// are committed as they arrive (within a second here; the follower flushes
// 200 ms after a line), invalid ones skipped with --skip-invalid or stopping
// it without; SIGTERM commits what is pending; stdin is read to its end.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-follow-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const COLLECTION = `0x${"ef".repeat(20)}`;
const sale = (i: number) => JSON.stringify(numberedSale(0xf0000 + i, COLLECTION));

function salesIn(db: string): number {
  try {
    const conn = openReadOnly(db);
    try {
      return conn.prepare("SELECT count(*) FROM sales").pluck().get() as number;
    } finally {
      conn.close();
    }
  } catch {
    return 0;
  }
}

async function until(what: () => boolean, ms = 5000): Promise<number> {
  const t = performance.now();
  while (!what()) {
    if (performance.now() - t > ms) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
  return performance.now() - t;
}

describe("import --follow", () => {
  it("commits lines appended to a growing file as they come, skips invalid ones with --skip-invalid, and commits what is pending on SIGTERM", async () => {
    const db = join(dir, "a.sqlite");
    const file = join(dir, "feed.ndjson");
    writeFileSync(file, `${sale(0)}\n${sale(1)}\n`);
    const child = spawnCli(["import", "sales", file, "--follow", "--skip-invalid", "--db", db]);
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await until(() => salesIn(db) === 2, 10_000);
    // Appended while it runs: seen within a second (200 ms flush, 100 ms polling).
    appendFileSync(file, `${sale(2)}\n${sale(3)}\n`);
    const waited = await until(() => salesIn(db) === 4);
    expect(waited).toBeLessThan(1000);
    appendFileSync(file, `{"hash":"nope"}\n${sale(4)}\n`);
    // The commit can be seen in the store before the child's stderr has crossed the pipe.
    await until(() => salesIn(db) === 5 && /feed\.ndjson:5:/.test(stderr));
    expect(stderr).toMatch(/feed\.ndjson:5: hash: must be 0x followed by 64 hex characters.*\(skipped\)/);
    // A line without its newline yet is not a line: it waits for the rest.
    appendFileSync(file, sale(5).slice(0, 40));
    await new Promise((r) => setTimeout(r, 400));
    expect(salesIn(db)).toBe(5);
    appendFileSync(file, `${sale(5).slice(40)}\n${sale(6)}\n`);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(salesIn(db)).toBe(7);
    expect(stderr).toMatch(/done: 8 lines, 7 accepted, 0 duplicates, 1 rejected/);
  });

  it("without --skip-invalid, an invalid line stops it: exit 1 naming the line; the batches before it stay", async () => {
    const db = join(dir, "b.sqlite");
    const file = join(dir, "bad.ndjson");
    writeFileSync(file, `${sale(10)}\n`);
    const child = spawnCli(["import", "sales", file, "--follow", "--db", db]);
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await until(() => salesIn(db) === 1, 10_000);
    appendFileSync(file, `${sale(11)}\nnot json\n`);
    expect(await exited).toBe(1);
    expect(stderr).toMatch(/bad\.ndjson:3: record: is not valid JSON/);
    expect(stderr).toMatch(/that batch was not written, the ones before it were/);
    expect(salesIn(db)).toBe(1);
  });

  it("reads stdin to its end, committing as lines come, and exits 0", () => {
    const db = join(dir, "c.sqlite");
    const r = runCli(["import", "sales", "-", "--follow", "--db", db], `${[20, 21, 22].map(sale).join("\n")}\n${sale(20)}\n`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/stdin: done: 4 lines, 3 accepted, 1 duplicates, 0 rejected/);
    expect(salesIn(db)).toBe(3);
  });
});
