import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { BOTH_ENGINES, dropQuantities, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 44 (decisions.md, "ERC-1155") on both engines: a store holding
// sales and listings from before it answers each of them of 1 unit, the
// same JSON and binary as a store that kept quantities from its first
// write (the listings' ready answers written again); a record written
// after it keeps its own.

const C = `0x${"e4".repeat(20)}`;
const quantityOf = (quantity?: string) => (quantity === undefined ? {} : { quantity });
const sale = (n: number, quantity?: string) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: C, assetId: String(n),
  timestamp: 1_700_000_000 + n, block: n, price: "1000", amountReceived: "1000", currency: "ETH", marketplace: "BLUR", ...quantityOf(quantity),
});
const listing = (n: number, quantity?: string) => ({
  marketplaceId: String(n), marketplace: "BLUR", contractAddress: C, assetId: String(n), createdAt: 1_700_000_000 + n, lastUpdatedAt: 1_700_000_000 + n,
  price: String(500 + n), currency: "ETH", status: "CREATED", ...quantityOf(quantity),
});

async function answersOf(target: string) {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const page = { after: null, limit: 10 };
    const binary = (rows: readonly unknown[]) => rows.map((b) => Buffer.from(b as Uint8Array).toString("hex"));
    return {
      sales: { json: (await repos.sales.salesPage(id, {}, page, "json")).rows, binary: binary((await repos.sales.salesPage(id, {}, page, "binary")).rows),
        quantities: (await repos.sales.salesPage(id, {}, page)).rows.map((r) => r.quantity) },
      listings: { json: (await repos.listings.listingsPage(id, {}, page, "json")).rows, binary: binary((await repos.listings.listingsPage(id, {}, page, "binary")).rows),
        quantities: (await repos.listings.listingsPage(id, {}, page)).rows.map((r) => r.quantity) },
    };
  } finally {
    await repos.close();
  }
}

describe.each(BOTH_ENGINES)("migration 44 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("answers the sales and listings it holds of 1 unit each, as a store that kept quantities from the start", async () => {
    const migrated = await emptyStore(engine);
    const kept = await emptyStore(engine);
    try {
      for (const target of [migrated.target, kept.target]) {
        await importRecords(target, "sales", [sale(1), sale(2)]);
        await importRecords(target, "listings", [listing(1), listing(2)]);
      }
      await dropQuantities(migrated.target);
      await setSchemaVersion(migrated.target, 43);
      expect(await migrateStore(migrated.target)).toMatchObject({ from: 43 });
      const found = await answersOf(migrated.target);
      expect(found).toEqual(await answersOf(kept.target));
      expect([found.sales.quantities, found.listings.quantities]).toEqual([["1", "1"], ["1", "1"]]);
      expect([...found.sales.json, ...found.listings.json].map((j) => JSON.parse(j as string).quantity)).toEqual(["1", "1", "1", "1"]);

      await importRecords(migrated.target, "sales", [sale(3, "6")]);
      await importRecords(migrated.target, "listings", [listing(3, "9")]);
      const after = await answersOf(migrated.target);
      expect([after.sales.quantities, after.listings.quantities]).toEqual([["6", "1", "1"], ["9", "1", "1"]]);
    } finally {
      await migrated.cleanup();
      await kept.cleanup();
    }
  });
});
