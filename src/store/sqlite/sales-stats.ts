import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { assetKey } from "./asset-key.js";
import { limbsToWei, sumWei } from "./wei.js";
import { type SalesSummary, summarize } from "../../domain/records.js";
import type { StatsFilter } from "../ports.js";
import type { SalePoint } from "../../domain/series.js";
import { SalesSeries } from "./sales-series.js";

// Collection stats from aggregates kept at write time.
//
// sales_hourly holds, per collection, marketplace and hour that has sales,
// the running totals (count and volume) of every sale up to the end of that
// hour; an hour's own totals are the step from the row before. The sales of one marketplace at or before a time T are then
//   running total of the last hour ending before T's hour (one index seek)
//   + the raw sales from the start of T's hour to T (one short index range),
// and any [since, until] window is the difference of two such lookups: four
// index operations per marketplace, whatever the collection's history or the
// window's length. Hours were chosen over a running total per sale (two seeks,
// no raw edge) because a write anywhere in history then rewrites one row per
// later hour instead of one per later sale, and the table holds a fraction of
// the sales' rows (docs/benchmarks.md, "Collection stats", for figures).
//
// Volumes are decimal text summed with BigInt: exact for any amount.
//
// Writers report every sale they insert (its hour gains its amount) and every
// sale they change, before and after (those hours are summed again from the
// raw rows); flush() writes the hours and rewrites the running totals from the
// earliest of them on. An extra recompute mark costs time, never correctness,
// so whatever is uncertain (a rolled-back part of a transaction) is recomputed.

export { BUCKET_SECONDS };

export interface Totals {
  n: number;
  volume: bigint;
}

type Prepare = (sql: string) => Statement;

const ZERO: Totals = { n: 0, volume: 0n };

/** What writes did to one hour: sales added (n, volume), or changed (recompute). */
interface Mark {
  n: number;
  volume: bigint;
  recompute: boolean;
}
const LATEST_BUCKET = Number.MAX_SAFE_INTEGER;

const bucketOf = (timestamp: number) => Math.floor(timestamp / BUCKET_SECONDS);
const bucketStart = (bucket: number) => bucket * BUCKET_SECONDS;
const bucketEnd = (bucket: number) => bucket * BUCKET_SECONDS + BUCKET_SECONDS - 1;

/** The queries reads and writes share: raw sums over an index range, and a running-total seek. */
class StatsQueries {
  constructor(protected readonly prepare: Prepare) {}

  /** Exact totals of one marketplace's sales with from <= timestamp <= to. */
  rawTotals(collectionId: number, marketplace: string, from: number, to: number): Totals {
    const where = "collection_id = ? AND marketplace = ? AND timestamp >= ? AND timestamp <= ?";
    const from_ = "sales INDEXED BY sales_by_marketplace";
    return exactTotals(this.prepare, from_, where, [collectionId, marketplace, from, to]);
  }

  /**
   * The distinct marketplaces of a collection in `from` (an index led by
   * collection_id, marketplace): a loose index scan, one seek per marketplace.
   */
  protected distinctMarketplaces(from: string, collectionId: number): string[] {
    const next = this.prepare(
      `SELECT marketplace FROM ${from} WHERE collection_id = ? AND marketplace > ? ORDER BY marketplace LIMIT 1`,
    ).pluck();
    const found: string[] = [];
    for (let m = next.get(collectionId, "") as string | undefined; m !== undefined; m = next.get(collectionId, m) as string | undefined) {
      found.push(m);
    }
    return found;
  }

  /** Running totals through the end of `bucket` (the last hour with sales at or before it). */
  runningThrough(collectionId: number, marketplace: string, bucket: number): Totals {
    const r = this.prepare(
      `SELECT cum_num_sales, cum_volume FROM sales_hourly
       WHERE collection_id = ? AND marketplace = ? AND hour <= ? ORDER BY hour DESC LIMIT 1`,
    )
      .raw()
      .get(collectionId, marketplace, bucket) as [number, string] | undefined;
    return r ? { n: r[0], volume: BigInt(r[1]) } : ZERO;
  }
}

/** Read side: a collection's stats for a window, from the aggregates. */
export class SalesStatsReader extends StatsQueries {
  summary(collectionId: number, filter: StatsFilter): SalesSummary {
    const totals =
      filter.assetId === undefined
        ? this.#byMarketplace(collectionId, filter.since, filter.until)
        : this.#forAsset(collectionId, filter.assetId, filter.since, filter.until);
    return summarize(totals);
  }

  /** The marketplaces a collection has sales on, by one index seek each. */
  marketplaces(collectionId: number): string[] {
    return this.distinctMarketplaces("sales_hourly", collectionId);
  }

  #byMarketplace(collectionId: number, since: number | undefined, until: number | undefined): Map<string, Totals> {
    const out = new Map<string, Totals>();
    for (const m of this.marketplaces(collectionId)) {
      out.set(m, this.#window(collectionId, m, since, until));
    }
    return out;
  }

  /** Totals of sales with since <= timestamp <= until (either bound optional). */
  #window(c: number, m: string, since: number | undefined, until: number | undefined): Totals {
    // A window inside one hour is its own raw range.
    if (since !== undefined && until !== undefined && bucketOf(since) === bucketOf(until)) {
      return this.rawTotals(c, m, since, until);
    }
    const upTo = until === undefined ? this.runningThrough(c, m, LATEST_BUCKET) : this.#atOrBefore(c, m, until);
    if (since === undefined || since === 0) return upTo;
    const before = this.#atOrBefore(c, m, since - 1);
    return { n: upTo.n - before.n, volume: upTo.volume - before.volume };
  }

  /**
   * Totals of sales with timestamp <= t: the running totals of an hour plus
   * or minus the raw sales of the shorter part of t's hour (its start to t,
   * added to the hour before; or t + 1 to its end, taken from t's own hour).
   */
  #atOrBefore(c: number, m: string, t: number): Totals {
    const bucket = bucketOf(t);
    const start = bucketStart(bucket);
    const end = bucketEnd(bucket);
    if (t === end) return this.runningThrough(c, m, bucket);
    if (t - start < end - t) {
      const whole = this.runningThrough(c, m, bucket - 1);
      const edge = this.rawTotals(c, m, start, t);
      return { n: whole.n + edge.n, volume: whole.volume + edge.volume };
    }
    const whole = this.runningThrough(c, m, bucket);
    const edge = this.rawTotals(c, m, t + 1, end);
    return { n: whole.n - edge.n, volume: whole.volume - edge.volume };
  }

  /**
   * One asset's sales are one range of sales_by_asset (the window bounds its
   * timestamps), summed in a single pass grouped by marketplace: the cost is
   * that asset's sales in the window, never the collection's.
   */
  #forAsset(c: number, assetId: string, since: number | undefined, until: number | undefined): Map<string, Totals> {
    const where = ["collection_id = ?", "asset_key = ?"];
    const params: unknown[] = [c, assetKey(assetId)];
    if (since !== undefined) {
      where.push("timestamp >= ?");
      params.push(since);
    }
    if (until !== undefined) {
      where.push("timestamp <= ?");
      params.push(until);
    }
    return exactGroupedTotals(this.prepare, "sales INDEXED BY sales_by_asset", where.join(" AND "), params);
  }
}

export interface FlushResult {
  /** Hour rows inserted, changed or deleted. */
  changed: number;
}

/** Write side: marks what writes touched, and brings the aggregates up to date. */
export class SalesAggregates extends StatsQueries {
  readonly #statements: Map<string, Statement>;
  /** `${collectionId}\t${marketplace}` → its marked hours. */
  #dirty = new Map<string, { collectionId: number; marketplace: string; buckets: Map<number, Mark> }>();
  /** The series aggregates (sales-series.ts), marked and flushed with the hours. */
  readonly #series: SalesSeries;

  constructor(db: Db) {
    const statements = new Map<string, Statement>();
    super((sql) => {
      let s = statements.get(sql);
      if (!s) {
        s = db.prepare(sql);
        statements.set(sql, s);
      }
      return s;
    });
    this.#statements = statements;
    this.#series = new SalesSeries(this.prepare);
  }

  /** Every SQL text prepared so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#statements.keys()];
  }

  /**
   * Marks the hour of a sale that changed, or changed away from: that hour is
   * summed again from the raw rows.
   */
  touch(collectionId: number, marketplace: string, timestamp: number): void {
    this.#mark(collectionId, marketplace, timestamp).recompute = true;
    this.#series.touch(collectionId, marketplace, timestamp);
  }

  /**
   * Adds a newly inserted sale to its hour: the hour's totals become its
   * stored totals plus what was added, with no need to read the rows again.
   */
  add(collectionId: number, marketplace: string, sale: SalePoint): void {
    const mark = this.#mark(collectionId, marketplace, sale.timestamp);
    mark.n++;
    mark.volume += sale.price;
    this.#series.add(collectionId, marketplace, sale);
  }

  /**
   * Forgets what was added since the marks were made and sums every marked
   * hour from the raw rows instead: for a rolled-back part of a transaction.
   */
  distrustAdded(): void {
    for (const d of this.#dirty.values()) for (const mark of d.buckets.values()) mark.recompute = true;
    this.#series.distrustAdded();
  }

  #mark(collectionId: number, marketplace: string, timestamp: number): Mark {
    const key = `${collectionId}\t${marketplace}`;
    let d = this.#dirty.get(key);
    if (!d) {
      d = { collectionId, marketplace, buckets: new Map() };
      this.#dirty.set(key, d);
    }
    const bucket = bucketOf(timestamp);
    let mark = d.buckets.get(bucket);
    if (!mark) {
      mark = { n: 0, volume: 0n, recompute: false };
      d.buckets.set(bucket, mark);
    }
    return mark;
  }

  get pending(): boolean {
    return this.#dirty.size > 0 || this.#series.pending;
  }

  /**
   * Recomputes every marked hour from the raw rows, then the running totals
   * from the earliest marked hour on. Must run inside the transaction that
   * wrote the rows, before it commits, so that both land together.
   */
  flush(): FlushResult {
    let changed = 0;
    const dirty = this.#dirty;
    this.#dirty = new Map();
    for (const { collectionId, marketplace, buckets } of dirty.values()) {
      changed += this.#recompute(collectionId, marketplace, buckets);
    }
    return { changed: changed + this.#series.flush() };
  }

  /**
   * Recomputes the aggregates of every collection (or one) from the raw rows
   * and reports how many hour and series rows were wrong: 0 when writes kept
   * them true.
   */
  rebuild(collectionId?: number): FlushResult {
    const pairs = this.prepare(
      `SELECT DISTINCT collection_id, marketplace FROM sales_hourly ${collectionId === undefined ? "" : "WHERE collection_id = ?"}`,
    );
    const hours = this.prepare("SELECT hour FROM sales_hourly WHERE collection_id = ? AND marketplace = ?").pluck();
    const collections = this.prepare(`SELECT id FROM collections ${collectionId === undefined ? "" : "WHERE id = ?"}`).pluck();
    const args = collectionId === undefined ? [] : [collectionId];
    this.#series.markAll(collectionId);
    for (const r of pairs.all(...args) as { collection_id: number; marketplace: string }[]) {
      for (const h of hours.all(r.collection_id, r.marketplace) as number[]) this.touch(r.collection_id, r.marketplace, bucketStart(h));
    }
    for (const c of collections.all(...args) as number[]) {
      for (const m of this.distinctMarketplaces("sales INDEXED BY sales_by_marketplace", c)) {
        for (const t of this.#saleHours(c, m)) this.touch(c, m, t);
      }
    }
    return this.flush();
  }

  /** One timestamp in each hour that has sales, newest first: one index seek per hour. */
  *#saleHours(collectionId: number, marketplace: string): Generator<number> {
    const next = this.prepare(
      `SELECT timestamp FROM sales INDEXED BY sales_by_marketplace
       WHERE collection_id = ? AND marketplace = ? AND timestamp < ? ORDER BY timestamp DESC LIMIT 1`,
    ).pluck();
    for (let t = next.get(collectionId, marketplace, Number.MAX_SAFE_INTEGER) as number | undefined; t !== undefined; ) {
      yield t;
      t = next.get(collectionId, marketplace, bucketStart(bucketOf(t))) as number | undefined;
    }
  }

  /** Rewrites the hour rows of (c, m) from the first marked bucket on; returns rows changed. */
  #recompute(c: number, m: string, marks: Map<number, Mark>): number {
    const marked = [...marks.keys()].sort((a, b) => a - b);
    const first = marked[0]!;
    const existing = this.prepare(
      `SELECT hour, cum_num_sales, cum_volume FROM sales_hourly
       WHERE collection_id = ? AND marketplace = ? AND hour >= ? ORDER BY hour`,
    )
      .raw()
      .all(c, m, first) as [number, number, string][];
    const put = this.prepare(
      "INSERT OR REPLACE INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume) VALUES (?, ?, ?, ?, ?)",
    );
    const remove = this.prepare("DELETE FROM sales_hourly WHERE collection_id = ? AND marketplace = ? AND hour = ?");

    const start = this.runningThrough(c, m, first - 1);
    // Running totals as stored (an hour's own totals are the step from the
    // row before) and as they become.
    let stored = start;
    let cumN = start.n;
    let cumV = start.volume;
    let changed = 0;
    // Merge the existing rows with the marked hours, in hour order.
    let i = 0;
    let j = 0;
    while (i < existing.length || j < marked.length) {
      const row = existing[i];
      const b = marked[j];
      const hour = row === undefined ? b! : b === undefined ? row[0] : Math.min(row[0], b);
      let storedOwn = ZERO;
      const old = row !== undefined && row[0] === hour ? row : undefined;
      if (old) {
        i++;
        const cum = { n: old[1], volume: BigInt(old[2]) };
        storedOwn = { n: cum.n - stored.n, volume: cum.volume - stored.volume };
        stored = cum;
      }
      const mark = b === hour ? marks.get(hour) : undefined;
      if (mark) j++;
      const own =
        mark === undefined
          ? storedOwn
          : mark.recompute
            ? this.rawTotals(c, m, bucketStart(hour), bucketEnd(hour))
            : { n: storedOwn.n + mark.n, volume: storedOwn.volume + mark.volume };
      if (own.n === 0) {
        if (old) {
          remove.run(c, m, hour);
          changed++;
        }
        continue;
      }
      cumN += own.n;
      cumV += own.volume;
      const cumVolume = cumV.toString();
      if (old && old[1] === cumN && old[2] === cumVolume) continue;
      put.run(c, m, hour, cumN, cumVolume);
      changed++;
    }
    return changed;
  }
}

/**
 * count and sum of the price limbs over `where`, exact: when a limb is NULL
 * (an amount past 2^95 wei) or a sum overflows SQLite's 64-bit integers, the
 * same range is read again and summed from the decimal text with BigInt.
 */
function exactTotals(prepare: Prepare, from: string, where: string, params: unknown[]): Totals {
  try {
    const r = prepare(`SELECT count(*), count(price_hi), sum(price_hi), sum(price_lo) FROM ${from} WHERE ${where}`)
      .raw()
      .safeIntegers(true)
      .get(...params) as [bigint, bigint, bigint | null, bigint | null];
    if (r[0] === r[1]) return { n: Number(r[0]), volume: limbsToWei(r[2], r[3]) };
  } catch (err) {
    if (!isOverflow(err)) throw err;
  }
  const prices = prepare(`SELECT price FROM ${from} WHERE ${where}`).pluck().all(...params) as string[];
  return { n: prices.length, volume: sumWei(prices) };
}

/** exactTotals grouped by marketplace. */
function exactGroupedTotals(prepare: Prepare, from: string, where: string, params: unknown[]): Map<string, Totals> {
  const out = new Map<string, Totals>();
  try {
    const rows = prepare(
      `SELECT marketplace, count(*), count(price_hi), sum(price_hi), sum(price_lo) FROM ${from} WHERE ${where} GROUP BY marketplace`,
    )
      .raw()
      .safeIntegers(true)
      .all(...params) as [string, bigint, bigint, bigint | null, bigint | null][];
    if (rows.every((r) => r[1] === r[2])) {
      for (const r of rows) out.set(r[0], { n: Number(r[1]), volume: limbsToWei(r[3], r[4]) });
      return out;
    }
  } catch (err) {
    if (!isOverflow(err)) throw err;
  }
  for (const [m, price] of prepare(`SELECT marketplace, price FROM ${from} WHERE ${where}`).raw().all(...params) as [string, string][]) {
    const t = out.get(m) ?? { n: 0, volume: 0n };
    out.set(m, { n: t.n + 1, volume: t.volume + BigInt(price) });
  }
  return out;
}

function isOverflow(err: unknown): boolean {
  return err instanceof Error && /integer overflow/i.test(err.message);
}
