import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deriveCollection } from "../../src/derive/derive.js";
import { collectionRef } from "../../src/domain/chains.js";
import { skipPg } from "../support/pg.js";
import { CHAINS, fixedRecords, historyOf, T, writeArb } from "../support/reorg-history.js";
import { batchesByKind, type Harness, harness, importBatch } from "../support/property-store.js";

// Reorganisations undone exactly (docs/chains.md), on both engines: a random
// history on two chains (the same address on each) of tokens, listings,
// sales, transfers and orders' records (listings and offers, on-chain or
// off-chain), with records taken back ("removed": true), blocks
// taken back (the reorgs kind, by first block, with or without the blocks'
// hashes) and records sent again after their removal, in any order, gives
// the answers of a store fed only the records that survived: owners and
// holders, stats, the series, the sales list, tokens with their latest
// sale, listings that come alive again, orders as their last record left
// (or gone), floors now and at= (a listing's versions), traits' floors, the
// market (floor and top bid), the collections list's row, activity, and
// the derived appraisals and rarity: the fed store is also derived halfway
// through its history, so that what a derive made of records taken back
// later must go with them.

/** Every answer the reorganisations must leave as a store that never took the removed records would give. */
async function answers(h: Harness, address: string): Promise<unknown> {
  const out: Record<string, unknown> = {};
  for (const c of CHAINS) {
    const q = { contractAddress: address, chain: c };
    out[`${c} stats`] = await h.client.getCollectionStats(q);
    out[`${c} holders`] = await h.client.listCollectionHolders({ ...q, limit: 50 });
    out[`${c} floor`] = await h.client.getCollectionFloor(q);
    out[`${c} series`] = await h.client.getCollectionStatsSeries({ ...q, interval: "hour" });
    out[`${c} activity`] = await h.client.listCollectionActivity({ ...q, limit: 50 });
    out[`${c} sales`] = await h.assets.listSales({ ...q, limit: 50 });
    out[`${c} tokens`] = await h.assets.listTokens({ ...q, limit: 50 });
    out[`${c} listings`] = await h.assets.listListings({ ...q, limit: 50 });
    out[`${c} offers`] = await h.assets.listOffers({ ...q, limit: 50 });
    for (const at of [T + 40, T + 200, T + 500]) out[`${c} floor at ${at}`] = await h.client.getCollectionFloor({ ...q, at: BigInt(at) });
    out[`${c} traits`] = await h.client.listCollectionTraits(q);
    out[`${c} market`] = await h.client.getCollectionMarket(q);
    out[`${c} collections list`] = await h.client.listCollections({ query: address, chain: c, limit: 5 });
    out[`${c} appraisals`] = await h.assets.listAppraisals({ ...q, limit: 50 });
    out[`${c} rarity`] = await h.assets.listRarity({ ...q, limit: 50 });
  }
  return out;
}

/** The background derive's work on both chains' collections, as it would run after these writes. */
async function derived(h: Harness, address: string): Promise<void> {
  for (const c of CHAINS) await deriveCollection(h.store.derive, collectionRef(c, address));
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`reorganisations undone exactly on ${engine} (property)`, () => {
    let fed: Harness;
    let survivors: Harness;
    let run = 0;

    beforeAll(async () => {
      fed = await harness(engine);
      survivors = await harness(engine);
    });
    afterAll(async () => {
      await fed?.cleanup();
      await survivors?.cleanup();
    });

    it("every answer equals that of a store fed only the surviving records", { timeout: 120_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 30 }), async (writes) => {
          const address = `0x${(0xd1000 + ++run).toString(16).padStart(40, "0")}`;
          const { tokens, listings } = fixedRecords(address);
          for (const h of [fed, survivors]) {
            await importBatch(h.store, "tokens", tokens);
            await importBatch(h.store, "listings", listings);
          }
          const { lines, held, orders } = historyOf(address, writes);
          const batches = batchesByKind(lines.map((l) => ({ ...l })), 5);
          for (const [i, batch] of batches.entries()) {
            if (i === Math.floor(batches.length / 2)) await derived(fed, address);
            await importBatch(fed.store, batch[0]!.kind, batch.map((b) => b.record));
          }
          await derived(fed, address);
          const kept = [...held.values()];
          for (const kind of ["sales", "transfers"] as const) {
            const records = kept.filter((k) => k.kind === kind).map((k) => k.record);
            if (records.length > 0) await importBatch(survivors.store, kind, records);
          }
          // The orders' surviving records in arrival order (an order is its last).
          for (const kind of ["listings", "offers"] as const) {
            const records = orders.filter((o) => o.kind === kind).map((o) => o.record);
            if (records.length > 0) await importBatch(survivors.store, kind, records);
          }
          await derived(survivors, address);
          expect(await answers(fed, address)).toEqual(await answers(survivors, address));
        }),
        { numRuns: engine === "postgres" ? 50 : 150 },
      );
    });
  });
}
