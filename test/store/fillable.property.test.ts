import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listingFragment } from "../../src/domain/wire/fragments.js";
import { skipPg } from "../support/pg.js";
import { importHistory, eventRecord, type EventWrite, type Harness, harness } from "../support/property-store.js";

// Listings that can no longer be filled are not active (decisions.md,
// "Fillable listings"): after any history of listing records, sales and
// transfers, in any arrival order and with records sent again changed, a
// listing whose token changed hands after it was created (the first sale or
// transfer of its token after its createdAt) answers CANCELLED from that
// moment, the status filter and the floor (now and at= any time) follow,
// and the rest answer what their records said. Checked on both engines
// against an oracle over the raw records.
//
// Listings as orders (decisions.md, "Listings as orders"): a listing whose
// maker did not own its token when it was created (by the ownership rule
// over the events at or before that second), and any listing of a token
// burned by then, is CANCELLED from its creation; one past its expiresAt (every expiry here is in the clock's
// past) is EXPIRED from then unless a move ended it first, and no floor
// holds it from its expiry on.

const T = 1_700_000_000;
const C = (n: number) => `0x${(0xf1100 + n).toString(16).padStart(40, "0")}`;
const MARKETPLACES = ["BLUR", "OPENSEA"] as const;

interface ListingWrite {
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
}
/** A sale or transfer; a burn is a transfer to the zero address. */
type Event = EventWrite & { burn?: boolean };
type Write = ListingWrite | Event;

// Few listings, assets and times: listings are re-sent with other times and
// statuses, and sales or transfers fall before, at and after their creation.
const asset = fc.integer({ min: 0, max: 2 });
const time = fc.integer({ min: 0, max: 12 });
const writeArb: fc.Arbitrary<Write> = fc.oneof(
  { weight: 3, arbitrary: fc.record({
    kind: fc.constant("listings" as const), id: fc.integer({ min: 0, max: 4 }), asset, created: time,
    updated: fc.integer({ min: 0, max: 4 }), price: fc.integer({ min: 1, max: 5 }),
    status: fc.constantFrom("CREATED" as const, "CREATED" as const, "FULFILLED" as const, "CANCELLED" as const, "EXPIRED" as const),
    maker: fc.constantFrom(0, 0, 1, 2, 3), expires: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 8 })),
  }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("sales" as const), hash: fc.integer({ min: 1, max: 4 }), asset, at: time }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfers" as const), hash: fc.integer({ min: 1, max: 4 }), asset, at: time }) },
  // Hashes of their own: a burn is no transfer of a sale's transaction, and keys no other transfer.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("transfers" as const), hash: fc.integer({ min: 101, max: 102 }), asset, at: time, burn: fc.constant(true) }) },
);

const marketplaceOf = (id: number) => MARKETPLACES[id % 2]!;
/** A marketplace's listing ids are the store's, not a collection's: each run's are its own. */
let runPrefix = "";
const listingId = (id: number) => `${runPrefix}${id}`;
const ts = (t: number) => T + t * 10;

const makerOf = (l: ListingWrite) => (l.maker === 0 ? "" : `0x${String(l.maker).repeat(40)}`);
/** Where eventRecord sends a sale's and a transfer's token; a burn's goes to nobody (the zero address). */
const recipientOf = (e: { kind: "sales" | "transfers"; burn: boolean }) => (e.burn ? "" : e.kind === "sales" ? `0x${"2".repeat(40)}` : `0x${"3".repeat(40)}`);
const SALE_LOG_INDEX = 2 ** 31 - 1;

function recordOf(address: string, w: Write): object {
  switch (w.kind) {
    case "listings":
      return {
        marketplaceId: listingId(w.id), marketplace: marketplaceOf(w.id), contractAddress: address, assetId: String(w.asset),
        createdAt: ts(w.created), lastUpdatedAt: ts(w.created + w.updated), price: String(w.price), currency: "ETH", status: w.status,
        maker: makerOf(w), expiresAt: w.expires === 0 ? 0 : ts(w.created + w.expires),
      };
    case "sales":
    case "transfers":
      return { ...eventRecord(address, w, ts(w.at)), ...(w.burn === true ? { to: `0x${"0".repeat(40)}` } : {}) };
  }
}

interface Truth {
  current: ListingWrite;
  /** Each version by its lastUpdatedAt: the last record written with it. */
  versions: Map<number, ListingWrite>;
}

/** What the store holds of the records it took: each listing's record and versions, each sale's and transfer's last record. */
function truthOf(taken: readonly Write[]) {
  const listings = new Map<number, Truth>();
  const events = new Map<string, { kind: "sales" | "transfers"; burn: boolean; hash: number; asset: number; at: number }>();
  for (const w of taken) {
    if (w.kind === "listings") {
      const t = listings.get(w.id) ?? { current: w, versions: new Map() };
      t.current = w;
      t.versions.set(ts(w.created + w.updated), w);
      listings.set(w.id, t);
    } else events.set(`${w.kind}/${w.hash}/${w.asset}`, { kind: w.kind, burn: w.burn === true, hash: w.hash, asset: w.asset, at: ts(w.at) });
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
const expiryOf = (l: ListingWrite) => (l.expires === 0 ? 0 : ts(l.created + l.expires));

/** Each listing's answer: CANCELLED at the move for a record still CREATED, else the record. */
function answersOracle(truth: ReturnType<typeof truthOf>) {
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
function activePrice(truth: ReturnType<typeof truthOf>, t: Truth, at: number | undefined): number | undefined {
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

function floorOracle(truth: ReturnType<typeof truthOf>, at: number | undefined) {
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

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`listings that can no longer be filled on ${engine} (property)`, () => {
    let h: Harness;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });

    it("answers, the status filter and the floor (now and at any time) follow each listing's token's first move after its creation", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 20 }), fc.boolean(), async (writes, bulk) => {
          const address = C(++run);
          runPrefix = String(run);
          const taken = await importHistory(h.store, writes, (w) => recordOf(address, w), bulk);
          const truth = truthOf(taken);
          const id = await h.read.collections.collectionId(address);
          if (id === undefined) return;
          const page = await h.read.listings.listingsPage(id, {}, { limit: 100, after: null });
          const answers = page.rows.map((r) => ({ marketplaceId: r.marketplaceId, status: r.status, lastUpdatedAt: r.lastUpdatedAt }))
            .sort((a, b) => (a.marketplaceId < b.marketplaceId ? -1 : 1));
          const want = answersOracle(truth);
          expect(answers, JSON.stringify(taken)).toEqual(want);
          // The ready answers (domain/wire/fragments.ts) moved with them: the page read as them is the page encoded whole.
          const ready = await h.read.listings.listingsPage(id, {}, { limit: 100, after: null }, "json");
          expect(ready.rows, JSON.stringify(taken)).toEqual(page.rows.map((r) => listingFragment(r, "json")));
          const created = await h.read.listings.listingsPage(id, { status: "CREATED" }, { limit: 100, after: null });
          expect(created.rows.map((r) => r.marketplaceId).sort()).toEqual(want.filter((a) => a.status === "CREATED").map((a) => a.marketplaceId));
          for (const at of [undefined, ...Array.from({ length: 18 }, (_, i) => ts(i) - 5), ...Array.from({ length: 18 }, (_, i) => ts(i))]) {
            const res = await h.client.getCollectionFloor({ contractAddress: address, at: at === undefined ? undefined : BigInt(at) });
            const got = res.data!.groups.map((g) => ({ marketplace: g.marketplace, marketplaceId: g.marketplaceId, price: g.price }));
            expect(got, `at ${at}: ${JSON.stringify(taken)}`).toEqual(floorOracle(truth, at));
          }
        }),
        { numRuns: engine === "sqlite" ? 150 : 60 },
      );
    }, 300_000);
  });
}
