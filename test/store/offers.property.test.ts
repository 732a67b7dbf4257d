import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Kind } from "../../src/domain/kinds/index.js";
import { skipPg } from "../support/pg.js";
import { batchesByKind, type Harness, harness, importBatch } from "../support/property-store.js";

// Offers (decisions.md, "Offers"): after any history of offer records (sent
// again changed, in any order), the collection's top bid (GetCollectionMarket),
// each trait value's top offer (ListCollectionTraits: the value's own trait
// offers or a collection-wide one) and the offers list's CREATED and EXPIRED
// filters equal what an oracle over the raw records finds at the time of the
// read: an offer stands while its status is CREATED and its expiresAt (0:
// none) is later than now. Both engines.

const C = (n: number) => `0x${(0xf3300 + n).toString(16).padStart(40, "0")}`;
const NOW = Math.floor(Date.now() / 1000);
const COLORS = ["red", "blue"] as const;

interface OfferWrite {
  kind: "offers";
  id: number;
  /** 0: collection-wide; 1..2: a trait offer for COLORS[scope - 1]; 3..4: a token offer for asset scope - 3. */
  scope: number;
  price: number;
  status: "CREATED" | "FULFILLED" | "CANCELLED";
  /** 0: no expiry; else an offset from now (negative: lapsed). */
  expires: number;
}

const offerArb: fc.Arbitrary<OfferWrite> = fc.record({
  kind: fc.constant("offers" as const),
  id: fc.integer({ min: 0, max: 6 }),
  scope: fc.integer({ min: 0, max: 4 }),
  price: fc.integer({ min: 1, max: 9 }),
  status: fc.constantFrom("CREATED" as const, "CREATED" as const, "FULFILLED" as const, "CANCELLED" as const),
  expires: fc.constantFrom(0, 0, -3600, 3600, 86_400),
});

let run = 0;
const offerId = (id: number) => `${run}${id}`;
const marketplaceOf = (id: number) => (id % 2 === 0 ? "BLUR" : "OPENSEA");

function recordOf(address: string, w: OfferWrite): object {
  const scope = w.scope === 0 ? {} : w.scope <= 2 ? { traitType: "Color", traitValue: COLORS[w.scope - 1] } : { assetId: String(w.scope - 3) };
  return {
    marketplaceId: offerId(w.id), marketplace: marketplaceOf(w.id), contractAddress: address, ...scope,
    maker: `0x${"5".repeat(40)}`, price: String(w.price * 1000), currency: "ETH", createdAt: NOW - 86_400, lastUpdatedAt: NOW - 86_400,
    expiresAt: w.expires === 0 ? 0 : NOW + w.expires, status: w.status,
  };
}

const stands = (w: OfferWrite) => w.status === "CREATED" && (w.expires === 0 || w.expires > 0);
/** The best of offers: highest price, then marketplace, then id (their ids as text). */
function best(offers: OfferWrite[]): string | undefined {
  const sorted = [...offers].sort((a, b) => b.price - a.price || (marketplaceOf(a.id) < marketplaceOf(b.id) ? -1 : marketplaceOf(a.id) > marketplaceOf(b.id) ? 1 : offerId(a.id) < offerId(b.id) ? -1 : 1));
  return sorted[0] && `${offerId(sorted[0].id)}@${sorted[0].price * 1000}`;
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`offers on ${engine} (property)`, () => {
    let h: Harness;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("the top bid, each trait value's top offer and the status filters follow any history of offer records", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(offerArb, { minLength: 1, maxLength: 16 }), async (writes) => {
          const address = C(++run);
          // Tokens 0 (red) and 1 (blue): the trait values the traits list answers.
          await importBatch(h.store, "tokens" as Kind, [0, 1].map((i) => ({
            contractAddress: address, assetId: String(i), currentOwner: "", attributes: [{ trait_type: "Color", value: COLORS[i] }],
          })));
          for (const batch of batchesByKind(writes, 4)) await importBatch(h.store, "offers", batch.map((w) => recordOf(address, w)));
          const latest = new Map<number, OfferWrite>();
          for (const w of writes) latest.set(w.id, w);
          const offers = [...latest.values()];
          const story = JSON.stringify(writes);

          const market = (await h.client.getCollectionMarket({ contractAddress: address })).data!;
          const top = market.topBid && `${market.topBid.marketplaceId}@${market.topBid.price}`;
          expect(top, story).toEqual(best(offers.filter((w) => w.scope === 0 && stands(w))));

          const traits = (await h.client.listCollectionTraits({ contractAddress: address })).data;
          expect(traits.map((v) => v.topOffer && `${v.topOffer.marketplaceId}@${v.topOffer.price}`), story).toEqual(
            // By value: blue, then red.
            ["blue", "red"].map((v) => best(offers.filter((w) => (w.scope === 0 || (w.scope <= 2 && COLORS[w.scope - 1] === v)) && stands(w)))),
          );

          for (const [status, keep] of [
            ["CREATED", stands],
            ["EXPIRED", (w: OfferWrite) => w.status === "CREATED" && w.expires < 0],
          ] as const) {
            const listed = await h.assets.listOffers({ contractAddress: address, status: status === "CREATED" ? 1 : 4, limit: 50 });
            expect(listed.data.map((o) => o.marketplaceId).sort(), `${status}: ${story}`).toEqual(offers.filter(keep).map((w) => offerId(w.id)).sort());
            for (const o of listed.data) expect(o.status).toBe(status === "CREATED" ? 1 : 4);
          }
        }),
        { numRuns: engine === "sqlite" ? 100 : 40 },
      );
    }, 300_000);
  });
}
