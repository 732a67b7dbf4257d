import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openReadOnly, type Db } from "../../src/store/database.js";
import { ReadStore, type ListingsFilter, type SalesFilter } from "../../src/store/read-store.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";

// Every query the service can run is served by an index: no table scan, no
// temporary sort, no OFFSET. The queries are collected by exercising every
// read path and filter combination, then explained.

let f: Fixture;
let db: Db;
let store: ReadStore;

beforeAll(() => {
  f = buildFixture();
  db = openReadOnly(f.dbPath);
  store = new ReadStore(db);
  const id = store.collectionId(COLLECTION)!;
  const pages = [
    { limit: 5, after: null },
    { limit: 5, after: null },
  ];
  store.appraisalsPage(id, pages[0]!);
  store.appraisalsPage(id, { limit: 5, after: ["7"] });
  store.appraisalsByAsset(id, ["1", "7"]);
  store.rarityPage(id, pages[0]!);
  store.rarityPage(id, { limit: 5, after: [3, "14"] });
  store.rarityByAsset(id, ["1", "7"]);
  const saleFilters: SalesFilter[] = [];
  for (const assetId of [undefined, "7"])
    for (const marketplace of [undefined, "BLUR"])
      for (const since of [undefined, 1])
        for (const until of [undefined, 2]) saleFilters.push({ assetId, marketplace, since, until });
  for (const filter of saleFilters) {
    store.salesPage(id, filter, pages[0]!);
    store.salesPage(id, filter, { limit: 5, after: [1_700_000_000, 18_000_000, "0x00", "1"] });
    store.salesSummary(id, filter);
  }
  for (const assetId of [undefined, "7"])
    for (const marketplace of [undefined, "BLUR"])
      for (const status of [undefined, "CREATED" as const]) {
        const filter: ListingsFilter = { assetId, marketplace, status };
        store.listingsPage(id, filter, pages[0]!);
        store.listingsPage(id, filter, { limit: 5, after: [1_700_000_000, "BLUR", "901"] });
      }
  store.topInfluencers(id, 5);
  store.topTweets(id, 5);
  store.score(id);
});
afterAll(() => {
  db.close();
  f.cleanup();
});

function plan(sql: string): string[] {
  const params = Array((sql.match(/\?/g) ?? []).length).fill(1);
  return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail);
}

describe("query plans", () => {
  it("exercised every read path", () => {
    expect(store.preparedSql().length).toBeGreaterThan(60);
  });

  it("no query scans a table, sorts in a temporary b-tree, or uses OFFSET", () => {
    const problems: string[] = [];
    for (const sql of store.preparedSql()) {
      // The slow exact-sum path reads the same index range as the fast one.
      const details = plan(sql);
      for (const d of details) {
        const tableScan = /^SCAN (?!json_each)/.test(d) && !/USING (COVERING )?INDEX/.test(d);
        if (tableScan || /TEMP B-TREE/.test(d)) problems.push(`${d}\n  in: ${sql.replace(/\s+/g, " ")}`);
      }
      if (/\bOFFSET\b/i.test(sql)) problems.push(`OFFSET in ${sql}`);
    }
    expect(problems).toEqual([]);
  });

  it("pages after a token seek to the token's position in the index", () => {
    const keyset = store.preparedSql().filter((sql) => /asset_key > \?|asset_key\) > \(|timestamp <= \? AND \(|created_at <= \? AND \(/.test(sql));
    expect(keyset.length).toBeGreaterThanOrEqual(2 + 16 + 8);
    for (const sql of keyset) {
      expect(plan(sql).join(" | "), sql).toMatch(/SEARCH \w+ USING .*(asset_key>|\(rarity_rank,asset_key\)>|timestamp<|created_at<)/);
    }
  });
});
