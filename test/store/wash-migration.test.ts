import { describe, expect, it } from "vitest";
import Database from "better-sqlite3";
import pg from "pg";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { isPostgresUrl } from "../../src/store/postgres/database.js";
import { freshSeriesSql } from "../../src/store/postgres/sales-series.js";
import { freshHourlySql } from "../../src/store/postgres/sales-stats.js";
import { SalesAggregates } from "../../src/store/sqlite/sales-stats.js";
import { toSale } from "../../src/domain/wire/messages.js";
import { DEFAULT_CHAIN } from "../../src/domain/chains.js";
import { BOTH_ENGINES, dropSaleMoney, dropWashFlags, dropWashSummaries, emptyStore, execSql, firstRow, importRecords, setSchemaVersion } from "../support/engine.js";
import { skipPg } from "../support/pg.js";

// Migration 29 (docs/wash-trades.md) on both engines: a store whose sales
// were written before wash flags answers, once migrated, the flags this build
// writes for the same sales, and its stats leave the flagged ones out; a
// sale written afterwards is evaluated with them. Migration 30: a store
// without the collections list's summaries with wash has them kept for
// every collection, and the writes keep them from there. Migration 31
// (docs/money.md): the sales already held answer ETH and untold fees.

const C = `0x${"cd".repeat(20)}`;
const W = ["1", "2", "3"].map((c) => `0x${c.repeat(40)}`);
const sale = (n: number, from: number, to: number, day: number, assetId = "1") => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, from: W[from], to: W[to], contractAddress: C, assetId,
  timestamp: 1_750_000_000 + day * 86_400, block: 100 + day, price: "1000", amountReceived: "1000", currency: "ETH", marketplace: "BLUR",
});

/** Each sale's flags, by its hash, through the read path. */
async function flagsOf(target: string): Promise<Record<string, string[]>> {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const rows = (await repos.sales.salesPage(id, {}, { limit: 50, after: null })).rows;
    return Object.fromEntries(rows.map((r) => [r.hash.slice(-2), toSale(r).washFlags]));
  } finally {
    await repos.close();
  }
}

/** Takes the store back to schema 28: no wash flags. */
async function asBefore29(target: string): Promise<void> {
  await dropWashFlags(target);
  // Its aggregates as a build before 29 kept them: of every sale.
  if (isPostgresUrl(target)) {
    const client = new pg.Client({ connectionString: target });
    await client.connect();
    try {
      await client.query(`DELETE FROM sales_hourly; INSERT INTO sales_hourly ${freshHourlySql("true")};
        DELETE FROM sales_series; INSERT INTO sales_series ${freshSeriesSql("true", "sales", false)}`);
    } finally {
      await client.end();
    }
  } else {
    const db = new Database(target);
    new SalesAggregates(db).rebuild();
    db.close();
  }
  await setSchemaVersion(target, 28);
}

/** The collection's stats: their sale count. */
async function salesCounted(target: string): Promise<number> {
  const repos = await openReadRepositories(target);
  try {
    return (await repos.sales.salesSummary((await repos.collections.collectionId(C))!, {})).totalNumSales;
  } finally {
    await repos.close();
  }
}

describe.each([
  { engine: "sqlite" as const, skip: false },
  { engine: "postgres" as const, skip: skipPg },
])("migration 29 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("flags the sales already held as the writes would, and the writes go on from there", async () => {
    const store = await emptyStore(engine);
    try {
      // A self trade (of token 2), and a back-and-forth of token 1 (02 and 03); 04 sells it on, 45 days later.
      await importRecords(store.target, "sales", [sale(1, 0, 0, 0, "2"), sale(2, 0, 1, 1), sale(3, 1, 0, 5), sale(4, 0, 2, 50)]);
      const fresh = await flagsOf(store.target);
      expect(fresh).toEqual({ "01": ["self_trade"], "02": ["back_and_forth"], "03": ["back_and_forth"], "04": [] });
      expect(await salesCounted(store.target)).toBe(1);
      await asBefore29(store.target);
      expect(await firstRow(store.target, "SELECT sum(num_sales) AS n FROM sales_series WHERE marketplace = '' AND span = 3600")).toEqual({ n: 4 });
      expect(await migrateStore(store.target)).toMatchObject({ from: 28 });
      expect(await flagsOf(store.target)).toEqual(fresh);
      // The aggregates counted again without the flagged sales.
      expect(await salesCounted(store.target)).toBe(1);
      // After the migration a new sale is evaluated with the migrated ones: 05 sends token 1 back from wallet 3 to wallet 1, 10 days after 04.
      await importRecords(store.target, "sales", [sale(5, 2, 0, 60)]);
      expect(await flagsOf(store.target)).toEqual({ ...fresh, "04": ["back_and_forth"], "05": ["back_and_forth"] });
    } finally {
      await store.cleanup();
    }
  });
});

/** The collections list's row of C: its 30-day sales, of clean sales or with wash. */
async function listed(target: string, includeWash: boolean): Promise<number | undefined> {
  const repos = await openReadRepositories(target);
  try {
    const { page } = await repos.collectionList.collectionsPage({ chain: DEFAULT_CHAIN, sort: "volume1d", query: C, includeWash }, { limit: 5, after: null });
    return page.rows[0]?.sales30d;
  } finally {
    await repos.close();
  }
}

describe.each([
  { engine: "sqlite" as const, skip: false },
  { engine: "postgres" as const, skip: skipPg },
])("migration 30 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("keeps every collection's summary with wash, and the writes keep it from there", async () => {
    const store = await emptyStore(engine);
    try {
      // Within the 30-day windows: a self trade and a clean sale.
      const day = Math.floor((Date.now() / 1000 - 1_750_000_000) / 86_400) - 2;
      await importRecords(store.target, "sales", [sale(1, 0, 0, day, "2"), sale(2, 0, 1, day)]);
      expect([await listed(store.target, false), await listed(store.target, true)]).toEqual([1, 2]);
      await dropWashSummaries(store.target);
      // A clean summary as a store migrated to 29 may hold it (kept before its flagged sales left the aggregates): kept again.
      await execSql(store.target, "UPDATE collection_summaries SET sales_30d = 99");
      await setSchemaVersion(store.target, 29);
      expect(await migrateStore(store.target)).toMatchObject({ from: 29 });
      expect([await listed(store.target, false), await listed(store.target, true)]).toEqual([1, 2]);
      // Another self trade, of token 3.
      await importRecords(store.target, "sales", [sale(3, 1, 1, day, "3")]);
      expect([await listed(store.target, false), await listed(store.target, true)]).toEqual([1, 3]);
    } finally {
      await store.cleanup();
    }
  });
});

describe.each(BOTH_ENGINES)("migration 31 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("answers the sales already held as paid in ETH with no fees told, in rows and in kept JSON, and a sale written after it with its own", async () => {
    const store = await emptyStore(engine);
    try {
      await importRecords(store.target, "sales", [sale(1, 0, 1, 1)]);
      // The store as a build before 31 left it: no columns, and a kept JSON that ends with the wash fields' place.
      await dropSaleMoney(store.target);
      await execSql(store.target, `UPDATE sales SET wire_json = replace(wire_json, ',"marketplaceFee":"","royaltyFee":""', '')`);
      expect(await firstRow(store.target, "SELECT count(*) AS n FROM sales WHERE wire_json LIKE '%Fee%'")).toEqual({ n: 0 });
      await setSchemaVersion(store.target, 30);
      expect(await migrateStore(store.target)).toMatchObject({ from: 30 });
      await importRecords(store.target, "sales", [{ ...sale(2, 1, 2, 2), currency: "WETH", marketplaceFee: "25", royaltyFee: "50" }]);
      const repos = await openReadRepositories(store.target);
      try {
        const id = (await repos.collections.collectionId(C))!;
        const rows = (await repos.sales.salesPage(id, {}, { limit: 50, after: null })).rows.map((r) => toSale(r));
        const kept = (await repos.sales.salesPage(id, {}, { limit: 50, after: null }, "json")).rows.map((f) => JSON.parse(String(f)) as Record<string, unknown>);
        for (const answers of [rows, kept]) {
          expect(answers.map((a) => [a.currency, a.marketplaceFee, a.royaltyFee])).toEqual([["WETH", "25", "50"], ["ETH", "", ""]]);
        }
        // The kept JSON in the writer's field order.
        expect(Object.keys(kept[1]!).slice(-7)).toEqual(["finality", "washFlags", "washScore", "marketplaceFee", "royaltyFee", "priceUsd", "quantity"]);
      } finally {
        await repos.close();
      }
    } finally {
      await store.cleanup();
    }
  });
});
