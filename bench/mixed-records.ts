import { Random } from "../src/demo/random.js";
import { MARKETPLACES } from "./sales-file.js";

// An operator's mix of records, as issue 50's 30-minute run wrote it:
// bench:ingest-scale's mixed load (times spread over the last week) and
// bench:soak (times now, a live indexer's).

/** One POST: NDJSON lines of one kind (sales, listings, transfers). */
export interface Batch {
  kind: string;
  lines: string[];
}

/** The address of the benches' generated collection number `c`. */
export const addressOf = (c: number) => `0x${(0x5ca1e000000 + c).toString(16).padStart(40, "0")}`;

/** The MIXED_COLLECTIONS collections the mix falls on. */
export const MIXED_COLLECTIONS = 20;
export const mixedCollection = (i: number) => addressOf(100 + i);

/**
 * Batches of `batch` records, up to `n` in all (unbounded when Infinity):
 * sales (half the batches), listings (three in ten: two new for one update
 * of an earlier listing, price, status or end) and transfers (two in ten)
 * over MIXED_COLLECTIONS collections of 10,000 tokens and 2,000 wallets;
 * record i's time is `timeOf(i)`.
 */
export function mixedBatches(n: number, batch: number, timeOf: (i: number) => number): () => Batch | undefined {
  const rnd = new Random(31);
  const wallets = Array.from({ length: 2000 }, () => `0x${rnd.hex(40)}`);
  const listed: Record<string, unknown>[] = [];
  let made = 0;
  const record = (kind: string): string => {
    const i = made++;
    const time = timeOf(i);
    const contractAddress = mixedCollection(rnd.int(0, MIXED_COLLECTIONS - 1));
    const assetId = String(rnd.int(1, 10_000));
    const price = (BigInt(Math.round((0.01 + rnd.next() ** 3 * 20) * 1e6)) * 10n ** 12n).toString();
    if (kind === "sales") {
      return JSON.stringify({ hash: `0x${rnd.hex(64)}`, from: rnd.pick(wallets), to: rnd.pick(wallets), contractAddress, assetId, timestamp: time,
        block: 19_000_000 + i, price, amountReceived: price, currency: "ETH", marketplace: rnd.pick(MARKETPLACES) });
    }
    if (kind === "transfers") {
      return JSON.stringify({ hash: `0x${rnd.hex(64)}`, logIndex: rnd.int(0, 300), from: rnd.pick(wallets), to: rnd.pick(wallets), contractAddress, assetId,
        timestamp: time, block: 19_000_000 + i });
    }
    if (listed.length > 0 && rnd.next() < 1 / 3) {
      const earlier = listed[rnd.int(0, listed.length - 1)]!;
      const status = rnd.pick(["CREATED", "CREATED", "CANCELLED", "FULFILLED", "EXPIRED"]);
      return JSON.stringify({ ...earlier, lastUpdatedAt: Math.max(time, earlier.lastUpdatedAt as number), price, status });
    }
    const listing = { marketplaceId: String(5_000_000 + i), marketplace: rnd.pick(MARKETPLACES), contractAddress, assetId, createdAt: time,
      lastUpdatedAt: time, price, currency: "ETH", status: "CREATED" };
    if (listed.length < 20_000) listed.push(listing);
    else listed[rnd.int(0, listed.length - 1)] = listing;
    return JSON.stringify(listing);
  };
  return () => {
    if (made >= n) return undefined;
    const r = rnd.next();
    const kind = r < 0.5 ? "sales" : r < 0.8 ? "listings" : "transfers";
    return { kind, lines: Array.from({ length: Math.min(batch, n - made) }, () => record(kind)) };
  };
}
