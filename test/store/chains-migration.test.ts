import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openReadRepositories } from "../../src/store/open.js";
import { migratePg, openPool } from "../../src/store/postgres/database.js";
import { openWritable } from "../../src/store/sqlite/database.js";
import { importRecords } from "../support/engine.js";
import { pgAtVersion, sqliteAtVersion } from "../support/old-stores.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";

// Migration 20 on both engines (docs/chains.md): a store written before
// chains keeps every collection, under its id, as Ethereum's; its rows read
// as before; the same address can then be registered on another chain.

const C = `0x${"ab".repeat(20)}`;
const BEFORE_CHAINS = 19;

async function readsAsBefore(target: string): Promise<void> {
  // Its sale, read through the collection now named (ethereum, address); none yet on Base.
  const repos = await openReadRepositories(target);
  try {
    expect(await repos.collections.collectionId(C)).toBe(1);
    expect(await repos.collections.collectionId(`base:${C}`)).toBeUndefined();
    expect((await repos.sales.salesSummary(1, {})).totalNumSales).toBe(1);
  } finally {
    await repos.close();
  }
  // The same address on Base is another collection.
  await importRecords(target, "sales", [{ ...numberedSale(2, C), chain: "base" }]);
  const after = await openReadRepositories(target);
  try {
    // A new id (PostgreSQL's identity may have skipped some).
    const base = await after.collections.collectionId(`base:${C}`);
    expect(base).toBeGreaterThan(1);
    expect((await after.sales.salesSummary(1, {})).totalNumSales).toBe(1);
    expect((await after.sales.salesSummary(base!, {})).totalNumSales).toBe(1);
  } finally {
    await after.close();
  }
}

describe("SQLite's migration 20", () => {
  it("keeps every collection under its id as Ethereum's, its rows with it, and foreign keys on after it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-chains-old-"));
    try {
      const path = join(dir, "old.sqlite");
      const old = sqliteAtVersion(path, BEFORE_CHAINS);
      old.prepare("INSERT INTO collections (address, name) VALUES (?, 'Apes')").run(C);
      old.prepare("INSERT INTO scores (collection_id, hype, gains, community, total) VALUES (1, 1, 2, 3, 6)").run();
      old.close();
      const db = openWritable(path);
      try {
        expect(db.prepare("SELECT id, chain, address, name FROM collections").all()).toEqual([{ id: 1, chain: "ethereum", address: C, name: "Apes" }]);
        expect(db.prepare("SELECT collection_id, total FROM scores").all()).toEqual([{ collection_id: 1, total: 6 }]);
        expect(db.pragma("foreign_keys", { simple: true })).toBe(1);
        expect(db.pragma("foreign_key_check")).toEqual([]);
        // Still enforced: a row naming no collection is refused.
        expect(() => db.prepare("INSERT INTO scores (collection_id, hype, gains, community, total) VALUES (99, 0, 0, 0, 0)").run()).toThrow(/FOREIGN KEY/);
      } finally {
        db.close();
      }
      await importRecords(path, "sales", [numberedSale(1, C)]);
      await readsAsBefore(path);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skipPg)("PostgreSQL's migration 20", () => {
  it("keeps every collection under its id as Ethereum's, and takes the same address on another chain", async () => {
    const d = await createTestDatabase();
    const pool: pg.Pool = openPool(d.url, 2);
    try {
      await pgAtVersion(pool, BEFORE_CHAINS);
      await pool.query("INSERT INTO collections (address, name) VALUES ($1, 'Apes')", [C]);
      await migratePg(pool);
      expect((await pool.query("SELECT id, chain, address, name FROM collections")).rows).toEqual([{ id: 1, chain: "ethereum", address: C, name: "Apes" }]);
      await importRecords(d.url, "sales", [numberedSale(1, C)]);
      await readsAsBefore(d.url);
    } finally {
      await pool.end();
      await d.drop();
    }
  });
});

describe("SQLite's migration 21", () => {
  it("answers the block hash of every sale already stored, \"\" for none, and leaves an answer that has it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-block-hash-old-"));
    try {
      const path = join(dir, "old.sqlite");
      const old = sqliteAtVersion(path, 20);
      old.prepare("INSERT INTO collections (address) VALUES (?)").run(C);
      const insert = old.prepare(
        `INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, marketplace, wire_json)
         VALUES (1, ?, ?, ?, ?, 1, 1, '1', '1', 'OPENSEA', ?)`,
      );
      insert.run("001", Buffer.alloc(32, 1), Buffer.alloc(20, 1), Buffer.alloc(20, 2), '{"n":1}');
      insert.run("002", Buffer.alloc(32, 2), Buffer.alloc(20, 1), Buffer.alloc(20, 2), '{"n":2,"blockHash":""}');
      old.close();
      const db = openWritable(path);
      try {
        expect(db.prepare("SELECT wire_json FROM sales ORDER BY asset_key").pluck().all()).toEqual(['{"n":1,"blockHash":""}', '{"n":2,"blockHash":""}']);
        expect(db.prepare("SELECT count(*) FROM sales WHERE block_hash IS NULL").pluck().get()).toBe(2);
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
