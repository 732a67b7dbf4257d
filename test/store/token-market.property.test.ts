import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipPg } from "../support/pg.js";
import { importHistory, eventRecord, type EventWrite, type Harness, harness } from "../support/property-store.js";

// Tokens and traits kept at write time (sqlite/token-market.ts,
// postgres/token-market.ts): after any history of token records, listings,
// sales and transfers, in any arrival order and with records sent again
// changed, each token's cheapest active (fillable) listing, each trait
// value's token count and floor, and the tokens list by price, rarity and id,
// with and without a trait, page by page, equal what an oracle over the raw
// records finds. Both engines; SQLite's bulk and row-by-row paths.

const T = 1_700_000_000;
const C = (n: number) => `0x${(0xf2200 + n).toString(16).padStart(40, "0")}`;
const MARKETPLACES = ["BLUR", "OPENSEA"] as const;
const COLORS = ["red", "blue", "Red"] as const;

interface TokenWrite {
  kind: "tokens";
  asset: number;
  color: number;
  /** A numeric trait, absent when 0. */
  level: number;
}
interface ListingWrite {
  kind: "listings";
  id: number;
  asset: number;
  created: number;
  price: number;
  status: "CREATED" | "FULFILLED" | "CANCELLED";
}
interface RarityWrite {
  kind: "rarity";
  asset: number;
  rank: number;
}
type Write = TokenWrite | ListingWrite | EventWrite | RarityWrite;

const asset = fc.integer({ min: 0, max: 4 });
const time = fc.integer({ min: 0, max: 12 });
const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("tokens" as const), asset, color: fc.integer({ min: 0, max: 2 }), level: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 4, arbitrary: fc.record({
    kind: fc.constant("listings" as const), id: fc.integer({ min: 0, max: 6 }), asset, created: time,
    price: fc.integer({ min: 1, max: 12 }), status: fc.constantFrom("CREATED" as const, "CREATED" as const, "FULFILLED" as const, "CANCELLED" as const),
  }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom("sales" as const, "transfers" as const), hash: fc.integer({ min: 1, max: 4 }), asset, at: time }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rarity" as const), asset, rank: fc.integer({ min: 1, max: 3 }) }) },
);

let runPrefix = "";
const listingId = (id: number) => `${runPrefix}${id}`;
const marketplaceOf = (id: number) => MARKETPLACES[id % 2]!;
const ts = (t: number) => T + t * 10;

function recordOf(address: string, w: Write): object {
  switch (w.kind) {
    case "tokens":
      return {
        contractAddress: address, assetId: String(w.asset), currentOwner: "",
        attributes: [{ trait_type: "Color", value: COLORS[w.color] }, ...(w.level === 0 ? [] : [{ trait_type: "Level", value: w.level }])],
      };
    case "rarity":
      return { contractAddress: address, assetId: String(w.asset), currentOwner: "", rarityScore: 1, statisticalRarity: -1, rarityRank: w.rank };
    case "listings":
      return {
        marketplaceId: listingId(w.id), marketplace: marketplaceOf(w.id), contractAddress: address, assetId: String(w.asset),
        createdAt: ts(w.created), lastUpdatedAt: ts(w.created), price: String(w.price * 1000), currency: "ETH", status: w.status,
      };
    case "sales":
    case "transfers":
      return eventRecord(address, w, ts(w.at));
  }
}

interface Ask {
  price: number;
  marketplace: string;
  marketplaceId: string;
}

/** What the store should answer, from the records it took. */
function oracle(taken: readonly Write[]) {
  const records = new Map<number, TokenWrite>();
  const listings = new Map<number, ListingWrite>();
  const events = new Map<string, EventWrite>();
  const ranks = new Map<number, number>();
  for (const w of taken) {
    if (w.kind === "tokens") records.set(w.asset, w);
    else if (w.kind === "rarity") ranks.set(w.asset, w.rank);
    else if (w.kind === "listings") listings.set(w.id, w);
    else events.set(`${w.kind}/${w.hash}/${w.asset}`, w);
  }
  // A token row: a record, or a sale or transfer of it.
  const tokens = new Set<number>([...records.keys(), ...[...events.values()].map((e) => e.asset)]);
  const moved = (l: ListingWrite) => [...events.values()].some((e) => e.asset === l.asset && ts(e.at) > ts(l.created));
  const asks = new Map<number, Ask>();
  for (const l of listings.values()) {
    if (l.status !== "CREATED" || moved(l)) continue;
    const a = { price: l.price * 1000, marketplace: marketplaceOf(l.id), marketplaceId: listingId(l.id) };
    const seen = asks.get(l.asset);
    if (seen === undefined || a.price < seen.price || (a.price === seen.price && (a.marketplace < seen.marketplace || (a.marketplace === seen.marketplace && a.marketplaceId < seen.marketplaceId)))) {
      asks.set(l.asset, a);
    }
  }
  const traitsOf = (asset: number): [string, string][] => {
    const r = records.get(asset);
    if (r === undefined) return [];
    return [["Color", COLORS[r.color]!], ...(r.level === 0 ? [] : [["Level", String(r.level)] as [string, string]])];
  };
  const values = new Map<string, { traitType: string; value: string; tokens: number[] }>();
  for (const asset of tokens) {
    for (const [type, value] of traitsOf(asset)) {
      const v = values.get(`${type}:${value}`) ?? { traitType: type, value, tokens: [] };
      v.tokens.push(asset);
      values.set(`${type}:${value}`, v);
    }
  }
  const byPrice = (a: number, b: number) => (asks.get(a)?.price ?? Infinity) - (asks.get(b)?.price ?? Infinity) || a - b;
  const traits = [...values.values()]
    .sort((a, b) => (a.traitType < b.traitType ? -1 : a.traitType > b.traitType ? 1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .map((v) => {
      const cheapest = [...v.tokens].filter((t) => asks.has(t)).sort(byPrice)[0];
      const ask = cheapest === undefined ? undefined : asks.get(cheapest)!;
      return {
        traitType: v.traitType, value: v.value, tokenCount: v.tokens.length,
        floor: ask && { assetId: String(cheapest), price: String(ask.price), marketplace: ask.marketplace, marketplaceId: ask.marketplaceId },
      };
    });
  const byRank = (a: number, b: number) => (ranks.get(a) ?? Infinity) - (ranks.get(b) ?? Infinity) || a - b;
  return { tokens: [...tokens], asks, ranks, traitsOf, traits, byPrice, byRank };
}

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`tokens and traits on ${engine} (property)`, () => {
    let h: Harness;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    /** Every page of a tokens list (2 a page), as asset ids and asks. */
    async function allTokens(address: string, sort: string, trait = "") {
      const out: { assetId: string; ask: string | undefined; listing: string | undefined; rank: number }[] = [];
      let cursor = "";
      do {
        const res = await h.assets.listTokens({ contractAddress: address, sort, trait, limit: 2, cursor });
        for (const t of res.data) out.push({ assetId: t.assetId, ask: t.listing?.price, listing: t.listing?.marketplaceId, rank: Number(t.rarityRank) });
        cursor = res.nextPage;
      } while (cursor !== "");
      return out;
    }

    it("asks, trait counts and floors, and the tokens list by price and by id follow any history", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 24 }), fc.boolean(), async (writes, bulk) => {
          const address = C(++run);
          runPrefix = String(run);
          const taken = await importHistory(h.store, writes, (w) => recordOf(address, w), bulk);
          if ((await h.read.collections.collectionId(address)) === undefined) return;
          const want = oracle(taken);
          const story = JSON.stringify(taken);

          const traits = (await h.client.listCollectionTraits({ contractAddress: address })).data.map((v) => ({
            traitType: v.traitType, value: v.value, tokenCount: Number(v.tokenCount),
            floor: v.floor && { assetId: v.floor.assetId, price: v.floor.price, marketplace: v.floor.marketplace, marketplaceId: v.floor.marketplaceId },
          }));
          expect(traits, story).toEqual(want.traits);

          const row = (asset: number) => ({
            assetId: String(asset), ask: want.asks.has(asset) ? String(want.asks.get(asset)!.price) : undefined, listing: want.asks.get(asset)?.marketplaceId,
            rank: want.ranks.get(asset) ?? 0,
          });
          expect(await allTokens(address, "price"), story).toEqual([...want.tokens].sort(want.byPrice).map(row));
          expect(await allTokens(address, "id"), story).toEqual([...want.tokens].sort((a, b) => a - b).map(row));
          expect(await allTokens(address, "rarity"), story).toEqual([...want.tokens].sort(want.byRank).map(row));
          for (const v of want.traits) {
            const members = want.tokens.filter((t) => want.traitsOf(t).some(([type, value]) => type === v.traitType && value === v.value));
            expect(await allTokens(address, "price", `${v.traitType}:${v.value}`), story).toEqual([...members].sort(want.byPrice).map(row));
            expect(await allTokens(address, "id", `${v.traitType}:${v.value}`), story).toEqual([...members].sort((a, b) => a - b).map(row));
            expect(await allTokens(address, "rarity", `${v.traitType}:${v.value}`), story).toEqual([...members].sort(want.byRank).map(row));
          }
        }),
        { numRuns: engine === "sqlite" ? 120 : 40 },
      );
    }, 300_000);
  });
}
