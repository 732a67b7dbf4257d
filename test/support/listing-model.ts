import fc from "fast-check";
import type { EventWrite } from "./property-store.js";
import { eventRecord } from "./property-store.js";

// The listings model of the fillable-listings property tests (fillable and
// floor history): listing records with makers and expiries, sales,
// transfers and burns over few tokens and times, and an oracle of what the
// store must answer from the raw records (decisions.md, "Fillable
// listings", "Listings as orders").

export const T = 1_700_000_000;
export const C = (n: number) => `0x${(0xf1100 + n).toString(16).padStart(40, "0")}`;
export const MARKETPLACES = ["BLUR", "OPENSEA"] as const;

export interface ListingWrite {
  kind: "listings";
  id: number;
  asset: number;
  created: number;
  updated: number; // offset from created
  price: number;
  status: "CREATED" | "FULFILLED" | "CANCELLED" | "EXPIRED";
  /** 0: none; else the address of that digit (1: the sales' seller, 2: their buyer and the transfers' sender, 3: the transfers' recipient). */
  maker: number;
  /** 0: none; else an offset from created. */
  expires: number;
  /** Units offered (an ERC-1155 listing's: test/support/erc1155-listing-model.ts); absent: left out of the record. */
  quantity?: number;
}
/** A sale or transfer; a burn is a transfer to the zero address. */
export type Event = EventWrite & { burn?: boolean };
export type Write = ListingWrite | Event;

// Few listings, assets and times: listings are re-sent with other times and
// statuses, and sales or transfers fall before, at and after their creation.
const asset = fc.integer({ min: 0, max: 2 });
const time = fc.integer({ min: 0, max: 12 });

/** A listing record over few listings, prices and times, of the assets and makers given (and quantities, when given). */
export function listingWriteArb(o: { asset: fc.Arbitrary<number>; maker: fc.Arbitrary<number>; quantity?: fc.Arbitrary<number> }): fc.Arbitrary<ListingWrite> {
  const listing = fc.record({
    kind: fc.constant("listings" as const), id: fc.integer({ min: 0, max: 4 }), asset: o.asset, created: time,
    updated: fc.integer({ min: 0, max: 4 }), price: fc.integer({ min: 1, max: 5 }),
    status: fc.constantFrom("CREATED" as const, "CREATED" as const, "FULFILLED" as const, "CANCELLED" as const, "EXPIRED" as const),
    maker: o.maker, expires: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
  });
  const quantity = o.quantity;
  return quantity === undefined ? listing : fc.tuple(listing, quantity).map(([l, q]) => ({ ...l, quantity: q }));
}

export const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 3, arbitrary: listingWriteArb({ asset, maker: fc.constantFrom(0, 0, 1, 2, 3) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("sales" as const), hash: fc.integer({ min: 1, max: 4 }), asset, at: time }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfers" as const), hash: fc.integer({ min: 1, max: 4 }), asset, at: time }) },
  // Hashes of their own: a burn is no transfer of a sale's transaction, and keys no other transfer.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfers" as const), hash: fc.integer({ min: 101, max: 102 }), asset, at: time, burn: fc.constant(true) }) },
);

export const marketplaceOf = (id: number) => MARKETPLACES[id % 2]!;
/** A marketplace's listing ids are the store's, not a collection's: each run's are its own (setRunPrefix). */
let runPrefix = "";
export const setRunPrefix = (prefix: string) => {
  runPrefix = prefix;
};
export const listingId = (id: number) => `${runPrefix}${id}`;
export const ts = (t: number) => T + t * 10;

const makerOf = (l: ListingWrite) => (l.maker === 0 ? "" : `0x${String(l.maker).repeat(40)}`);
/** Where eventRecord sends a sale's and a transfer's token; a burn's goes to nobody (the zero address). */
const recipientOf = (e: { kind: "sales" | "transfers"; burn: boolean }) => (e.burn ? "" : e.kind === "sales" ? `0x${"2".repeat(40)}` : `0x${"3".repeat(40)}`);
const SALE_LOG_INDEX = 2 ** 31 - 1;

export function recordOf(address: string, w: Write): object {
  switch (w.kind) {
    case "listings":
      return {
        marketplaceId: listingId(w.id), marketplace: marketplaceOf(w.id), contractAddress: address, assetId: String(w.asset),
        createdAt: ts(w.created), lastUpdatedAt: ts(w.created + w.updated), price: String(w.price), currency: "ETH", status: w.status,
        maker: makerOf(w), expiresAt: w.expires === 0 ? 0 : ts(w.created + w.expires), ...(w.quantity === undefined ? {} : { quantity: String(w.quantity) }),
      };
    case "sales":
    case "transfers":
      return { ...eventRecord(address, w, ts(w.at)), ...(w.burn === true ? { to: `0x${"0".repeat(40)}` } : {}) };
  }
}

export interface Truth {
  current: ListingWrite;
  /** Each version by its lastUpdatedAt: the last record written with it. */
  versions: Map<number, ListingWrite>;
}

/** The listings the store took and when each stops being fillable by its token's moves (undefined: never). */
export interface ListingTruth {
  listings: Map<number, Truth>;
  moved(l: ListingWrite): number | undefined;
}

/** Each listing's record and versions of the records the store took. */
export function listingTruths(taken: readonly { kind: string }[]): Map<number, Truth> {
  const listings = new Map<number, Truth>();
  for (const w of taken) {
    if (w.kind !== "listings") continue;
    const l = w as ListingWrite;
    const t = listings.get(l.id) ?? { current: l, versions: new Map() };
    t.current = l;
    t.versions.set(ts(l.created + l.updated), l);
    listings.set(l.id, t);
  }
  return listings;
}

/** What the store holds of the records it took: each listing's record and versions, each sale's and transfer's last record. */
export function truthOf(taken: readonly Write[]) {
  const listings = listingTruths(taken);
  const events = new Map<string, { kind: "sales" | "transfers"; burn: boolean; hash: number; asset: number; at: number }>();
  for (const w of taken) {
    if (w.kind !== "listings") events.set(`${w.kind}/${w.hash}/${w.asset}`, { kind: w.kind, burn: w.burn === true, hash: w.hash, asset: w.asset, at: ts(w.at) });
  }
  /**
   * The owner of a token at a second (decisions.md, "Ownership"): the latest
   * event at or before it by (block, log index, hash); a sale whose
   * transaction's transfer of the token is known is that transfer, at the
   * transfer's time.
   */
  const ownerAt = (asset: number, time: number): string | undefined => {
    const all = [...events.values()].filter((e) => e.asset === asset);
    const known = all.filter((e) => e.at <= time && (e.kind === "transfers" || !all.some((x) => x.kind === "transfers" && x.hash === e.hash)))
      .map((e) => ({ block: 100 + (e.at - T) / 10, log: e.kind === "sales" ? SALE_LOG_INDEX : 0, hash: e.hash, to: recipientOf(e) }))
      .sort((a, b) => b.block - a.block || b.log - a.log || b.hash - a.hash);
    return known[0]?.to;
  };
  /** The time a listing stops being fillable by ownership: its creation when its token was burned by then or its maker did not own it then, else its token's first move after it. */
  const moved = (l: ListingWrite) => {
    const owner = ownerAt(l.asset, ts(l.created));
    if (owner !== undefined && (l.maker === 0 ? owner === "" : owner !== makerOf(l))) return ts(l.created);
    const after = [...events.values()].filter((e) => e.asset === l.asset && e.at > ts(l.created)).map((e) => e.at);
    return after.length === 0 ? undefined : Math.min(...after);
  };
  return { listings, moved };
}

/** A listing's expiry, 0 for none (every one is in the clock's past). */
export const expiryOf = (l: ListingWrite) => (l.expires === 0 ? 0 : ts(l.created + l.expires));

/** Each listing's answer: CANCELLED at the move for a record still CREATED, else the record. */
export function answersOracle(truth: ListingTruth) {
  return [...truth.listings.values()]
    .map(({ current: l }) => {
      const m = truth.moved(l);
      const e = expiryOf(l);
      const ended = l.status === "CREATED" && m !== undefined && (e === 0 || m < e);
      const lapsed = l.status === "CREATED" && !ended && e !== 0;
      return {
        marketplaceId: listingId(l.id),
        status: ended ? "CANCELLED" : lapsed ? "EXPIRED" : l.status,
        lastUpdatedAt: ended ? Math.max(ts(l.created + l.updated), m) : lapsed ? Math.max(ts(l.created + l.updated), e) : ts(l.created + l.updated),
      };
    })
    .sort((a, b) => (a.marketplaceId < b.marketplaceId ? -1 : 1));
}

/** The price a listing was active at at time `at` (undefined: not active), by decisions.md's history rule, cut at its move. */
export function activePrice(truth: ListingTruth, t: Truth, at: number | undefined): number | undefined {
  const l = t.current;
  const m = truth.moved(l);
  const e = expiryOf(l);
  if (at === undefined) return l.status === "CREATED" && m === undefined && e === 0 ? l.price : undefined;
  if (ts(l.created) > at || (m !== undefined && at >= m) || (e !== 0 && at >= e)) return undefined;
  const times = [...t.versions.keys()].sort((a, b) => a - b);
  if (at < times[0]!) return t.versions.get(times[0]!)!.price;
  const last = times.filter((x) => x <= at).pop()!;
  const v = t.versions.get(last)!;
  return v.status === "CREATED" ? v.price : undefined;
}

export function floorOracle(truth: ListingTruth, at: number | undefined) {
  const groups = new Map<string, { marketplaceId: string; price: number }>();
  for (const t of truth.listings.values()) {
    const p = activePrice(truth, t, at);
    if (p === undefined) continue;
    const m = marketplaceOf(t.current.id);
    const id = listingId(t.current.id);
    const seen = groups.get(m);
    if (seen === undefined || p < seen.price || (p === seen.price && id < seen.marketplaceId)) groups.set(m, { marketplaceId: id, price: p });
  }
  return [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([marketplace, g]) => ({ marketplace, marketplaceId: g.marketplaceId, price: String(g.price) }));
}

