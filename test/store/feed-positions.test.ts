import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importLines } from "../../src/ingest/importer.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import { openReadRepositories, openWritableStore } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import { openWritable } from "../../src/store/sqlite/database.js";
import { WriteStore } from "../../src/store/sqlite/record-writes.js";
import { sqliteAtVersion } from "../support/old-stores.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";

// The positions of the live feeds (store/ports.ts FeedRepository), on both
// engines: every row a write inserts or changes takes a position above
// every one before, in the order of the write's records; a row written
// again unchanged keeps its own. SQLite's migration 6 gives the rows
// already in a store positions in their insertion order.

const C = "0x6666666666666666666666666666666666666666";
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-feed-positions-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function write(target: string, kind: Kind, records: readonly object[]): Promise<void> {
  const store = await openWritableStore(target, { migrateEmpty: true });
  try {
    await importLines(store.records, (async function* () {
      for (const r of records) yield JSON.stringify(r);
    })(), { kind, skipInvalid: false });
  } finally {
    await store.close();
  }
}

const engines: [string, () => Promise<{ target: string; drop(): Promise<void> }>, boolean][] = [
  ["SQLite", async () => ({ target: join(dir, `store-${Math.random()}.sqlite`), drop: async () => {} }), false],
  ["PostgreSQL", async () => {
    const db = await createTestDatabase();
    return { target: db.url, drop: db.drop };
  }, skipPg],
];

describe.each(engines)("feed positions on %s", (_, open, skip) => {
  it.skipIf(skip)("new and changed rows move above every position before, in the records' order; unchanged rows keep theirs", async () => {
    const { target, drop } = await open();
    let repos: ReadRepositories | undefined;
    try {
      const first = [5, 3, 9, 1].map((n) => numberedSale(n, C));
      await write(target, "sales", first);
      repos = await openReadRepositories(target);
      const id = (await repos.collections.collectionId(C))!;
      const one = await repos.feed.sales(id, 0, 100);
      expect(one.map((e) => e.row.hash)).toEqual(first.map((s) => s.hash));
      for (let i = 1; i < one.length; i++) expect(one[i]!.seq).toBeGreaterThan(one[i - 1]!.seq);
      const head = await repos.feed.head("sales", id);
      expect(head).toBe(one.at(-1)!.seq);

      // Unchanged (5), changed (9: a new price), new (7), in this order.
      const changed = Object.assign(numberedSale(9, C), { price: "123000000000000000000" });
      await write(target, "sales", [numberedSale(5, C), changed, numberedSale(7, C)]);
      const two = await repos.feed.sales(id, head, 100);
      expect(two.map((e) => [e.row.hash, e.row.price])).toEqual([
        [changed.hash, "123000000000000000000"],
        [numberedSale(7, C).hash, numberedSale(7, C).price],
      ]);
      expect(two[0]!.seq).toBeGreaterThan(head);
      expect(two[1]!.seq).toBeGreaterThan(two[0]!.seq);
      // Everything, once: the unchanged row where it was, the changed one at its new position.
      const all = await repos.feed.sales(id, 0, 100);
      expect(all.map((e) => e.row.hash)).toEqual([first[0]!.hash, first[1]!.hash, first[3]!.hash, changed.hash, numberedSale(7, C).hash]);
      // Paged: the same rows in pages of two.
      const paged = [];
      for (let after = 0; ; ) {
        const page = await repos.feed.sales(id, after, 2);
        if (page.length === 0) break;
        paged.push(...page);
        after = page.at(-1)!.seq;
      }
      expect(paged).toEqual(all);
      // Listings share the sequence: a listing's position is above the sales'.
      await write(target, "listings", [
        { marketplaceId: "901", marketplace: "BLUR", contractAddress: C, assetId: "8", createdAt: 1_700_000_100, lastUpdatedAt: 1_700_000_100, price: "5", currency: "ETH", status: "CREATED" },
      ]);
      const listings = await repos.feed.listings(id, 0, 10);
      expect(listings.length).toBe(1);
      expect(listings[0]!.seq).toBeGreaterThan(all.at(-1)!.seq);
      expect(await repos.feed.epoch()).toMatch(/^[0-9a-f]{16}$/);
    } finally {
      await repos?.close();
      await drop();
    }
  });
});

describe("SQLite migration 6", () => {
  it("gives the rows already in a store positions in their insertion order, and continues above them", () => {
    const path = join(dir, "v5.sqlite");
    const old = sqliteAtVersion(path, 5);
    old.prepare("INSERT INTO collections (address) VALUES (?)").run(C);
    const sale = old.prepare(
      "INSERT INTO sales (collection_id, asset_key, hash, seller, buyer, timestamp, block, price, amount_received, marketplace) VALUES (1, ?, ?, ?, ?, 1, 1, '1', '1', 'BLUR')",
    );
    for (const n of [1, 2, 3]) sale.run(String(n).padStart(3, "0"), Buffer.alloc(32, n), Buffer.alloc(20, 1), Buffer.alloc(20, 2));
    const listing = old.prepare(
      "INSERT INTO listings (marketplace, marketplace_id, collection_id, asset_key, created_at, last_updated_at, price, status) VALUES ('BLUR', ?, 1, '001', 1, 1, '1', 'CREATED')",
    );
    for (const id of ["a", "b"]) listing.run(id);
    old.close();

    const db = openWritable(path);
    try {
      expect(db.prepare("SELECT feed_seq FROM sales ORDER BY id").pluck().all()).toEqual([1, 2, 3]);
      expect(db.prepare("SELECT feed_seq FROM listings ORDER BY id").pluck().all()).toEqual([4, 5]);
      const state = db.prepare("SELECT feed_seq, feed_epoch FROM store_state").get() as { feed_seq: number; feed_epoch: string };
      expect(state.feed_seq).toBe(5);
      expect(state.feed_epoch).toMatch(/^[0-9a-f]{16}$/);
      // The next write continues above them; a rolled-back one leaves no trace.
      const store = new WriteStore(db);
      expect(() =>
        store.transaction(() => {
          store.upsertSale(numberedSale(8, C) as never);
          throw new Error("rolled back");
        }),
      ).toThrow("rolled back");
      store.transaction(() => store.upsertSale(numberedSale(9, C) as never));
      expect(db.prepare("SELECT max(feed_seq) FROM sales").pluck().get()).toBe(6);
      expect(db.prepare("SELECT feed_seq FROM store_state").pluck().get()).toBe(6);
    } finally {
      db.close();
    }
  });
});
