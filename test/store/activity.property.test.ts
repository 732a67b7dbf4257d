import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kind } from "../../src/domain/kinds/index.js";
import { skipPg } from "../support/pg.js";
import { batchesByKind, type Harness, harness, importBatch } from "../support/property-store.js";

// The activity feed's list (decisions.md, "Activity"): after any history of
// sales, listings, offers and transfers (sent again changed, in any order
// and batching), ListCollectionActivity for any set of kinds, paged by 1 to
// 3, gives every event once, in the order an oracle sorts the raw records:
// time descending (a sale's or transfer's timestamp, a listing's or offer's
// creation), then listing, offer, sale, transfer, then each kind's own list
// order. Times are drawn from four seconds, so that ties between kinds and
// within a kind are the rule. Both engines.

const C = (n: number) => `0x${(0xac7000 + n).toString(16).padStart(40, "0")}`;
const T0 = Math.floor(Date.now() / 1000) - 86_400;
const TYPES = ["listing", "offer", "sale", "transfer"] as const;
type Type = (typeof TYPES)[number];

interface Write {
  type: Type;
  /** Identity within its kind: sent again, the same record changed. */
  id: number;
  /** One of four seconds. */
  second: number;
  block: number;
  asset: number;
  price: number;
}

const writeArb: fc.Arbitrary<Write> = fc.record({
  type: fc.constantFrom(...TYPES),
  id: fc.integer({ min: 0, max: 5 }),
  second: fc.integer({ min: 0, max: 3 }),
  block: fc.integer({ min: 1, max: 3 }),
  asset: fc.integer({ min: 0, max: 11 }),
  price: fc.integer({ min: 1, max: 9 }),
});

const KIND: Record<Type, Kind> = { listing: "listings", offer: "offers", sale: "sales", transfer: "transfers" };
const hash = (w: Write) => `0x${(w.id % 3).toString(16).padStart(64, "0")}`;
/** A marketplace and its id: two of each id share a marketplace, so ids break ties. */
const market = (w: Write) => (w.id % 2 === 0 ? "BLUR" : "OPENSEA");
/** The run's records have ids of their own: a listing or offer stays with its collection. */
let run = 0;

function recordOf(address: string, w: Write): object {
  const time = T0 + w.second;
  switch (w.type) {
    case "sale":
      // A sale is its hash and asset: ids 0..5 name three hashes, each with two assets.
      return {
        hash: hash(w), contractAddress: address, assetId: String(w.id + 10 * (w.id % 2)), timestamp: time, block: w.block,
        from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, price: String(w.price), amountReceived: String(w.price), currency: "ETH", marketplace: "BLUR",
      };
    case "transfer":
      return {
        hash: hash(w), logIndex: w.id, contractAddress: address, assetId: String(w.asset), timestamp: time, block: w.block,
        from: `0x${"2".repeat(40)}`, to: `0x${"3".repeat(40)}`,
      };
    case "listing":
      return {
        marketplaceId: String(run * 1000 + 100 + w.id), marketplace: market(w), contractAddress: address, assetId: String(w.asset), createdAt: time,
        lastUpdatedAt: time, price: String(w.price), currency: "ETH", status: "CREATED",
      };
    case "offer":
      return {
        marketplaceId: String(run * 1000 + 200 + w.id), marketplace: market(w), contractAddress: address, maker: `0x${"5".repeat(40)}`, price: String(w.price),
        currency: "ETH", createdAt: time, lastUpdatedAt: time, expiresAt: 0, status: "CREATED",
      };
  }
}

/** The identity the answer shows of an event, and the oracle's sort key. */
interface Event {
  type: Type;
  id: string;
  time: number;
  /** Within a kind at equal time: numbers descending, then texts ascending. */
  nums: number[];
  texts: string[];
}

function eventOf(w: Write): Event {
  const r = recordOf("", w) as Record<string, string | number>;
  const time = T0 + w.second;
  if (w.type === "sale") return { type: w.type, id: `${r.hash}/${r.assetId}`, time, nums: [w.block], texts: [String(r.hash), String(r.assetId).padStart(4, "0")] };
  if (w.type === "transfer") {
    return { type: w.type, id: `${r.hash}/${r.logIndex}/${r.assetId}`, time, nums: [w.block, w.id], texts: [String(r.hash), String(r.assetId).padStart(4, "0")] };
  }
  return { type: w.type, id: `${r.marketplace}/${r.marketplaceId}`, time, nums: [], texts: [String(r.marketplace), String(r.marketplaceId)] };
}

function order(a: Event, b: Event): number {
  if (a.time !== b.time) return b.time - a.time;
  if (a.type !== b.type) return TYPES.indexOf(a.type) - TYPES.indexOf(b.type);
  for (let i = 0; i < a.nums.length; i++) if (a.nums[i] !== b.nums[i]) return b.nums[i]! - a.nums[i]!;
  for (let i = 0; i < a.texts.length; i++) if (a.texts[i] !== b.texts[i]) return a.texts[i]! < b.texts[i]! ? -1 : 1;
  return 0;
}

const idOfAnswer = (e: { type: string; sale?: Record<string, unknown>; transfer?: Record<string, unknown>; listing?: Record<string, unknown>; offer?: Record<string, unknown> }) =>
  e.type === "sale"
    ? `${e.sale!.hash}/${e.sale!.assetId}`
    : e.type === "transfer"
      ? `${e.transfer!.hash}/${e.transfer!.logIndex}/${e.transfer!.assetId}`
      : `${(e.listing ?? e.offer)!.marketplace}/${(e.listing ?? e.offer)!.marketplaceId}`;

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`activity list on ${engine} (property)`, () => {
    let h: Harness;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("pages every event once, in time order, then kind, then each kind's own order, for any set of kinds", async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(writeArb, { minLength: 1, maxLength: 24 }),
          fc.subarray([...TYPES]),
          fc.integer({ min: 1, max: 3 }),
          async (writes, types, limit) => {
            const address = C(++run);
            for (const batch of batchesByKind(writes.map((w) => ({ ...w, kind: KIND[w.type] })), 4)) {
              await importBatch(h.store, batch[0]!.kind, batch.map((w) => recordOf(address, w)));
            }
            // The latest record of each event (a sale or transfer sent again moves; a listing or offer sent again is replaced).
            const latest = new Map<string, Event>();
            for (const w of writes) {
              const e = eventOf(w);
              latest.set(`${e.type} ${e.id}`, e);
            }
            const shown = types.length === 0 ? TYPES : types;
            const expected = [...latest.values()].filter((e) => shown.includes(e.type)).sort(order).map((e) => `${e.type} ${e.id} @${e.time}`);

            const got: string[] = [];
            let cursor = "";
            for (let pages = 0; pages < 100; pages++) {
              const page = await h.client.listCollectionActivity({ contractAddress: address, types, limit, cursor });
              expect(page.data.length).toBeLessThanOrEqual(limit);
              for (const e of page.data) got.push(`${e.type} ${idOfAnswer(e as never)} @${e.timestamp}`);
              cursor = page.nextPage;
              if (cursor === "") break;
            }
            expect(got, JSON.stringify({ writes, types, limit })).toEqual(expected);
          },
        ),
        { numRuns: engine === "sqlite" ? 80 : 30 },
      );
    }, 300_000);
  });
}
