import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLLECTION_SORTS } from "../../src/store/ports/market.js";
import { skipPg } from "../support/pg.js";
import { importHistory, type Harness, harness, importBatch } from "../support/property-store.js";

// Spam collections and flagged tokens (docs/data.md, "Spam and flags"), on
// both engines: after any history of token records, listings, flags set and
// cleared and spam marks set and cleared, in any arrival order, a flagged
// token's listings never reach a default floor (the floor, each
// marketplace's, the market's, each trait value's, the collections list's),
// and a spam collection never reaches the collections list in any order;
// with includeFlagged and includeSpam the floors and the list are those of
// every token and collection. Each answer equals an oracle over the records.

const T = 1_700_000_000;
const C = (n: number) => `0x${(0xf1a60 + n).toString(16).padStart(40, "0")}`;
const MARKETPLACES = ["BLUR", "OPENSEA"] as const;
const COLORS = ["red", "blue"] as const;

type Write =
  | { kind: "tokens"; asset: number; color: number }
  | { kind: "listings"; id: number; asset: number; price: number; status: "CREATED" | "CANCELLED" }
  | { kind: "flags"; asset: number; flagged: boolean }
  | { kind: "spam"; spam: boolean };

const asset = fc.integer({ min: 0, max: 4 });
const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("tokens" as const), asset, color: fc.integer({ min: 0, max: 1 }) }) },
  { weight: 4, arbitrary: fc.record({
    kind: fc.constant("listings" as const), id: fc.integer({ min: 0, max: 6 }), asset,
    price: fc.integer({ min: 1, max: 9 }), status: fc.constantFrom("CREATED" as const, "CREATED" as const, "CANCELLED" as const),
  }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("flags" as const), asset, flagged: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("spam" as const), spam: fc.boolean() }) },
);

let runPrefix = "";
const listingId = (id: number) => `${runPrefix}${id}`;
const marketplaceOf = (id: number) => MARKETPLACES[id % 2]!;

function recordOf(address: string, w: Write): object {
  switch (w.kind) {
    case "tokens":
      return { contractAddress: address, assetId: String(w.asset), attributes: [{ trait_type: "Color", value: COLORS[w.color] }] };
    case "listings":
      return {
        marketplaceId: listingId(w.id), marketplace: marketplaceOf(w.id), contractAddress: address, assetId: String(w.asset),
        createdAt: T, lastUpdatedAt: T, price: String(w.price * 1000), currency: "ETH", status: w.status,
      };
    case "flags":
      return { contractAddress: address, assetId: String(w.asset), isFlagged: w.flagged, reason: w.flagged ? "stolen" : "recovered" };
    case "spam":
      return { contractAddress: address, isSpam: w.spam, reason: w.spam ? "airdrop spam" : "" };
  }
}

interface Floor {
  marketplace: string;
  marketplaceId: string;
  assetId: string;
  price: string;
}

const cheaper = (a: Floor, b: Floor) => BigInt(a.price) - BigInt(b.price) || (a.marketplace < b.marketplace ? -1 : a.marketplace > b.marketplace ? 1 : 0) || (a.marketplaceId < b.marketplaceId ? -1 : a.marketplaceId > b.marketplaceId ? 1 : 0);
const lowest = (xs: Floor[]) => [...xs].sort((a, b) => Number(cheaper(a, b)))[0];

/** What the store should answer, from the records it took. */
function oracle(taken: readonly Write[]) {
  const colors = new Map<number, number>();
  const listings = new Map<number, Extract<Write, { kind: "listings" }>>();
  const flagged = new Map<number, boolean>();
  let spam: boolean | undefined;
  for (const w of taken) {
    if (w.kind === "tokens") colors.set(w.asset, w.color);
    else if (w.kind === "listings") listings.set(w.id, w);
    else if (w.kind === "flags") flagged.set(w.asset, w.flagged);
    else spam = w.spam;
  }
  const active = (includeFlagged: boolean): Floor[] =>
    [...listings.values()]
      .filter((l) => l.status === "CREATED" && (includeFlagged || flagged.get(l.asset) !== true))
      .map((l) => ({ marketplace: marketplaceOf(l.id), marketplaceId: listingId(l.id), assetId: String(l.asset), price: String(l.price * 1000) }));
  const groups = (includeFlagged: boolean) =>
    MARKETPLACES.map((m) => lowest(active(includeFlagged).filter((f) => f.marketplace === m))).filter((f): f is Floor => f !== undefined);
  // A trait value's floor: the cheapest listing of its tokens, ties by asset id, then the listing's marketplace and id (decisions.md, "Traits").
  const traitFloor = (color: number, includeFlagged: boolean) =>
    [...active(includeFlagged).filter((f) => colors.get(Number(f.assetId)) === color)].sort(
      (a, b) => Number(BigInt(a.price) - BigInt(b.price) || BigInt(a.assetId) - BigInt(b.assetId)) || Number(cheaper(a, b)),
    )[0];
  return { groups, traitFloor, colors, flagged, spam: spam === true, floor: (includeFlagged: boolean) => lowest(active(includeFlagged)) };
}

const floorOf = (f: { marketplace: string; marketplaceId: string; assetId: string; price: string } | undefined): Floor | undefined =>
  f && { marketplace: f.marketplace, marketplaceId: f.marketplaceId, assetId: f.assetId, price: f.price };

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`spam and flags on ${engine} (property)`, () => {
    let h: Harness;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
      // Both marketplaces known to the store (a floor of one it has no records of is refused), in a collection of their own.
      await importBatch(h.store, "listings", MARKETPLACES.map((m, i) => ({ ...recordOf(C(0), { kind: "listings", id: i, asset: 0, price: 1, status: "CREATED" }), marketplace: m, marketplaceId: `900${i}` })));
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    /** The collection's row in each order of the collections list, or undefined where it is not listed. */
    async function listed(address: string, includeSpam: boolean) {
      const rows = [];
      for (const sort of COLLECTION_SORTS) {
        const page = await h.client.listCollections({ query: address, sort, includeSpam, limit: 10 });
        rows.push(page.data.find((c) => c.contractAddress === address));
      }
      return rows;
    }

    it("a flagged token is no default floor, a spam collection in no default list, whatever the history", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 24 }), fc.boolean(), async (writes, bulk) => {
          const address = C(++run);
          runPrefix = String(run);
          const taken = await importHistory(h.store, writes, (w) => recordOf(address, w), bulk);
          const want = oracle(taken);
          const story = JSON.stringify(taken);

          for (const includeFlagged of [false, true]) {
            const floor = (await h.client.getCollectionFloor({ contractAddress: address, includeFlagged })).data!;
            expect(floor.groups.map(floorOf), story).toEqual(want.groups(includeFlagged));
            expect(floorOf(floor.floor), story).toEqual(want.floor(includeFlagged));
            for (const marketplace of MARKETPLACES) {
              const one = (await h.client.getCollectionFloor({ contractAddress: address, marketplace, includeFlagged })).data!;
              expect(one.groups.map(floorOf), story).toEqual(want.groups(includeFlagged).filter((f) => f.marketplace === marketplace));
            }
            const market = (await h.client.getCollectionMarket({ contractAddress: address, includeFlagged })).data!;
            expect(floorOf(market.floor), story).toEqual(want.floor(includeFlagged));
            const traits = (await h.client.listCollectionTraits({ contractAddress: address, includeFlagged })).data;
            for (const v of traits) {
              const color = COLORS.indexOf(v.value as (typeof COLORS)[number]);
              expect(floorOf(v.floor), `${v.value} ${story}`).toEqual(want.traitFloor(color, includeFlagged));
            }
          }

          // A token answers its flag.
          const tokens = (await h.assets.listTokens({ contractAddress: address, limit: 50 })).data;
          for (const t of tokens) expect(t.isFlagged, `${t.assetId} ${story}`).toBe(want.flagged.get(Number(t.assetId)) === true);

          // The collections list: a spam collection in no order unless includeSpam; its floor the default one.
          const shown = await listed(address, false);
          const all = await listed(address, true);
          const floor = want.floor(false);
          for (const row of all) {
            if (row === undefined) continue; // a collection the list does not hold yet (no summary: nothing written but marks)
            expect(row.isSpam, story).toBe(want.spam);
            expect(floorOf(row.floor), story).toEqual(floor);
          }
          for (const [i, row] of shown.entries()) expect(row, story).toEqual(want.spam ? undefined : all[i]);
        }),
        { numRuns: engine === "sqlite" ? 100 : 40 },
      );
    }, 300_000);
  });
}
