import { describe, expect, it } from "vitest";
import { openReadRepositories } from "../../src/store/open.js";
import { emptyStore, firstRow, importRecords } from "../support/engine.js";
import { skipPg } from "../support/pg.js";

// The orders' logs (docs/chains.md, "Orders taken back"), on both engines:
// an order made and updated off-chain keeps none; one whose record may be
// taken back keeps its base and every record since, until the chain's
// finality passes them; after that a new pending record begins a log again,
// whose base is the order as it then stands, and a reorganisation gives it
// back exactly that.

const C = `0x${"c8".repeat(20)}`;
const NOW = Math.floor(Date.now() / 1000) - 3600;
const listing = (price: string, block: number, updated = 0) => ({
  marketplaceId: "81", marketplace: "CRYPTOPUNKS", contractAddress: C, assetId: "8", createdAt: NOW, lastUpdatedAt: NOW + updated,
  price, currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: `0x${block.toString(16).padStart(64, "0")}` }),
});

/** The rows of the orders' logs (each log's records and bases) and the listing's price and block as answered. */
async function state(target: string): Promise<{ logged: number; bases: number; versions: number; listing: unknown }> {
  const counts = (await firstRow(target,
    "SELECT (SELECT count(*) FROM listing_log) AS logged, (SELECT count(*) FROM listing_log WHERE base = 1) AS bases, (SELECT count(*) FROM listing_log_versions) AS versions",
  )) as { logged: number; bases: number; versions: number };
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const rows = (await repos.listings.listingsPage(id, {}, { limit: 5, after: null })).rows as { price: string; block?: number }[];
    return { ...counts, listing: rows.map((r) => [r.price, r.block ?? 0]) };
  } finally {
    await repos.close();
  }
}

describe.each([
  { engine: "sqlite" as const, skip: false },
  { engine: "postgres" as const, skip: skipPg },
])("orders' logs ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("are kept while a record may be taken back, dropped as the finality passes them, and begun again from the order as it stands", async () => {
    const store = await emptyStore(engine);
    try {
      const { target } = store;
      // Off-chain only: no log.
      await importRecords(target, "listings", [listing("50", 0), listing("45", 0, 1)]);
      expect(await state(target)).toMatchObject({ logged: 0, listing: [["45", 0]] });
      // On-chain in block 100: the log begins with the order as it was (its base and its two versions) and the record.
      await importRecords(target, "listings", [listing("40", 100, 2)]);
      expect(await state(target)).toEqual({ logged: 2, bases: 1, versions: 2, listing: [["40", 100]] });
      // An off-chain record of a logged order is logged too (it counts in a replay).
      await importRecords(target, "listings", [listing("42", 0, 3)]);
      expect(await state(target)).toMatchObject({ logged: 3, bases: 1 });
      // Block 100 final: nothing of the log can be taken back; it goes.
      await importRecords(target, "finality", [{ block: 100 }]);
      expect(await state(target)).toEqual({ logged: 0, bases: 0, versions: 0, listing: [["42", 0]] });
      // A pending record begins a log again, from the order as it stands; the reorganisation gives that back.
      await importRecords(target, "listings", [listing("30", 101, 4)]);
      expect(await state(target)).toMatchObject({ logged: 2, bases: 1, versions: 4, listing: [["30", 101]] });
      await importRecords(target, "reorgs", [{ fromBlock: 101 }]);
      expect(await state(target)).toMatchObject({ listing: [["42", 0]] });
      // A finality that leaves a record pending keeps its log.
      await importRecords(target, "listings", [listing("35", 103, 5)]);
      await importRecords(target, "finality", [{ block: 102 }]);
      expect(await state(target)).toMatchObject({ logged: 2, bases: 1 });
    } finally {
      await store.cleanup();
    }
  });
});
