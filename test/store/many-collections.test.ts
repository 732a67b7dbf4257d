import { describe, expect, it } from "vitest";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openIngestWriter, openReadRepositories, openWritableStore } from "../../src/store/open.js";
import { storeEngines } from "../support/store-engines.js";

// A chain's market has hundreds of thousands of collections, and an
// indexer's batch names as many as it holds records (issue 50, items 1 and
// 4): one batch of 10,000 sales, each of a collection never seen, is
// written whole on both engines (PostgreSQL once built a partition per new
// collection: out of shared memory at 1,000), its counts and kept
// aggregates exact; then a batch mixing those collections with new ones.

const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
const address = (c: number) => `0x${(0xc0000000 + c).toString(16).padStart(40, "0")}`;
const sale = (i: number, collection: number) =>
  check.check({
    hash: `0x${i.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
    contractAddress: address(collection), assetId: String(i % 97), timestamp: 1_700_000_000 + i * 13, block: 18_000_000 + i,
    price: String(1_000_000 + i), amountReceived: "900", currency: "ETH", marketplace: ["OPENSEA", "BLUR"][i % 2]!,
  }, []) as Record<string, unknown>;

describe.each(storeEngines("many-collections"))("%s: one batch naming 10,000 new collections", (_name, open, skip) => {
  it.skipIf(skip)("is written whole, counted, its aggregates exact; a later batch mixes them with new ones", async () => {
    const { target, drop } = await open();
    try {
      if (target.startsWith("postgres")) await (await openWritableStore(target, { migrateEmpty: true })).close();
      else await migrateStore(target);
      const writer = openIngestWriter(target);
      try {
        expect(await writer.write("sales", Array.from({ length: 10_000 }, (_, i) => sale(i, i)))).toEqual({ inserted: 10_000, updated: 0, unchanged: 0 });
        // Half of them again (one changed), 5,000 more of collections new and old.
        const mixed = [
          ...Array.from({ length: 5_000 }, (_, i) => sale(i, i)),
          ...Array.from({ length: 5_000 }, (_, i) => sale(10_000 + i, i % 2 === 0 ? i : 10_000 + i)),
        ];
        mixed[3] = { ...mixed[3], price: "7" };
        expect(await writer.write("sales", mixed)).toEqual({ inserted: 5_000, updated: 1, unchanged: 4_999 });
      } finally {
        await writer.close();
      }
      const repos = await openReadRepositories(target);
      try {
        expect(await repos.collections.collectionId(address(12_499))).toBeDefined();
        const id = (await repos.collections.collectionId(address(3)))!;
        expect((await repos.feed.sales(id, 0, 100)).length).toBe(1);
      } finally {
        await repos.close();
      }
      const store = await openWritableStore(target);
      try {
        expect((await store.rebuildStats(undefined, true)).changed).toBe(0);
      } finally {
        await store.close();
      }
    } finally {
      await drop();
    }
  }, 120_000);
});
