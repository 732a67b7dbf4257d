import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { washFlagsOf, washNames, washScore, type WashSale } from "../../src/domain/wash.js";
import { skipPg } from "../support/pg.js";
import { importBatch, useHarness } from "../support/property-store.js";

// Wash flags (docs/wash-trades.md) against the oracle, on both engines: a
// random history of one collection's sales among a few wallets and tokens,
// some priced far from the rest, sent in random batches in any order, some
// sent again changed (a new time, buyer or price) and some taken back
// ("removed": true), must leave every sale answering the flags the documented
// rules give the surviving sales (domain/wash.ts washFlagsOf), after a
// reorganisation too, whatever the order: a flag that a later sale brings (a back-and-forth's second leg)
// reaches the earlier one too.

const DAY = 86_400;
const T0 = 1_750_000_000;
const WALLETS = ["1", "2", "3", "4"].map((c) => `0x${c.repeat(40)}`);

interface Version {
  key: number;
  asset: number;
  seller: number;
  buyer: number;
  /** Days after T0 (a few sales share a time). */
  day: number;
  price: bigint;
  /** Paid in USDC: judged by the token rules, neither judged nor counted by the outlier rule (domain/wash.ts OTHER_UNIT). */
  usdc: boolean;
}

const version = fc.record({
  key: fc.integer({ min: 0, max: 35 }),
  asset: fc.integer({ min: 0, max: 2 }),
  seller: fc.integer({ min: 0, max: 3 }),
  buyer: fc.integer({ min: 0, max: 3 }),
  day: fc.oneof(fc.integer({ min: 0, max: 120 }), fc.constantFrom(0, 30, 60)),
  price: fc.oneof({ weight: 8, arbitrary: fc.bigInt({ min: 900n, max: 1100n }) }, fc.constantFrom(1n, 50n, 20_000n, 1_000_000n)),
  usdc: fc.integer({ min: 0, max: 2 }).map((n) => n === 0),
});


/** A price in USDC's unit is far below one in wei (10^-9 of it, at the market's rate): counted among the sales in wei, each would be an outlier and drag its neighbours' median down. */
const priceOf = (v: Version) => (v.usdc ? v.price / 1000n + 1n : v.price);

const hashOf = (key: number) => `0x${(0xa000 + key).toString(16).padStart(64, "0")}`;

function record(address: string, v: Version, removed: boolean): object {
  return {
    hash: hashOf(v.key), from: WALLETS[v.seller], to: WALLETS[v.buyer], contractAddress: address, assetId: String(v.asset),
    timestamp: T0 + v.day * DAY + (v.key % 3), block: 1_000 + v.day, price: priceOf(v).toString(), amountReceived: priceOf(v).toString(),
    currency: v.usdc ? "USDC" : "ETH", marketplace: "OPENSEA", ...(removed ? { removed: true } : {}),
  };
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`wash flags equal the rules applied to the surviving sales on ${engine} (property)`, () => {
    const harnessed = useHarness(engine);
    let run = 0;

    it("in any arrival order, with sales changed and taken back", { timeout: 120_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ v: version, removed: fc.integer({ min: 0, max: 5 }).map((n) => n === 0) }), { minLength: 1, maxLength: 60 }),
          fc.integer({ min: 1, max: 12 }),
          fc.option(fc.integer({ min: 1_000, max: 1_125 }), { freq: 3 }),
          async (writes, size, reorgFrom) => {
            const h = harnessed();
            const address = `0x${(0xe1000 + ++run).toString(16).padStart(40, "0")}`;
            // A sale's key is its hash and asset (the natural key): a key keeps the asset of its first version.
            const assetOfKey = new Map<number, number>();
            const held = new Map<number, Version>();
            const lines: object[] = [];
            for (const { v, removed } of writes) {
              const asset = assetOfKey.get(v.key) ?? v.asset;
              assetOfKey.set(v.key, asset);
              const w = { ...v, asset };
              lines.push(record(address, w, removed));
              if (removed) held.delete(w.key);
              else held.set(w.key, w);
            }
            await importBatch(h.store, "collections", [{ contractAddress: address, name: "wash" }]);
            for (let i = 0; i < lines.length; i += size) await importBatch(h.store, "sales", lines.slice(i, i + size));
            // A reorganisation takes back every sale from its block on.
            if (reorgFrom !== null) {
              await importBatch(h.store, "reorgs", [{ chain: "ethereum", fromBlock: reorgFrom }]);
              for (const [key, v] of held) if (1_000 + v.day >= reorgFrom) held.delete(key);
            }

            const oracle = washFlagsOf<number>([...held.values()].map((v): WashSale<number> => {
              const r = record(address, v, false) as { timestamp: number; block: number };
              return { id: v.key, assetId: String(v.asset), seller: WALLETS[v.seller]!, buyer: WALLETS[v.buyer]!, timestamp: r.timestamp, block: r.block, hash: hashOf(v.key).slice(2), price: priceOf(v), otherUnit: v.usdc };
            }));
            const answered = new Map<string, { flags: string[]; score: number }>();
            let cursor = "";
            do {
              const page = await h.assets.listSales({ contractAddress: address, limit: 50, cursor });
              for (const s of page.data) answered.set(`${s.hash}:${s.assetId}`, { flags: s.washFlags, score: s.washScore });
              cursor = page.cursor;
            } while (cursor !== "");
            const expected = new Map([...held.values()].map((v) => [`${hashOf(v.key)}:${v.asset}`, { flags: washNames(oracle.get(v.key)!), score: washScore(oracle.get(v.key)!) }]));
            expect(answered).toEqual(expected);
          },
        ),
        { numRuns: engine === "postgres" ? 40 : 120 },
      );
    });
  });
}
