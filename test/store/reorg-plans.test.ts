import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openWritable, refreshPlannerStats } from "../../src/store/sqlite/database.js";
import { removedByBlocks } from "../../src/store/sqlite/reorgs.js";
import { REMOVED_TABLES, removedByBlocks as pgRemovedByBlocks } from "../../src/store/postgres/reorgs.js";
import { importRecords } from "../support/engine.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";

// A reorganisation's rows are found by block (docs/chains.md): on both
// engines the removal seeks each table's block index on the block, and
// finds each row's collection by its key, so that its cost is that of the
// blocks taken back, neither of the chain's history nor of its
// collections. The store holds many collections and blocks, with planner
// statistics (ANALYZE), as a chain's would.

const COLLECTIONS = 1500;
const PER = 2;

function history(): { sales: object[]; transfers: object[] } {
  const sales: object[] = [];
  const transfers: object[] = [];
  for (let c = 0; c < COLLECTIONS; c++) {
    const address = `0x${(0xc000 + c).toString(16).padStart(40, "0")}`;
    for (let i = 0; i < PER; i++) {
      const n = c * PER + i + 1;
      sales.push({ ...numberedSale(n, address), block: 1000 + n });
      transfers.push({ hash: `0x${n.toString(16).padStart(64, "e")}`, logIndex: 0, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: address, assetId: String(i), timestamp: 1_700_000_000 + n, block: 1000 + n });
    }
  }
  return { sales, transfers };
}

describe("a reorganisation's removal on SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-reorg-plans-"));
  const path = join(dir, "store.sqlite");
  beforeAll(async () => {
    const { sales, transfers } = history();
    await importRecords(path, "sales", sales);
    await importRecords(path, "transfers", transfers);
    const db = openWritable(path);
    refreshPlannerStats(db);
    db.close();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([["sales", false], ["sales", true], ["transfers", false], ["transfers", true]] as const)(
    "of %s (blocks named: %s) seeks the block index on block, each row's collection by its key, and scans nothing",
    (table, named) => {
      const db = openWritable(path);
      try {
        const params = named ? [1, "ethereum", "[]"] : [1, "ethereum"];
        const details = (db.prepare(`EXPLAIN QUERY PLAN ${removedByBlocks(table, named)}`).all(...params) as { detail: string }[]).map((r) => r.detail);
        expect(details.join(" | ")).toMatch(new RegExp(`SEARCH x USING (COVERING )?INDEX ${table}_by_block \\(block>\\?\\)`));
        expect(details.join(" | ")).toMatch(/SEARCH c (EXISTS )?USING INTEGER PRIMARY KEY \(rowid=\?\)/);
        expect(details.filter((d) => /^SCAN (?!json_each)/.test(d))).toEqual([]);
      } finally {
        db.close();
      }
    },
  );
});

describe.skipIf(skipPg)("a reorganisation's removal on PostgreSQL", () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    const { sales, transfers } = history();
    await importRecords(db.url, "sales", sales);
    await importRecords(db.url, "transfers", transfers);
    pool = new pg.Pool({ connectionString: db.url, max: 1 });
    await pool.query("ANALYZE sales; ANALYZE transfers; ANALYZE collections");
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it.each(["sales", "transfers"] as const)(
    "of %s ranges the block index from the reorganisation's block and finds each row's collection by its key",
    async (table) => {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query(REMOVED_TABLES.join(";\n"));
        // As removeStagedBlocks runs it: the reorganisation's values bound.
        const params = [1000 + COLLECTIONS * PER - 3, "ethereum", "[]"];
        const plan = JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${pgRemovedByBlocks(table)}`, params)).rows[0]["QUERY PLAN"]);
        if (process.env.SHOW_PLAN) console.log((await client.query(`EXPLAIN ${pgRemovedByBlocks(table)}`, params)).rows.map((r) => r["QUERY PLAN"]).join("\n"));
        expect(plan).toMatch(new RegExp(`"Index Name":"${table}_by_block",[^{}]*"Index Cond":"\\(block >= '\\d+'::bigint\\)"`));
        expect(plan).toMatch(/"Index Name":"collections_pkey"[^{}]*"Index Cond":"\(id = r\.collection_id\)"/);
        expect(plan).not.toMatch(new RegExp(`"Node Type":"Seq Scan",[^{}]*"Relation Name":"(${table}|collections)"`));
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    },
  );
});
