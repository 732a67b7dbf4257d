import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openReadRepositories, openWritableStore } from "../../src/store/open.js";
import { migratePg, openPool } from "../../src/store/postgres/database.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { pgAtVersion, sqliteAtVersion } from "../support/old-stores.js";
import { createTestDatabase, skipPg } from "../support/pg.js";

// A store written before the analytics existed (SQLite 6, PostgreSQL 5)
// migrates to one that answers them from what it already held: owners'
// counts, listing versions and spans, series; and a rebuild finds nothing
// to fix in what the migration computed.

const C = `0x${"a".repeat(40)}`;
const OWNER = (n: number) => `0x${String(n).repeat(40)}`;
const HOUR = 1_700_006_400;

/** Rows every old store gets: 4 tokens (2 owners, one unknown), 3 listings, 3 sales (each to its token's buyer, BUYER). */
const ROWS = {
  tokens: [
    ["1", OWNER(1)],
    ["2", OWNER(1)],
    ["3", ""],
    ["4", OWNER(2)],
  ],
  // marketplace, id, created, updated, price, status, asset (11: never sold)
  listings: [
    ["BLUR", "1", HOUR, HOUR + 100, "50", "FULFILLED", "11"],
    ["BLUR", "2", HOUR + 10, HOUR + 10, "70", "CREATED", "11"],
    ["OPENSEA", "3", HOUR, HOUR, "60", "CREATED", "11"],
    // Token 1 was sold at HOUR + 5: this listing ends there (fillable listings).
    ["BLUR", "4", HOUR, HOUR, "40", "CREATED", "1"],
  ],
  // hash byte, asset, timestamp, price, marketplace
  sales: [
    [1, "1", HOUR + 5, "10", "BLUR"],
    [2, "2", HOUR + 7200, "30", "OPENSEA"],
    [3, "1", HOUR + 86_400, "20", "BLUR"],
  ],
} as const;

/** The buyer of an asset's sales: token 1 stays with OWNER(1), token 2 goes to OWNER(2). */
const BUYER = (asset: string) => Buffer.from(OWNER(Number(asset)).slice(2), "hex");

/** The running totals per marketplace and hour of ROWS.sales (sales-stats.ts). */
function hoursOf(): [string, number, number, string][] {
  const out: [string, number, number, string][] = [];
  const cum = new Map<string, [number, bigint]>();
  for (const [, , t, price, m] of [...ROWS.sales].sort((a, b) => a[2] - b[2])) {
    const [n, v] = cum.get(m) ?? [0, 0n];
    cum.set(m, [n + 1, v + BigInt(price)]);
    out.push([m, Math.floor(t / 3600), n + 1, String(v + BigInt(price))]);
  }
  return out;
}

async function expectAnswers(target: string): Promise<void> {
  const store = await openWritableStore(target);
  const read = await openReadRepositories(target);
  try {
    const id = (await read.collections.collectionId(C))!;
    const holders = await read.analytics.holders(id, { limit: 10, after: null });
    // Token 2's record said OWNER(1), but it was sold to OWNER(2) since (ownership migration).
    expect(holders).toEqual({
      totalTokens: 4, numHolders: 2, page: { rows: [{ address: OWNER(2), tokens: 2 }, { address: OWNER(1), tokens: 1 }], nextKey: null },
      distribution: [{ min: 1, max: 1, wallets: 1, tokens: 1 }, { min: 2, max: 5, wallets: 1, tokens: 2 }, { min: 6, max: 20, wallets: 0, tokens: 0 }, { min: 21, max: 0, wallets: 0, tokens: 0 }],
    });
    const prices = async (at?: number) => (await read.analytics.floors(id, { at })).map((f) => [f.marketplace, f.marketplaceId, f.price]);
    expect(await prices()).toEqual([["BLUR", "2", "70"], ["OPENSEA", "3", "60"]]);
    // Before listing 1 was fulfilled, it was BLUR's floor; before token 1 was sold, listing 4 was.
    expect(await prices(HOUR + 50)).toEqual([["BLUR", "1", "50"], ["OPENSEA", "3", "60"]]);
    expect(await prices(HOUR + 2)).toEqual([["BLUR", "4", "40"], ["OPENSEA", "3", "60"]]);
    const four = (await read.listings.listingsPage(id, { marketplace: "BLUR" }, { limit: 10, after: null })).rows.find((l) => l.marketplaceId === "4");
    expect(four).toMatchObject({ status: "CANCELLED", lastUpdatedAt: HOUR + 5 });
    const days = await read.analytics.series(id, { interval: "day", from: HOUR - (HOUR % 86_400), to: HOUR - (HOUR % 86_400) + 86_400 });
    expect(days.map((d) => [d.n, d.volume, d.min, d.max, d.firstPrice, d.lastPrice])).toEqual([
      [2, "40", "10", "30", "10", "30"],
      [1, "20", "20", "20", "20", "20"],
    ]);
    expect((await store.rebuildStats(undefined, true)).changed).toBe(0);
    // Writes after the migration keep the counts (the triggers took over).
    const { importLines } = await import("../../src/ingest/importer.js");
    const line = JSON.stringify({ contractAddress: C, assetId: "4", currentOwner: OWNER(1), attributes: [] });
    await importLines(store.records, (async function* () { yield line; })(), { kind: "tokens", skipInvalid: false });
    const after = await read.analytics.holders(id, { limit: 10, after: null });
    expect(after.page.rows).toEqual([{ address: OWNER(1), tokens: 2 }, { address: OWNER(2), tokens: 1 }]);
  } finally {
    await store.close();
    await read.close();
  }
}

describe("analytics migration on SQLite (7)", () => {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-analytics-migration-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("answers floor, holders and series from what an older store held", async () => {
    const path = join(dir, "v6.sqlite");
    const old = sqliteAtVersion(path, 6);
    old.prepare("INSERT INTO collections (address) VALUES (?)").run(C);
    const key = (id: string) => `${String(id.length).padStart(2, "0")}${id}`;
    for (const [asset, owner] of ROWS.tokens) old.prepare("INSERT INTO tokens (collection_id, asset_key, current_owner) VALUES (1, ?, ?)").run(key(asset), owner);
    for (const [m, id, created, updated, price, status, asset] of ROWS.listings) {
      old.prepare(
        "INSERT INTO listings (marketplace, marketplace_id, collection_id, asset_key, created_at, last_updated_at, price, status) VALUES (?, ?, 1, ?, ?, ?, ?, ?)",
      ).run(m, id, key(asset), created, updated, price, status);
    }
    for (const [h, asset, t, price, m] of ROWS.sales) {
      old.prepare(
        `INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, price_hi, price_lo, marketplace)
         VALUES (1, ?, ?, ?, ?, ?, 1, ?, '0', 0, ?, ?)`,
      ).run(key(asset), Buffer.alloc(32, h), Buffer.alloc(20, 1), BUYER(asset), t, price, Number(price), m);
    }
    // The stats hours an older store kept with its sales.
    for (const [m, hour, n, v] of hoursOf()) {
      old.prepare("INSERT INTO sales_hourly VALUES (1, ?, ?, ?, ?)").run(m, hour, n, v);
    }
    old.close();
    await expectAnswers(path);
  });
});

describe.skipIf(skipPg)("analytics migration on PostgreSQL (6)", () => {
  it("answers floor, holders and series from what an older store held", async () => {
    const db = await createTestDatabase();
    const p = openPool(db.url, 2);
    try {
      await pgAtVersion(p, 5);
      await p.query("INSERT INTO collections (address) VALUES ($1)", [C]);
      await p.query("CREATE TABLE sales_c1 PARTITION OF sales FOR VALUES IN (1)");
      for (const [asset, owner] of ROWS.tokens) await p.query("INSERT INTO tokens (collection_id, asset_id, current_owner) VALUES (1, $1, $2)", [asset, owner]);
      for (const [m, id, created, updated, price, status, asset] of ROWS.listings) {
        await p.query(
          "INSERT INTO listings (marketplace, marketplace_id, collection_id, asset_id, created_at, last_updated_at, price, status) VALUES ($1, $2, 1, $3, $4, $5, $6, $7)",
          [m, id, asset, created, updated, price, status],
        );
      }
      for (const [h, asset, t, price, m] of ROWS.sales) {
        await p.query(
          `INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
           VALUES (1, $1, $2, $3, $4, $5, 1, $6, 0, $7)`,
          [asset, Buffer.alloc(32, h), Buffer.alloc(20, 1), BUYER(asset), t, price, m],
        );
      }
      for (const [m, hour, n, v] of hoursOf()) await p.query("INSERT INTO sales_hourly VALUES (1, $1, $2, $3, $4)", [m, hour, n, v]);
      expect(await migratePg(p)).toEqual({ from: 5, to: PG_MIGRATIONS.length });
      await expectAnswers(db.url);
    } finally {
      await p.end();
      await db.drop();
    }
  });
});
