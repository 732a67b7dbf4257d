import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { dropQuantities, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 43 (SQLite; PostgreSQL's merge judged these listings right, its
// 43 mends nothing): a listing made between a sale and its transaction's
// later transfer was judged by the sale's buyer, whom the transfer replaces
// (decisions.md, "Ownership"), and migration 40's trigger did not judge it
// again when the transfer came. The migration finds such listings again:
// owner unknown at creation, fillable until the transfer moves the token.

const C = `0x${"e3".repeat(20)}`;
const T = 1_700_000_000;
const HASH = `0x${"ab".repeat(32)}`;
const MAKER = `0x${"3".repeat(40)}`;
const SALE = {
  hash: HASH, contractAddress: C, assetId: "1", timestamp: T, block: 100, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
  price: "7", amountReceived: "7", currency: "ETH", marketplace: "BLUR",
};
const LISTING = {
  marketplaceId: "9001", marketplace: "BLUR", contractAddress: C, assetId: "1", createdAt: T + 5, lastUpdatedAt: T + 5,
  price: "3", currency: "ETH", status: "CREATED", maker: MAKER, expiresAt: 0,
};
const TRANSFER = { hash: HASH, logIndex: 0, contractAddress: C, assetId: "1", timestamp: T + 10, block: 101, from: `0x${"2".repeat(40)}`, to: MAKER };

async function answerOf(target: string) {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const { rows } = await repos.listings.listingsPage(id, {}, { limit: 10, after: null });
    return rows.map((r) => ({ status: r.status, lastUpdatedAt: r.lastUpdatedAt }));
  } finally {
    await repos.close();
  }
}

describe("migration 43 (sqlite)", () => {
  it("judges again a listing made between a sale and its transaction's later transfer", async () => {
    const store = await emptyStore("sqlite");
    try {
      await importRecords(store.target, "sales", [SALE]);
      await importRecords(store.target, "listings", [LISTING]);
      await importRecords(store.target, "transfers", [TRANSFER]);
      const right = [{ status: "CANCELLED", lastUpdatedAt: T + 10 }];
      expect(await answerOf(store.target)).toEqual(right);

      // The store as migration 40's trigger left it: ended at its creation (the sale's buyer was not its maker).
      const db = new Database(store.target);
      db.prepare("UPDATE listings SET moved_at = created_at").run();
      db.close();
      expect(await answerOf(store.target)).toEqual([{ status: "CANCELLED", lastUpdatedAt: T + 5 }]);

      await dropQuantities(store.target);
      await setSchemaVersion(store.target, 42);
      expect(await migrateStore(store.target)).toMatchObject({ from: 42 });
      expect(await answerOf(store.target)).toEqual(right);
    } finally {
      await store.cleanup();
    }
  });
});
