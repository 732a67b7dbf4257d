import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./run-cli.js";

// Two processes opening one new SQLite file at once (two `migrate`s, two
// servers or consumers started together) race on its schema (issue 49, item
// 3): each migration step takes the write lock first and reads the version
// under it, so both succeed and the schema is applied once.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-migrate-race-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function migrate(db: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, "migrate", "--db", db], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("exit", (code) => resolve({ code, out }));
  });
}

describe("two processes migrating one new SQLite file at once", () => {
  it("both succeed, round after round", async () => {
    for (let round = 0; round < 6; round++) {
      const db = join(dir, `race-${round}.sqlite`);
      const results = await Promise.all([migrate(db), migrate(db), migrate(db)]);
      for (const r of results) expect(r, r.out).toMatchObject({ code: 0 });
    }
  }, 120_000);
});
