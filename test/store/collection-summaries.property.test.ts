import fc from "fast-check";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { Kind } from "../../src/domain/kinds/index.js";
import { OTHER_UNIT, washFlagsOf } from "../../src/domain/wash.js";
import { skipPg } from "../support/pg.js";
import { batchesByKind, type Harness, harness, importBatch } from "../support/property-store.js";

// The collections list (decisions.md, "Collections"): after any history of
// sales (sent again changed), listings and transfers over a few
// collections, in any order and batching, each order of ListCollections,
// paged by 2 and found by a text of the run's addresses, equals an oracle
// over the raw records: volume and sales of the 1-, 7- and 30-day windows
// ending at the answer's windowsEnd, the floor GetCollectionFloor answers
// (tested against its own oracle in fillable.property.test.ts), ties by
// address. And the windows move with the clock: a write an hour later
// keeps every summary again, a sale leaving the 1-day window leaves its
// volume. The sales' wallets make wash trades (self trades, tokens traded
// back): by default the windows, and so the orders, count the clean sales
// only; with includeWash every sale (the rules applied by domain/wash.ts).
// Both engines.

const HOUR = 3600;
const NOW = Math.floor(Date.now() / 1000);
const SORTS = ["volume1d", "volume7d", "volumeAll", "floor", "sales", "marketCap"] as const;

let run = 0;
/** Collection `i` of run `r`: its address holds the run's text (`runText`). */
const address = (r: number, i: number) => `0x${r.toString(16).padStart(6, "0")}ab${i.toString(16).padStart(2, "0")}${"0".repeat(30)}`;
const runText = (r: number) => `0x${r.toString(16).padStart(6, "0")}ab`;

/** Seller and buyer: 1 to 2 (most), 2 to 1 (back: a token traded both ways is a wash trade), 1 to 1 (a self trade). */
type Wallets = "12" | "21" | "11";
const wallet = (d: string) => `0x${d.repeat(40)}`;

type Write =
  | { kind: "sales"; collection: number; hash: number; asset: number; hoursAgo: number; price: number; wallets: Wallets; usdc: boolean }
  | { kind: "listings"; collection: number; id: number; asset: number; price: number; open: boolean }
  | { kind: "transfers"; collection: number; hash: number; asset: number };

const writeArb: fc.Arbitrary<Write> = fc.oneof(
  fc.record({
    kind: fc.constant("sales" as const),
    collection: fc.integer({ min: 0, max: 3 }),
    hash: fc.integer({ min: 0, max: 9 }),
    asset: fc.integer({ min: 0, max: 3 }),
    // Inside and outside each window, and at its edges.
    hoursAgo: fc.constantFrom(0, 1, 22, 23, 24, 100, 166, 167, 168, 500, 718, 719, 720, 2000),
    price: fc.integer({ min: 1, max: 5 }),
    wallets: fc.constantFrom<Wallets>("12", "12", "12", "21", "11"),
    // Paid in USDC: in no window, with wash or not (domain/wash.ts OTHER_UNIT).
    usdc: fc.constantFrom(false, false, false, false, true),
  }),
  fc.record({
    kind: fc.constant("listings" as const),
    collection: fc.integer({ min: 0, max: 3 }),
    id: fc.integer({ min: 0, max: 5 }),
    asset: fc.integer({ min: 0, max: 3 }),
    price: fc.integer({ min: 1, max: 5 }),
    open: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("transfers" as const), collection: fc.integer({ min: 0, max: 3 }), hash: fc.integer({ min: 0, max: 3 }), asset: fc.integer({ min: 0, max: 3 }) }),
);

const hex = (n: number, r: number, tag: number) => `0x${tag.toString(16)}${r.toString(16).padStart(8, "0")}${n.toString(16).padStart(55, "0")}`;
/** The wei of price step `p`: large enough to overflow 64 bits when summed. */
const wei = (p: number) => `${p}${"0".repeat(19)}`;

function recordOf(r: number, w: Write): object {
  const contractAddress = address(r, w.collection);
  if (w.kind === "sales") {
    // A sale is its hash, collection and asset: sent again, the same sale, moved or repriced.
    const timestamp = NOW - w.hoursAgo * HOUR;
    return {
      hash: hex(w.hash, r, 1 + w.collection), contractAddress, assetId: String(w.asset), timestamp, block: 100 + w.hash,
      from: wallet(w.wallets[0]!), to: wallet(w.wallets[1]!), price: wei(w.price), amountReceived: wei(w.price), currency: w.usdc ? "USDC" : "ETH", marketplace: "BLUR",
    };
  }
  if (w.kind === "listings") {
    return {
      marketplaceId: `${r}0${w.collection}0${w.id}`, marketplace: w.id % 2 === 0 ? "BLUR" : "OPENSEA", contractAddress, assetId: String(w.asset),
      createdAt: NOW - 3 * 86_400, lastUpdatedAt: NOW - 3 * 86_400 + (w.open ? 0 : 60), price: wei(w.price), currency: "ETH",
      status: w.open ? "CREATED" : "CANCELLED",
    };
  }
  return {
    hash: hex(w.hash, r, 8 + w.collection), logIndex: 0, contractAddress, assetId: String(w.asset), timestamp: NOW - 86_400, block: 5000 + w.hash,
    from: `0x${"2".repeat(40)}`, to: `0x${"3".repeat(40)}`,
  };
}

interface Expected {
  address: string;
  volume1d: bigint;
  volume7d: bigint;
  volume30d: bigint;
  volumeAll: bigint;
  sales1d: number;
  sales7d: number;
  sales30d: number;
  floor: string | undefined;
  /** The floor's price times the tokens ("" without a floor). */
  marketCap: string;
}

/** The windows ending with `hour` over the latest version of each sale of one collection of run `r`: its clean sales, or all in wei with `includeWash`. */
function windows(r: number, sales: Extract<Write, { kind: "sales" }>[], hour: number, includeWash: boolean): Omit<Expected, "address" | "floor" | "marketCap"> {
  const out = { volume1d: 0n, volume7d: 0n, volume30d: 0n, volumeAll: 0n, sales1d: 0, sales7d: 0, sales30d: 0 };
  const masks = washFlagsOf(
    sales.map((s) => ({
      id: s, assetId: String(s.asset), seller: wallet(s.wallets[0]!), buyer: wallet(s.wallets[1]!), timestamp: NOW - s.hoursAgo * HOUR,
      block: 100 + s.hash, hash: hex(s.hash, r, 1 + s.collection).slice(2), price: BigInt(wei(s.price)), otherUnit: s.usdc,
    })),
  );
  for (const s of sales) {
    if (includeWash ? (masks.get(s)! & OTHER_UNIT) !== 0 : masks.get(s) !== 0) continue;
    const h = Math.floor((NOW - s.hoursAgo * HOUR) / HOUR);
    const price = BigInt(wei(s.price));
    out.volumeAll += price;
    if (h >= hour - 23) [out.volume1d, out.sales1d] = [out.volume1d + price, out.sales1d + 1];
    if (h >= hour - 167) [out.volume7d, out.sales7d] = [out.volume7d + price, out.sales7d + 1];
    if (h >= hour - 719) [out.volume30d, out.sales30d] = [out.volume30d + price, out.sales30d + 1];
  }
  return out;
}

const byAddress = (a: Expected, b: Expected) => (a.address < b.address ? -1 : 1);
const desc = (a: bigint, b: bigint) => (a > b ? -1 : a < b ? 1 : 0);
const ORDERS: Record<(typeof SORTS)[number], (a: Expected, b: Expected) => number> = {
  volume1d: (a, b) => desc(a.volume1d, b.volume1d) || byAddress(a, b),
  volume7d: (a, b) => desc(a.volume7d, b.volume7d) || byAddress(a, b),
  volumeAll: (a, b) => desc(a.volumeAll, b.volumeAll) || byAddress(a, b),
  floor: (a, b) =>
    (a.floor === undefined ? 1 : 0) - (b.floor === undefined ? 1 : 0) ||
    (a.floor !== undefined && b.floor !== undefined ? desc(BigInt(b.floor), BigInt(a.floor)) : 0) ||
    byAddress(a, b),
  sales: (a, b) => b.sales1d - a.sales1d || byAddress(a, b),
  // Highest first; without a floor as zero (after every one with a cap).
  marketCap: (a, b) => desc(BigInt(a.marketCap || "0"), BigInt(b.marketCap || "0")) || byAddress(a, b),
};

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`collections list on ${engine} (property)`, () => {
    let h: Harness;

    beforeAll(async () => {
      h = await harness(engine);
    });
    afterAll(async () => {
      await h?.cleanup();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    /** Every row of ListCollections in order `sort`, found by `query`, paged by 2. */
    async function listAll(query: string, sort: string, includeWash = false) {
      const rows = [];
      let cursor = "";
      let windowsEnd = 0n;
      do {
        const page = await h.client.listCollections({ query, sort, limit: 2, cursor, includeWash });
        rows.push(...page.data);
        windowsEnd = page.windowsEnd;
        cursor = page.nextPage;
      } while (cursor !== "");
      return { rows, windowsEnd: Number(windowsEnd) };
    }

    it("every order equals the raw records' windows and floors, of clean sales or with wash, after any history in any order", async () => {
      let washed = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 24 }), fc.integer({ min: 1, max: 5 }), async (writes, size) => {
          const r = ++run;
          const kinds = new Set<number>();
          for (const batch of batchesByKind(writes, size)) {
            for (const w of batch) kinds.add(w.collection);
            await importBatch(h.store, batch[0]!.kind as Kind, batch.map((w) => recordOf(r, w)));
          }
          const story = JSON.stringify(writes);
          const latest = new Map<string, Extract<Write, { kind: "sales" }>>();
          for (const w of writes) if (w.kind === "sales") latest.set(`${w.collection}/${w.hash}/${w.asset}`, w);

          for (const [sort, includeWash] of SORTS.flatMap((sort) => [[sort, false], [sort, true]] as const)) {
            const { rows, windowsEnd } = await listAll(runText(r), sort, includeWash);
            const hour = windowsEnd / HOUR - 1;
            expect(hour, story).toBeGreaterThanOrEqual(Math.floor(NOW / HOUR));
            const expected: Expected[] = [];
            for (const c of kinds) {
              const a = address(r, c);
              const floor = (await h.client.getCollectionFloor({ contractAddress: a })).data!.floor?.price;
              const tokens = (await h.client.listCollectionHolders({ contractAddress: a })).data!.totalTokens;
              const marketCap = floor === undefined ? "" : (BigInt(floor) * tokens).toString();
              expected.push({ address: a, floor, marketCap, ...windows(r, [...latest.values()].filter((s) => s.collection === c), hour, includeWash) });
            }
            expected.sort(ORDERS[sort]);
            expect(
              rows.map((x) => ({
                address: x.contractAddress, volume1d: BigInt(x.volume1d), volume7d: BigInt(x.volume7d), volume30d: BigInt(x.volume30d), volumeAll: BigInt(x.volumeAll),
                sales1d: Number(x.sales1d), sales7d: Number(x.sales7d), sales30d: Number(x.sales30d), floor: x.floor?.price, marketCap: x.marketCap,
              })),
              `${sort}${includeWash ? " includeWash" : ""}: ${story}`,
            ).toEqual(expected);
            if (includeWash && expected.some((e) => e.sales30d !== windows(r, [...latest.values()].filter((x) => address(r, x.collection) === e.address), hour, false).sales30d)) washed++;
          }
        }),
        { numRuns: engine === "sqlite" ? 60 : 25 },
      );
      // The histories held wash trades in the windows (the includeWash answers differed from the default ones).
      expect(washed).toBeGreaterThan(0);
    }, 300_000);

    it("sums flagged sales of any amount exactly: past 2^95 wei, and past 2^63 in the limbs' sums", async () => {
      const r = ++run;
      const big = [2n ** 100n, 2n ** 94n, 2n ** 94n, 1n];
      const records = big.map((price, i) => ({ ...(recordOf(r, { kind: "sales", collection: 0, hash: i, asset: i, hoursAgo: 1, price: 1, wallets: "11", usdc: false }) as object), price: String(price), amountReceived: String(price) }));
      await importBatch(h.store, "sales", records);
      const total = big.reduce((a, b) => a + b, 0n);
      expect((await listAll(runText(r), "volume1d", true)).rows.map((x) => [x.volume1d, x.volume30d, Number(x.sales1d)])).toEqual([[String(total), String(total), 4]]);
      // Without the amount past 2^95: the limbs' sum of hi overflows 64 bits (2 × 2^62).
      await importBatch(h.store, "sales", [{ ...records[0]!, price: "1", amountReceived: "1" }]);
      expect((await listAll(runText(r), "volume1d", true)).rows.map((x) => x.volume7d)).toEqual([String(2n * 2n ** 94n + 2n)]);
    });

    it("the windows move on the hour: the next write keeps every summary again", async () => {
      const r = ++run;
      const sale = (c: number, hash: number, hoursAgo: number): Write => ({ kind: "sales", collection: c, hash, asset: 0, hoursAgo, price: 2, wallets: "12", usdc: false });
      // Collection 2 has a self trade only: its windows count it with wash only.
      const selfTrade: Write = { ...sale(2, 4, 10), wallets: "11" } as Write;
      await importBatch(h.store, "sales", [sale(0, 1, 1), sale(0, 2, 100), sale(1, 3, 10), selfTrade].map((w) => recordOf(r, w)));
      const before = await listAll(runText(r), "volume1d");
      expect(before.rows.map((x) => [x.contractAddress, x.volume1d, x.volume7d])).toEqual([
        [address(r, 0), wei(2), wei(4)],
        [address(r, 1), wei(2), wei(2)],
        [address(r, 2), "0", "0"],
      ]);
      expect((await listAll(runText(r), "volume1d", true)).rows.map((x) => [x.contractAddress, x.volume1d])).toEqual([
        [address(r, 0), wei(2)],
        [address(r, 1), wei(2)],
        [address(r, 2), wei(2)],
      ]);

      // Five days on, a write to another collection moves every window: the
      // sales of an hour and of ten hours ago leave the 1-day window, that
      // of 100 hours ago the 7-day one.
      vi.useFakeTimers({ toFake: ["Date"], now: (NOW + 5 * 86_400) * 1000 });
      await importBatch(h.store, "sales", [recordOf(r + 1000, sale(0, 9, -5 * 24))]);
      const after = await listAll(runText(r), "volume1d");
      expect(after.windowsEnd).toBe((Math.floor((NOW + 5 * 86_400) / HOUR) + 1) * HOUR);
      expect(after.rows.map((x) => [x.contractAddress, x.volume1d, x.volume7d, x.volume30d, Number(x.sales7d)])).toEqual([
        [address(r, 0), "0", wei(2), wei(4), 1],
        [address(r, 1), "0", wei(2), wei(2), 1],
        [address(r, 2), "0", "0", "0", 0],
      ]);
      // The summaries with wash moved too, that of the collection with flagged sales only among them.
      expect((await listAll(runText(r), "volume1d", true)).rows.map((x) => [x.contractAddress, x.volume1d, x.volume7d, Number(x.sales7d)])).toEqual([
        [address(r, 0), "0", wei(2), 1],
        [address(r, 1), "0", wei(2), 1],
        [address(r, 2), "0", wei(2), 1],
      ]);
    });
  });
}
