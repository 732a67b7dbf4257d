import { describe, expect, it } from "vitest";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { FLOOR_SPANS } from "../../src/domain/floor-candles.js";
import { BOTH_ENGINES, dropFloorHistory, emptyStore, importRecords, setSchemaVersion } from "../support/engine.js";

// Migration 41 (decisions.md, "Floor history") on both engines: a store
// holding listings, sales, transfers and flags from before it gains the
// floor's history of what it holds, the same (every marketplace and all,
// every length) as a store that kept it from its first write; and writes
// after it are kept as any.

const C = `0x${"f1".repeat(20)}`;
const NOW = Math.floor(Date.now() / 1000) - 3 * 86_400;
const listing = (id: string, marketplace: string, asset: string, at: number, price: string, extra: object = {}) => ({
  marketplaceId: id, marketplace, contractAddress: C, assetId: asset, createdAt: at, lastUpdatedAt: at, price, currency: "ETH", status: "CREATED", ...extra,
});
const HISTORY = {
  listings: [
    listing("1", "OPENSEA", "1", NOW, "100"),
    listing("2", "BLUR", "2", NOW + 600, "80"),
    listing("3", "OPENSEA", "3", NOW + 4000, "60", { expiresAt: NOW + 9000 }),
    listing("4", "BLUR", "4", NOW + 90_000, "50"),
  ],
  // Token 2 sold: its listing ends then.
  sales: [{ hash: `0x${"5".repeat(64)}`, contractAddress: C, assetId: "2", from: `0x${"a".repeat(40)}`, to: `0x${"b".repeat(40)}`,
    timestamp: NOW + 7200, block: 1, price: "90", marketplace: "BLUR", amountReceived: "90", currency: "ETH" }],
  flags: [{ contractAddress: C, assetId: "4", isFlagged: true, reason: "stolen" }],
};
const LATER = [listing("5", "OPENSEA", "5", NOW + 100_000, "40")];

async function historyOf(target: string) {
  const repos = await openReadRepositories(target);
  try {
    const id = (await repos.collections.collectionId(C))!;
    const out: unknown[] = [];
    for (const m of ["", "OPENSEA", "BLUR"]) {
      out.push(await repos.analytics.floorExtent(id, m));
      for (const span of FLOOR_SPANS) out.push(await repos.analytics.floorHistory(id, m, span, NOW - 86_400, NOW + 3 * 86_400));
    }
    return out;
  } finally {
    await repos.close();
  }
}

async function write(target: string, history: typeof HISTORY) {
  for (const [kind, records] of Object.entries(history)) await importRecords(target, kind as "listings", records);
}

describe.each(BOTH_ENGINES)("migration 41 ($engine)", ({ engine, skip }) => {
  it.skipIf(skip)("finds the floor's history of what the store holds, as a store that kept it from its first write", async () => {
    const migrated = await emptyStore(engine);
    const kept = await emptyStore(engine);
    try {
      await write(migrated.target, HISTORY);
      await dropFloorHistory(migrated.target);
      await setSchemaVersion(migrated.target, 40);
      expect(await migrateStore(migrated.target)).toMatchObject({ from: 40 });
      await write(kept.target, HISTORY);
      const found = await historyOf(migrated.target);
      expect(found).toEqual(await historyOf(kept.target));
      // Not empty: the floor's points at 100, 80 (with BLUR's), 60, back at 80 when 3 expired, 100 when 2 sold (4 flagged: never).
      const all = found[1] as { before: null; rows: { low: string | null; high: string | null }[] };
      expect(all.rows.map((r) => [r.low, r.high])).toEqual([["100", "100"], ["80", "80"], ["60", "60"], ["100", "100"]]);
      // Written after: kept as any write.
      await importRecords(migrated.target, "listings", LATER);
      await importRecords(kept.target, "listings", LATER);
      expect(await historyOf(migrated.target)).toEqual(await historyOf(kept.target));
    } finally {
      await migrated.cleanup();
      await kept.cleanup();
    }
  });
});
