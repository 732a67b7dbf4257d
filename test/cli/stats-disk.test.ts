import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DiskUsage } from "../../src/store/ports/writes.js";
import { VALID } from "../ingest/records.js";
import { storeEngines } from "../support/store-engines.js";
import { runCli } from "./run-cli.js";

// `marketdata stats disk` (issue 50, item 5): where a store's disk goes,
// every table and index with the table it belongs to, largest first, and
// the whole store's size, on both engines; the figures of
// bench:ingest-scale's disk report come from the same call.

const engines = storeEngines("stats-disk");
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-stats-disk-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sale = (i: number) =>
  JSON.stringify({ ...VALID.sales, hash: `0x${i.toString(16).padStart(64, "0")}`, assetId: String(i % 300), block: 18_000_000 + i, timestamp: 1_700_000_000 + i });

describe.each(engines)("stats disk (%s)", (_name, open, skip) => {
  it.skipIf(skip)("names every table and index of the store with its table and size, largest first, and a total that holds them", async () => {
    const store = await open();
    try {
      const file = join(dir, `sales-${Math.random()}.ndjson`);
      writeFileSync(file, `${Array.from({ length: 2000 }, (_, i) => sale(i)).join("\n")}\n`);
      expect(runCli(["import", "sales", file, "--db", store.target]).status).toBe(0);

      const r = runCli(["stats", "disk", "--db", store.target, "--json"]);
      expect(r.status, r.stderr).toBe(0);
      const usage = JSON.parse(r.stdout) as DiskUsage;
      const byName = new Map(usage.parts.map((p) => [p.name, p]));
      expect(byName.get("sales")).toMatchObject({ table: "sales" });
      expect(byName.get("sales")!.bytes).toBeGreaterThan(2000 * 100);
      expect(byName.get("sales_by_time")).toMatchObject({ table: "sales" });
      expect(byName.get("sales_by_time")!.bytes).toBeGreaterThan(0);
      const sizes = usage.parts.map((p) => p.bytes);
      expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
      expect(usage.total).toBeGreaterThanOrEqual(sizes.reduce((a, b) => a + b, 0));

      const text = runCli(["stats", "disk", "--db", store.target]);
      expect(text.status).toBe(0);
      expect(text.stdout).toMatch(/^sales_by_time +[\d.]+ MB +\d+ +\(index of sales\)$/m);
      expect(text.stdout).toMatch(/^total +[\d.]+ MB$/m);
    } finally {
      await store.drop();
    }
  });
});
