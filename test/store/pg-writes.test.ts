import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ImportCancelled } from "../../src/ingest/importer.js";
import { importLines } from "../../src/ingest/importer.js";
import { PgRecordImport } from "../../src/store/postgres/importer.js";
import { migratePg, openPool } from "../../src/store/postgres/database.js";
import { pgRepositories } from "../../src/store/postgres/read-repositories.js";
import { runCli } from "../cli/run-cli.js";
import { VALID } from "../ingest/records.js";
import { createTestDatabase, skipPg } from "../support/pg.js";

// The write side on PostgreSQL (issue 10): import (COPY + merge) through the
// CLI, counts, atomicity, the last line of a repeated key winning, the stats
// aggregates kept exact through inserts and moves (checked by `stats
// rebuild --check` and against an oracle), derive, and plain errors.

const C = "0x00000000000000000000000000000000000000c1";
const sale = (i: number, over: Partial<Record<string, unknown>> = {}) => ({
  ...VALID.sales,
  hash: `0x${i.toString(16).padStart(64, "0")}`,
  contractAddress: C,
  assetId: String(i % 7),
  timestamp: 1_700_000_000 + i * 1800,
  block: 18_000_000 + i,
  price: (10n ** 30n + BigInt(i)).toString(),
  amountReceived: "1",
  marketplace: ["OPENSEA", "BLUR"][i % 2],
  ...over,
});
const ndjson = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join("\n") + "\n";

async function* lines(rows: object[]): AsyncIterable<string> {
  for (const r of rows) yield JSON.stringify(r);
}

describe.skipIf(skipPg)("PostgreSQL writes", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  let dir: string;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = openPool(db.url, 2);
    dir = mkdtempSync(join(tmpdir(), "pg-writes-"));
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const file = (name: string, rows: object[] | string) => {
    const path = join(dir, name);
    writeFileSync(path, typeof rows === "string" ? rows : ndjson(rows));
    return path;
  };
  const totals = async () => {
    const repos = pgRepositories(openPool(db.url, 1), db.url);
    try {
      const id = (await repos.collections.collectionId(C))!;
      return await repos.sales.salesSummary(id, {});
    } finally {
      await repos.close();
    }
  };

  it("derive on a database without the schema says to migrate", () => {
    const r = runCli(["derive", "--db", db.url]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/schema version 0, this build needs \d+; run "marketdata migrate --db URL"/);
  });

  it("import migrates an empty database, counts inserted, updated and unchanged, and the last line of a key wins", async () => {
    const first = runCli(["import", "--db", db.url, "sales", file("a.ndjson", [sale(1), sale(2), sale(3)])]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/3 rows read, 3 inserted, 0 updated, 0 unchanged, 0 rejected/);
    // sale 2 repeated: its last line (price 5) wins; sale 3 unchanged; sale 4 new.
    const second = runCli(["import", "--db", db.url, "sales", file("b.ndjson", [sale(2, { price: "4" }), sale(2, { price: "5" }), sale(3), sale(4)])]);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/4 rows read, 1 inserted, 1 updated, 2 unchanged, 0 rejected/);
    const price = await pool.query("SELECT price::text AS p FROM sales WHERE block = 18000002");
    expect(price.rows[0].p).toBe("5");
  });

  it("a bad line rolls the whole file back; --skip-invalid keeps the valid lines", async () => {
    const before = await pool.query("SELECT count(*)::int AS n, (SELECT data_version FROM store_state) AS v FROM sales");
    const bad = file("bad.ndjson", `${JSON.stringify(sale(10))}\n{"hash": 1}\n`);
    const r = runCli(["import", "--db", db.url, "sales", bad]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/1 of 2 lines invalid; nothing was written/);
    expect((await pool.query("SELECT count(*)::int AS n, (SELECT data_version FROM store_state) AS v FROM sales")).rows).toEqual(before.rows);
    const skip = runCli(["import", "--db", db.url, "--skip-invalid", "sales", bad]);
    expect(skip.status, skip.stderr).toBe(0);
    expect(skip.stderr).toMatch(/2 rows read, 1 inserted, 0 updated, 0 unchanged, 1 rejected/);
  });

  it("a cancelled import writes nothing", async () => {
    const before = (await pool.query("SELECT count(*)::int AS n FROM sales")).rows[0].n;
    const rows = Array.from({ length: 30_000 }, (_, i) => sale(1000 + i));
    let n = 0;
    await expect(importLines(new PgRecordImport(pool), lines(rows), { kind: "sales", skipInvalid: false, cancelled: () => ++n > 1 })).rejects.toBeInstanceOf(
      ImportCancelled,
    );
    expect((await pool.query("SELECT count(*)::int AS n FROM sales")).rows[0].n).toBe(before);
    // The pool is still usable after a COPY was cut short.
    expect((await pool.query("SELECT 1 AS one")).rows[0].one).toBe(1);
  });

  it("keeps the stats aggregates exact through inserts, moves between hours and marketplaces, and amounts past 2^256 sums", async () => {
    const rows = Array.from({ length: 200 }, (_, i) => sale(100 + i, { price: (2n ** 255n + BigInt(i)).toString() }));
    await importLines(new PgRecordImport(pool), lines(rows), { kind: "sales", skipInvalid: false });
    // Move some sales back in time and to another marketplace.
    const moved = rows.slice(0, 50).map((r, i) => ({ ...r, timestamp: 1_600_000_000 + i * 7, marketplace: "LOOKSRARE" }));
    await importLines(new PgRecordImport(pool), lines(moved), { kind: "sales", skipInvalid: false });
    const all = await pool.query<{ marketplace: string; n: number; v: string }>(
      // The sales the aggregates hold: those no wash rule flags (docs/wash-trades.md).
      "SELECT marketplace, count(*)::int AS n, sum(price)::text AS v FROM sales WHERE wash_flags = 0 GROUP BY marketplace",
    );
    const summary = await totals();
    const expected = new Map(all.rows.map((r) => [r.marketplace, { n: r.n, v: r.v }]));
    expect(summary.groups.map((g) => [g.marketplace, { n: g.totalNumSales, v: g.totalVolume }]).sort()).toEqual([...expected].sort());
    const check = runCli(["stats", "rebuild", "--db", db.url, "--check"]);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stderr).toMatch(/consistent with the sales/);
  });

  it("stats rebuild finds and fixes aggregates broken by a manual repair of the sales table", async () => {
    await pool.query("DELETE FROM sales WHERE block = (SELECT max(block) FROM sales)");
    const check = runCli(["stats", "rebuild", "--db", db.url, "--check"]);
    expect(check.status).toBe(1);
    expect(check.stderr).toMatch(/aggregate row\(s\) \(hours, series\) differ from the sales/);
    const fix = runCli(["stats", "rebuild", "--db", db.url, "--collection", C]);
    expect(fix.status, fix.stderr).toBe(0);
    expect(runCli(["stats", "rebuild", "--db", db.url, "--check"]).status).toBe(0);
  });

  it("derive writes rarity and appraisals, keeps imported rows, and bumps the data version", async () => {
    const tokens = Array.from({ length: 7 }, (_, i) => ({
      contractAddress: C,
      assetId: String(i),
      currentOwner: "",
      attributes: [{ trait_type: "Fur", value: i % 2 === 0 ? "Gold" : "Brown" }],
    }));
    expect(runCli(["import", "--db", db.url, "tokens", file("t.ndjson", tokens)]).status).toBe(0);
    const imported = { ...VALID.appraisals, contractAddress: C, assetId: "3", fairMarketValue: "42" };
    expect(runCli(["import", "--db", db.url, "appraisals", file("ap.ndjson", [imported])]).status).toBe(0);
    const v0 = (await pool.query("SELECT data_version AS v FROM store_state")).rows[0].v;
    const r = runCli(["derive", "--db", db.url, "--collection", C]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/rarity of 7 tokens/);
    expect(r.stderr).toMatch(/appraisals: kept 1 imported rows/);
    const counts = await pool.query("SELECT source, count(*)::int AS n FROM appraisals GROUP BY source ORDER BY source");
    expect(counts.rows).toEqual([{ source: "derived", n: 6 }, { source: "imported", n: 1 }]);
    expect((await pool.query("SELECT count(*)::int AS n FROM rarity")).rows[0].n).toBe(7);
    expect((await pool.query("SELECT data_version AS v FROM store_state")).rows[0].v).toBeGreaterThan(v0);
    const again = runCli(["derive", "--db", db.url, "--collection", C, "--replace-imported"]);
    expect(again.status, again.stderr).toBe(0);
    expect((await pool.query("SELECT count(*)::int AS n FROM appraisals WHERE source = 'imported'")).rows[0].n).toBe(0);
  });

  it("demo builds into another database, and a second migrate has nothing to do", async () => {
    const other = await createTestDatabase();
    try {
      const r = runCli(["demo", "--db", other.url, "--scale", "small"]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/demo store postgres:\/\/.* ready/);
      const p = openPool(other.url, 1);
      try {
        // Nothing to do: the demo left the database at this build's schema.
        expect(await migratePg(p)).toEqual({ from: PG_MIGRATIONS.length, to: PG_MIGRATIONS.length });
        expect((await p.query("SELECT count(*)::int AS n FROM sales")).rows[0].n).toBeGreaterThan(1000);
      } finally {
        await p.end();
      }
    } finally {
      await other.drop();
    }
  });
});
