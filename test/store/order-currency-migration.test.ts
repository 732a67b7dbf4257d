import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { toListing, toOffer } from "../../src/domain/wire/messages.js";
import { BOTH_ENGINES, dropOrderCurrency, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 33 (docs/money.md) on both engines: the orders already held,
// and the records their logs keep, answer ETH (every order before it was);
// an order written after it answers its own token, and a record logged
// before it, replayed after, is ETH again.

const C = `0x${"c9".repeat(20)}`;
const NOW = Math.floor(Date.now() / 1000) - 3600;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const listing = (id: string, price: string, block: number, extra: object = {}) => ({
  marketplaceId: id, marketplace: "OPENSEA", contractAddress: C, assetId: id, createdAt: NOW, lastUpdatedAt: NOW + (block % 100),
  price, currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: hash(block) }), ...extra,
});
const offer = { marketplaceId: "9", marketplace: "OPENSEA", contractAddress: C, maker: C, price: "3", currency: "ETH", createdAt: NOW, lastUpdatedAt: NOW, status: "CREATED" };

describe.each(BOTH_ENGINES)("migration 33 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("answers the orders already held, and their logged records, in ETH, and an order written after it in its own token", async () => {
    const store = await emptyStore(engine);
    try {
      // Listing 1 off-chain, then repriced on-chain (its log keeps both records); an offer.
      await importRecords(store.target, "listings", [listing("1", "10", 0), listing("1", "9", 7001)]);
      await importRecords(store.target, "offers", [offer]);
      await dropOrderCurrency(store.target);
      await setSchemaVersion(store.target, 32);
      expect(await migrateStore(store.target)).toMatchObject({ from: 32 });
      await importRecords(store.target, "listings", [listing("2", "20", 0, { currency: "WETH" })]);
      await importRecords(store.target, "offers", [{ ...offer, marketplaceId: "8", currency: "WETH" }]);

      const answers = async () => {
        const repos = await openReadRepositories(store.target);
        try {
          const id = (await repos.collections.collectionId(C))!;
          const page = { limit: 50, after: null };
          const rows = (await repos.listings.listingsPage(id, {}, page)).rows.map((r) => toListing(r));
          const kept = (await repos.listings.listingsPage(id, {}, page, "json")).rows.map((f) => JSON.parse(String(f)) as { marketplaceId: string; price: string; currency: string });
          const offers = (await repos.offers.offersPage(id, {}, page, NOW)).rows.map((r) => toOffer(r, NOW));
          const told = (xs: { marketplaceId: string; price: string; currency: string }[]) => xs.map((x) => [x.marketplaceId, x.price, x.currency]).sort();
          expect(told(kept)).toEqual(told(rows));
          return { listings: told(rows), offers: told(offers) };
        } finally {
          await repos.close();
        }
      };
      expect(await answers()).toEqual({ listings: [["1", "9", "ETH"], ["2", "20", "WETH"]], offers: [["8", "3", "WETH"], ["9", "3", "ETH"]] });
      // Block 7001 orphaned: listing 1 is its off-chain record again, logged before 33.
      await importRecords(store.target, "reorgs", [{ fromBlock: 7001 }]);
      expect((await answers()).listings).toEqual([["1", "10", "ETH"], ["2", "20", "WETH"]]);
    } finally {
      await store.cleanup();
    }
  });
});
