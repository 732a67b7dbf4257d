// Sales series: the aggregates of one interval's sales (count, exact volume,
// lowest, highest, first and last price), and how intervals are cut and
// combined. Pure: the stores keep these per hour and per day at write time
// and fold raw sales with them; the service folds days into weeks.

export type SeriesInterval = "minute" | "hour" | "day" | "week";
export const SERIES_INTERVALS: readonly SeriesInterval[] = ["minute", "hour", "day", "week"];

/**
 * The spans the stores keep aggregates of (seconds); weeks are folded from
 * days. Minutes are not kept: a minute holds a sale or two, so a kept row
 * would cost each write what it saves a read, which sums the range's sales
 * (docs/decisions.md, issue 54).
 */
export const MINUTE = 60;
export const HOUR = 3600;
export const DAY = 86_400;
export const WEEK = 7 * DAY;
export type StoredSpan = typeof HOUR | typeof DAY;
export const STORED_SPANS: readonly StoredSpan[] = [HOUR, DAY];

/** The marketplace value of the aggregates over every marketplace. */
export const EVERY_MARKETPLACE = "";

/** Unix time 0 was a Thursday: weeks start on Monday, 3 days before it. */
const WEEK_ORIGIN = -3 * DAY;

export function intervalSeconds(interval: SeriesInterval): number {
  return interval === "minute" ? MINUTE : interval === "hour" ? HOUR : interval === "day" ? DAY : WEEK;
}

/** Whether a series of `interval` is summed from the raw sales (no stored span holds it). */
export const fromRawSales = (interval: SeriesInterval): boolean => interval === "minute";

/** The start of the interval holding `t` (UTC; weeks from Monday 00:00). */
export function intervalStart(interval: SeriesInterval, t: number): number {
  const length = intervalSeconds(interval);
  const origin = interval === "week" ? WEEK_ORIGIN : 0;
  return Math.floor((t - origin) / length) * length + origin;
}

/**
 * Where a sale stands in time. Sales at one time and block are ordered as
 * the sales list orders them (hash, then asset id, ascending, shown first
 * being "latest"), so that first and last are one sale each, whatever the
 * order sales were written in.
 */
export interface SalePoint {
  timestamp: number;
  block: number;
  /** 0x-hex, lower case. */
  hash: string;
  /** Canonical decimal. */
  assetId: string;
  price: bigint;
  /** Its price in US dollars at its point in force, exact (money.ts exactUsd); null: no point in force. */
  usd: bigint | null;
}

/** True when `a` is later than `b`: the sales list shows it before `b`. */
export function isLater(a: SalePoint, b: SalePoint): boolean {
  if (a.timestamp !== b.timestamp) return a.timestamp > b.timestamp;
  if (a.block !== b.block) return a.block > b.block;
  if (a.hash !== b.hash) return a.hash < b.hash;
  return a.assetId.length !== b.assetId.length ? a.assetId.length < b.assetId.length : a.assetId < b.assetId;
}

/** One interval's sales, summed. */
export interface BucketTotals {
  /** Start of the interval (epoch seconds). */
  start: number;
  n: number;
  volume: bigint;
  min: bigint;
  max: bigint;
  first: SalePoint;
  last: SalePoint;
  /** The sales' US dollars at their points, exact (money.ts exactUsd), and how many had no point (adding nothing). */
  usd: bigint;
  unpriced: number;
}

/**
 * What a series answers of one interval: its sums and its first and last
 * sale's price, amounts as canonical decimal text (read as stored and
 * answered as they are: parsing 1,825 amounts of a year of days into BigInt
 * and printing them again was most of the series' own CPU).
 */
export interface SeriesBucket {
  start: number;
  n: number;
  volume: string;
  min: string;
  max: string;
  firstPrice: string;
  lastPrice: string;
  /** The exact USD sum (money.ts exactUsd's scale) as decimal text, and the sales without a point. */
  volumeUsd: string;
  unpriced: number;
}

export function toSeriesBucket(b: BucketTotals): SeriesBucket {
  return {
    start: b.start,
    n: b.n,
    volume: b.volume.toString(),
    min: b.min.toString(),
    max: b.max.toString(),
    firstPrice: b.first.price.toString(),
    lastPrice: b.last.price.toString(),
    volumeUsd: b.usd.toString(),
    unpriced: b.unpriced,
  };
}

/** An interval holding one sale. */
export function bucketOfSale(start: number, sale: SalePoint): BucketTotals {
  return { start, n: 1, volume: sale.price, min: sale.price, max: sale.price, first: sale, last: sale, usd: sale.usd ?? 0n, unpriced: sale.usd === null ? 1 : 0 };
}

/** Two sets of an interval's sales (disjoint) as one. */
export function combine(a: BucketTotals, b: BucketTotals): BucketTotals {
  return {
    start: Math.min(a.start, b.start),
    n: a.n + b.n,
    volume: a.volume + b.volume,
    min: a.min < b.min ? a.min : b.min,
    max: a.max > b.max ? a.max : b.max,
    first: isLater(a.first, b.first) ? b.first : a.first,
    last: isLater(a.last, b.last) ? a.last : b.last,
    usd: a.usd + b.usd,
    unpriced: a.unpriced + b.unpriced,
  };
}

/** Sales (any order) folded into the buckets `startOf` puts them in, oldest first. */
export function bucketSales(sales: Iterable<SalePoint>, startOf: (t: number) => number): BucketTotals[] {
  const buckets = new Map<number, BucketTotals>();
  for (const s of sales) {
    const start = startOf(s.timestamp);
    const b = buckets.get(start);
    buckets.set(start, b === undefined ? bucketOfSale(start, s) : combine(b, bucketOfSale(start, s)));
  }
  return [...buckets.values()].sort((x, y) => x.start - y.start);
}

/** Buckets (oldest first) folded into the longer intervals that hold them. */
export function foldBuckets(buckets: readonly BucketTotals[], startOf: (t: number) => number): BucketTotals[] {
  const out: BucketTotals[] = [];
  for (const b of buckets) {
    const start = startOf(b.start);
    const last = out[out.length - 1];
    if (last !== undefined && last.start === start) out[out.length - 1] = combine(last, b);
    else out.push({ ...b, start });
  }
  return out;
}
