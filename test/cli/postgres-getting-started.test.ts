import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BIN } from "./run-cli.js";
import { createTestDatabase, skipPg } from "../support/pg.js";

// docs/postgresql.md's getting-started steps (issue 49, item 19), run as the
// page shows them against a database of the test's own: migrate, demo, a
// key. (The CREATE DATABASE is the test's createTestDatabase; serve on
// PostgreSQL is the end-to-end suite's "postgres" project.)

const page = readFileSync("docs/postgresql.md", "utf8");
const block = /## Getting started[\s\S]*?```shell\n([\s\S]*?)```/.exec(page)?.[1] ?? "";

describe.skipIf(skipPg)("docs/postgresql.md's getting started", () => {
  it("runs as shown: migrate, demo, keys create", async () => {
    const lines = block.split("\n").map((l) => l.replace(/\s+#\s.*$/, "").trim()).filter((l) => l !== "");
    expect(lines.some((l) => l.startsWith("npx marketdata serve"))).toBe(true);
    const db = await createTestDatabase();
    try {
      const env = { ...process.env, MARKETDATA_DB: db.url };
      let key = "";
      for (const line of lines) {
        if (line.startsWith("psql ") || line.startsWith("export ") || line.startsWith("npx marketdata serve")) continue;
        const assigned = /^(\w+)=\$\((.*)\)$/.exec(line);
        const command = (assigned ? assigned[2]! : line).replace(/^npx marketdata /, "");
        const r = spawnSync(process.execPath, [BIN, ...command.split(/\s+/)], { env, encoding: "utf8", timeout: 120_000 });
        expect(r.status, `${line}\n${r.stderr}`).toBe(0);
        if (assigned) key = r.stdout.trim().split("\n").at(-1)!;
      }
      expect(key).toMatch(/^mdk_/);
    } finally {
      await db.drop();
    }
  }, 180_000);
});
