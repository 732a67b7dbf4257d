import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { toListing } from "../../src/domain/wire/messages.js";
import { listingFragment } from "../../src/domain/wire/fragments.js";
import { BOTH_ENGINES, dropListingOrders, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 40 (decisions.md, "Listings as orders") on both engines: the
// listings already held answer no maker and no expiry, in rows and in their
// kept JSON alike (their ready answers written again), a record logged
// before it replays as it was, and a listing written after it answers its
// own maker and expiry.

const C = `0x${"c4".repeat(20)}`;
const NOW = Math.floor(Date.now() / 1000) - 3600;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const listing = (id: string, price: string, block: number, extra: object = {}) => ({
  marketplaceId: id, marketplace: "OPENSEA", contractAddress: C, assetId: id, createdAt: NOW, lastUpdatedAt: NOW + (block % 100),
  price, currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: hash(block) }), ...extra,
});

describe.each(BOTH_ENGINES)("migration 40 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("answers the listings already held with no maker or expiry, kept JSON and rows alike, and one written after with its own", async () => {
    const store = await emptyStore(engine);
    try {
      // Listing 1 off-chain, then repriced on-chain (its log keeps both records).
      await importRecords(store.target, "listings", [listing("1", "10", 0), listing("1", "9", 7001), listing("3", "30", 0)]);
      await dropListingOrders(store.target);
      await setSchemaVersion(store.target, 39);
      expect(await migrateStore(store.target)).toMatchObject({ from: 39 });
      await importRecords(store.target, "listings", [listing("2", "20", 0, { maker: `0x${"ab".repeat(20)}`, expiresAt: NOW + 86_400 })]);

      const answers = async () => {
        const repos = await openReadRepositories(store.target);
        try {
          const id = (await repos.collections.collectionId(C))!;
          const page = { limit: 50, after: null };
          const rows = (await repos.listings.listingsPage(id, {}, page)).rows;
          // The kept answers are what this build writes for the same rows.
          expect((await repos.listings.listingsPage(id, {}, page, "json")).rows).toEqual(rows.map((r) => listingFragment(r, "json")));
          return rows.map((r) => toListing(r)).map((l) => [l.marketplaceId, l.price, l.maker, Number(l.expiresAt)]).sort();
        } finally {
          await repos.close();
        }
      };
      expect(await answers()).toEqual([["1", "9", "", 0], ["2", "20", `0x${"ab".repeat(20)}`, NOW + 86_400], ["3", "30", "", 0]]);
      // Block 7001 orphaned: listing 1 is its off-chain record again, logged before 40.
      await importRecords(store.target, "reorgs", [{ fromBlock: 7001 }]);
      expect((await answers())[0]).toEqual(["1", "10", "", 0]);
    } finally {
      await store.cleanup();
    }
  });
});
