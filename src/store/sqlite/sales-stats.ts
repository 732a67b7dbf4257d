import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { assetKey } from "./asset-key.js";
import { limbsToWei, sumWei } from "./wei.js";
import { type SalesSummary, summarize } from "../../domain/rows.js";
import type { StatsFilter } from "../ports/reads.js";
import type { SalePoint } from "../../domain/series.js";
import { SalesSeries } from "./sales-series.js";
import { CLEAN, FLAGGED, IN_WEI, WASHED, WASHED_FROM } from "./wash.js";
import { type UsdSummary, UsdVolumes } from "../../domain/money.js";
import { usdPointSql } from "../shared/prices.js";
import { usdWindowParts } from "../shared/usd-window.js";

// Collection stats from aggregates kept at write time.
//
// sales_hourly holds, per collection, marketplace and hour that has sales,
// the running totals (count and volume) of every sale up to the end of that
// hour; an hour's own totals are the step from the row before. The sales of one marketplace at or before a time T are then
//   running total of the last hour ending before T's hour (one index seek)
//   + the raw sales from the start of T's hour to T (one short index range),
// and any [since, until] window is the difference of two such lookups.
// stats_hours holds the same per collection and hour, every marketplace's
// running totals in one row, so that a window is one statement of three
// seeks and two short ranges whatever the marketplaces (SalesStatsReader);
// sales_hourly stays the per-marketplace truth it is kept from.
//
// Hours were chosen over a running total per sale (no raw edge) because a
// write anywhere in history then rewrites one row per later hour instead of
// one per later sale, and the table holds a fraction of the sales' rows
// (bench:stats).
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
  /**
   * `clean`: the condition of the sales the aggregates hold (wash.ts CLEAN);
   * a migration before 29, which made the flags, sums every sale.
   */
  constructor(protected readonly prepare: Prepare, protected readonly clean: () => string = () => CLEAN) {}

  /** Exact totals of one marketplace's sales with from <= timestamp <= to, wash trades left out (the aggregates hold the others). */
  rawTotals(collectionId: number, marketplace: string, from: number, to: number): Totals {
    const where = `collection_id = ? AND marketplace = ? AND timestamp >= ? AND timestamp <= ? AND ${this.clean()}`;
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
  constructor(
    prepare: Prepare,
    /** Runs reads in one snapshot of the store (statements.ts). */
    private readonly snapshot: <T>(read: () => T) => T,
  ) {
    super(prepare);
  }

  /**
   * A window's totals from one snapshot of the store: an import committing
   * meanwhile cannot mix its rows into the sums. A window is one statement,
   * its own snapshot; its fallback, and an asset's exact path, take one.
   */
  summary(collectionId: number, filter: StatsFilter): SalesSummary {
    const { assetId, since, until, includeWash = false } = filter;
    if (assetId !== undefined) return summarize(this.snapshot(() => this.#forAsset(collectionId, assetId, since, until, includeWash)));
    if (!includeWash) return summarize(this.#inOneStatement(collectionId, since, until) ?? this.snapshot(() => this.#byMarketplace(collectionId, since, until)));
    // The aggregates' figures and the flagged sales of the window, in one snapshot.
    return summarize(this.snapshot(() => {
      const totals = this.#inOneStatement(collectionId, since, until) ?? this.#byMarketplace(collectionId, since, until);
      const washed = exactGroupedTotals(this.prepare, WASHED_FROM, WASHED, [collectionId, since ?? 0, until ?? Number.MAX_SAFE_INTEGER]);
      for (const [m, w] of washed) {
        const t = totals.get(m) ?? ZERO;
        totals.set(m, { n: t.n + w.n, volume: t.volume + w.volume });
      }
      return totals;
    }));
  }

  /**
   * A window's stats in US dollars (docs/money.md, "Stats in USD"), in one
   * snapshot: its whole days and hours from the series' dollars (of each
   * marketplace: a seek of its intervals per part), its edges' sales and,
   * with includeWash, its flagged sales read at their points. Undefined
   * when those raw sales are more than `maxSales`.
   */
  usdSummary(collectionId: number, filter: StatsFilter, maxSales: number): UsdSummary | undefined {
    const parts = usdWindowParts(filter.since ?? 0, filter.until ?? Number.MAX_SAFE_INTEGER);
    return this.snapshot(() => {
      const volumes = new UsdVolumes();
      const kept = this.prepare(
        "SELECT num_sales, volume_usd, unpriced FROM sales_series WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket < ?",
      ).raw();
      for (const m of this.distinctMarketplaces("sales_series", collectionId)) {
        for (const part of parts.kept) {
          // Exact at the scale of a sale of 18 decimals (money.ts exactUsd), as ETH's.
          for (const [n, usd, unpriced] of kept.iterate(collectionId, m, part.span, part.from, part.to) as Iterable<[number, string, number]>) volumes.add(m, "ETH", n, unpriced, BigInt(usd));
        }
      }
      const raw = this.prepare(`SELECT s.marketplace, s.price, s.currency, ${usdPointSql("s")} FROM sales s INDEXED BY sales_by_time
        WHERE s.collection_id = ? AND s.timestamp >= ? AND s.timestamp <= ? AND s.${this.clean()}`).raw();
      type Sale = [string, string, string, string | null];
      // Each read started when the one before it ended (a statement iterates once at a time).
      const reads = parts.raw.map((r) => () => raw.iterate(collectionId, r.from, r.to) as Iterable<Sale>);
      if (filter.includeWash === true) {
        const flagged = this.prepare(`SELECT s.marketplace, s.price, s.currency, ${usdPointSql("s")} FROM sales s INDEXED BY sales_washed
          WHERE s.collection_id = ? AND ${FLAGGED} AND s.timestamp >= ? AND s.timestamp <= ?`).raw();
        reads.push(() => flagged.iterate(collectionId, filter.since ?? 0, filter.until ?? Number.MAX_SAFE_INTEGER) as Iterable<Sale>);
      }
      let n = 0;
      for (const read of reads) {
        // Leaving the loop early closes the statement's iterator: the read stops at the bound's next sale.
        for (const [marketplace, price, currency, usd] of read()) {
          if (++n > maxSales) return undefined;
          volumes.sale(marketplace, price, currency, usd);
        }
      }
      return volumes.summary();
    });
  }

  /**
   * #byMarketplace's reads as one statement (the parts as rows, UNION ALL):
   * in a profile, the snapshot's BEGIN and COMMIT around five statements
   * cost as much as two of the statements. Undefined when SQLite cannot sum
   * an edge exactly (an amount past 2^95 wei, or a sum past 2^63):
   * #byMarketplace then sums in BigInt.
   */
  #inOneStatement(c: number, since: number | undefined, until: number | undefined): Map<string, Totals> | undefined {
    const [upper, lower] = windowBounds(since, until);
    let rows: [bigint, string | null, string | bigint | null, bigint | null, bigint | null, bigint | null][];
    try {
      rows = this.prepare(WINDOW_SQL)
        .raw()
        .safeIntegers(true)
        .all({ c, latest: LATEST_BUCKET, uw: upper.whole, uf: upper.from, ut: upper.to, lw: lower.whole, lf: lower.from, lt: lower.to }) as typeof rows;
    } catch (err) {
      if (isOverflow(err)) return undefined;
      throw err;
    }
    const parts: Map<string, Totals>[] = [new Map(), new Map(), new Map(), new Map(), new Map()];
    for (const [part, m, a, limbed, hi, lo] of rows) {
      const p = Number(part);
      if (m === null) {
        if (a !== null) parts[p] = parseRunning(a as string);
      } else {
        if (a !== limbed) return undefined;
        parts[p]!.set(m, { n: Number(a), volume: limbsToWei(hi, lo) });
      }
    }
    const [latest, uWhole, uEdge, lWhole, lEdge] = parts as [Map<string, Totals>, Map<string, Totals>, Map<string, Totals>, Map<string, Totals>, Map<string, Totals>];
    return windowTotals(latest, { bound: upper, whole: uWhole, edge: uEdge }, { bound: lower, whole: lWhole, edge: lEdge });
  }

  /**
   * Every marketplace's totals in [since, until] from the collection's
   * running totals (stats_hours: one row per hour with sales holds every
   * marketplace's running totals through that hour). Each bound is one seek
   * of stats_hours and, where it falls inside an hour, the raw sales of the
   * shorter part of that hour, all marketplaces in one short range of
   * sales_by_time: at most five statements, whatever the collection's
   * marketplaces, history or window. The marketplaces are those of the
   * latest row (every one the collection has sold on).
   */
  #byMarketplace(c: number, since: number | undefined, until: number | undefined): Map<string, Totals> {
    const [upper, lower] = windowBounds(since, until);
    const read = (bound: Bound) => ({
      bound,
      whole: bound.whole === NO_HOUR ? new Map<string, Totals>() : this.#runningAt(c, bound.whole),
      edge: bound.from > bound.to ? new Map<string, Totals>() : this.#edge(c, bound.from, bound.to),
    });
    return windowTotals(this.#runningAt(c, LATEST_BUCKET), read(upper), read(lower));
  }

  /** Every marketplace's running totals through the end of `bucket` (the last hour with sales at or before it). */
  #runningAt(c: number, bucket: number): Map<string, Totals> {
    const text = this.prepare("SELECT running FROM stats_hours WHERE collection_id = ? AND hour <= ? ORDER BY hour DESC LIMIT 1")
      .pluck()
      .get(c, bucket) as string | undefined;
    return text === undefined ? new Map() : parseRunning(text);
  }

  /** Every marketplace's raw sales with from <= timestamp <= to: one range of the collection's sales in time order. */
  #edge(c: number, from: number, to: number): Map<string, Totals> {
    return exactGroupedTotals(this.prepare, "sales INDEXED BY sales_by_time", `collection_id = ? AND timestamp >= ? AND timestamp <= ? AND ${CLEAN}`, [c, from, to]);
  }

  /**
   * One asset's sales are one range of sales_by_asset (the window bounds its
   * timestamps), summed in a single pass grouped by marketplace: the cost is
   * that asset's sales in the window, never the collection's.
   */
  #forAsset(c: number, assetId: string, since: number | undefined, until: number | undefined, includeWash: boolean): Map<string, Totals> {
    const where = ["collection_id = ?", "asset_key = ?", includeWash ? IN_WEI : CLEAN];
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

/** Before any hour: a rewrite of stats_hours from here rewrites all of a collection's rows; a bound's seek from here finds none. */
const NO_HOUR = Number.MIN_SAFE_INTEGER;

/**
 * One bound of a window as #inOneStatement reads it: every marketplace's
 * running totals through hour `whole`, plus (sign 1) or minus (sign -1) the
 * raw sales with from <= timestamp <= to.
 */
interface Bound {
  whole: number;
  from: number;
  to: number;
  sign: 1 | -1;
}

/** The bound of nothing: no running totals, an empty edge. */
const NOTHING: Bound = { whole: NO_HOUR, from: 1, to: 0, sign: 1 };

/**
 * The upper and lower bound of [since, until] (either optional): a window
 * inside one hour is its own raw range; otherwise the totals at or before
 * `until` less those at or before `since - 1`.
 */
function windowBounds(since: number | undefined, until: number | undefined): [Bound, Bound] {
  if (since !== undefined && until !== undefined && bucketOf(since) === bucketOf(until)) return [{ whole: NO_HOUR, from: since, to: until, sign: 1 }, NOTHING];
  const upper = until === undefined ? { ...NOTHING, whole: LATEST_BUCKET } : boundAtOrBefore(until);
  return [upper, since === undefined || since === 0 ? NOTHING : boundAtOrBefore(since - 1)];
}

/**
 * Totals at or before t: the running totals of an hour plus or minus the
 * raw sales of the shorter part of t's hour (its start to t, added to the
 * hour before; or t + 1 to its end, taken from t's own hour).
 */
function boundAtOrBefore(t: number): Bound {
  const bucket = bucketOf(t);
  const start = bucketStart(bucket);
  const end = bucketEnd(bucket);
  if (t === end) return { whole: bucket, from: 1, to: 0, sign: 1 };
  if (t - start < end - t) return { whole: bucket - 1, from: start, to: t, sign: 1 };
  return { whole: bucket, from: t + 1, to: end, sign: -1 };
}

/** What was read for a bound: every marketplace's running totals through its hour, and its edge. */
interface BoundRead {
  bound: Bound;
  whole: Map<string, Totals>;
  edge: Map<string, Totals>;
}

/** A marketplace's totals at a bound: its running totals and its edge. */
function at({ bound, whole, edge }: BoundRead, m: string): Totals {
  const w = whole.get(m) ?? ZERO;
  const e = edge.get(m);
  if (e === undefined) return w;
  return bound.sign === 1 ? { n: w.n + e.n, volume: w.volume + e.volume } : { n: w.n - e.n, volume: w.volume - e.volume };
}

/** Every marketplace's totals in the window (the marketplaces of the latest running totals: every one the collection sold on). */
function windowTotals(latest: Map<string, Totals>, upper: BoundRead, lower: BoundRead): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const m of latest.keys()) {
    const u = at(upper, m);
    const l = at(lower, m);
    out.set(m, { n: u.n - l.n, volume: u.volume - l.volume });
  }
  return out;
}

// The parts of a window, each a row or rows tagged with its number: 0 the
// latest running totals (every marketplace), 1 and 3 the running totals of
// the upper and lower bound (one seek of stats_hours each), 2 and 4 their
// edges (one range of sales_by_time each, grouped by marketplace).
const runningPart = (part: number, hour: string) =>
  `SELECT ${part}, NULL, (SELECT running FROM stats_hours WHERE collection_id = @c AND hour <= ${hour} ORDER BY hour DESC LIMIT 1), NULL, NULL, NULL`;
const edgePart = (part: number, from: string, to: string) =>
  `SELECT ${part}, marketplace, count(*), count(price_hi), sum(price_hi), sum(price_lo) FROM sales INDEXED BY sales_by_time
     WHERE collection_id = @c AND timestamp >= ${from} AND timestamp <= ${to} AND ${CLEAN} GROUP BY marketplace`;
export const WINDOW_SQL = [runningPart(0, "@latest"), runningPart(1, "@uw"), edgePart(2, "@uf", "@ut"), runningPart(3, "@lw"), edgePart(4, "@lf", "@lt")].join(
  "\n  UNION ALL ",
);

/**
 * stats_hours.running: every marketplace's running totals through the hour,
 * in marketplace order, as JSON `[[marketplace, count, "volume"], ...]`
 * (volumes as exact decimal text).
 */
function formatRunning(state: Map<string, Totals>): string {
  const entries = [...state].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return JSON.stringify(entries.map(([m, t]) => [m, t.n, t.volume.toString()]));
}

function parseRunning(text: string): Map<string, Totals> {
  const out = new Map<string, Totals>();
  for (const [m, n, v] of JSON.parse(text) as [string, number, string][]) out.set(m, { n, volume: BigInt(v) });
  return out;
}

export interface FlushResult {
  /** Hour rows inserted, changed or deleted. */
  changed: number;
}

/** Each connection's statements of the aggregates (SalesAggregates). */
const STATEMENTS = new WeakMap<Db, Map<string, Statement>>();

/** Write side: marks what writes touched, and brings the aggregates up to date. */
export class SalesAggregates extends StatsQueries {
  readonly #statements: Map<string, Statement>;
  /** `${collectionId}\t${marketplace}` → its marked hours. */
  #dirty = new Map<string, { collectionId: number; marketplace: string; buckets: Map<number, Mark> }>();
  /** The series aggregates (sales-series.ts), marked and flushed with the hours. */
  readonly #series: SalesSeries;
  #hasRunning: boolean | undefined;

  constructor(db: Db) {
    // The connection's, not this object's: group commit makes a write store per commit, and preparing every statement
    // again each time cost a live feed's commit of 1,000 sales 2 ms (bench:ingest --profile).
    let statements = STATEMENTS.get(db);
    if (statements === undefined) STATEMENTS.set(db, (statements = new Map<string, Statement>()));
    let clean: string | undefined;
    super(
      (sql) => {
        let s = statements!.get(sql);
        if (!s) {
          s = db.prepare(sql);
          statements!.set(sql, s);
        }
        return s;
      },
      // Migrations before 29 keep the aggregates of a store whose sales have no flags yet.
      () => (clean ??= db.prepare("SELECT 1 FROM pragma_table_info('sales') WHERE name = 'wash_flags'").get() === undefined ? "1" : CLEAN),
    );
    this.#statements = statements;
    this.#series = new SalesSeries(this.prepare, this.clean);
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
  add(collectionId: number, marketplace: string, sale: Omit<SalePoint, "usd">, currency: string): void {
    const mark = this.#mark(collectionId, marketplace, sale.timestamp);
    mark.n++;
    mark.volume += sale.price;
    this.#series.add(collectionId, marketplace, { ...sale, usd: this.#series.usdOf(currency, sale.timestamp, sale.price) });
  }

  /**
   * Takes a sale add()ed since the marks were made back out of them (a wash
   * rule flagged it before the commit): exact for its hour and its
   * intervals (SalesSeries.unadd keeps the added sales until the flush).
   */
  unadd(collectionId: number, marketplace: string, sale: { timestamp: number; block: number; assetId: string; price: bigint }, currency: string): void {
    this.#takeOut(collectionId, marketplace, sale);
    this.#series.unadd(collectionId, marketplace, { ...sale, usd: this.#series.usdOf(currency, sale.timestamp, sale.price) });
  }

  /**
   * A sale stored before this transaction leaves the aggregates (a wash rule
   * now flags it: a price's neighbours moved, a later leg came): its hour
   * loses its count and amount, exact, and its intervals too where the sums
   * allow (SalesSeries.leave). Summing its hour and day again from the raw
   * rows instead cost a live feed the whole day's sales per commit
   * (bench:ingest, docs/benchmarks.md).
   */
  leave(collectionId: number, marketplace: string, sale: { timestamp: number; price: bigint }, currency: string): void {
    this.#takeOut(collectionId, marketplace, sale);
    this.#series.leave(collectionId, marketplace, { ...sale, usd: this.#series.usdOf(currency, sale.timestamp, sale.price) });
  }

  /** A price point written: the series move the dollars of the sales it now prices (SalesSeries.repriced); returns their collections. */
  repriced(symbol: string, minute: number, before: string | null, after: string): Set<number> {
    return this.#series.repriced(symbol, minute, before, after);
  }

  #takeOut(collectionId: number, marketplace: string, sale: { timestamp: number; price: bigint }): void {
    const mark = this.#mark(collectionId, marketplace, sale.timestamp);
    if (!mark.recompute) {
      mark.n--;
      mark.volume -= sale.price;
    }
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
    // Each collection's earliest marked hour: its rows of stats_hours are written again from there.
    const from = new Map<number, number>();
    for (const { collectionId, marketplace, buckets } of dirty.values()) {
      changed += this.#recompute(collectionId, marketplace, buckets);
      let first = from.get(collectionId) ?? Number.POSITIVE_INFINITY;
      for (const b of buckets.keys()) first = Math.min(first, b);
      from.set(collectionId, first);
    }
    for (const [c, hour] of from) changed += this.#keepRunning(c, hour);
    return { changed: changed + this.#series.flush() };
  }

  /**
   * Writes stats_hours of every collection (or one) from sales_hourly,
   * returning the rows that were wrong: the migration that made the table,
   * and rebuild, which recomputes sales_hourly first.
   */
  keepEveryRunning(collectionId?: number): number {
    if (!this.#keepsRunning()) return 0;
    const ids =
      collectionId === undefined
        ? (this.prepare("SELECT collection_id FROM stats_hours UNION SELECT collection_id FROM sales_hourly").pluck().all() as number[])
        : [collectionId];
    let changed = 0;
    for (const c of ids) changed += this.#keepRunning(c, NO_HOUR);
    return changed;
  }

  /** Whether the store has stats_hours: the backfills of migrations before it existed (2, 7) leave it to the one that makes it (14). */
  #keepsRunning(): boolean {
    return (this.#hasRunning ??= this.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'stats_hours'").get() !== undefined);
  }

  /**
   * Rewrites collection c's rows of stats_hours from `hour` on, from its
   * rows of sales_hourly (every marketplace's running totals, merged in hour
   * order); returns rows inserted, changed or deleted. A write of the
   * current hour reads and writes one row per marketplace; a write far back
   * in history rewrites every later hour, as sales_hourly's running totals
   * do.
   */
  #keepRunning(c: number, hour: number): number {
    if (!this.#keepsRunning()) return 0;
    const state = new Map<string, Totals>();
    const steps: [number, string, Totals][] = [];
    const rows = this.prepare(
      "SELECT hour, cum_num_sales, cum_volume FROM sales_hourly WHERE collection_id = ? AND marketplace = ? AND hour >= ? ORDER BY hour",
    ).raw();
    for (const m of this.distinctMarketplaces("sales_hourly", c)) {
      const before = this.prepare(
        "SELECT cum_num_sales, cum_volume FROM sales_hourly WHERE collection_id = ? AND marketplace = ? AND hour < ? ORDER BY hour DESC LIMIT 1",
      )
        .raw()
        .get(c, m, hour) as [number, string] | undefined;
      if (before !== undefined) state.set(m, { n: before[0], volume: BigInt(before[1]) });
      for (const [h, n, v] of rows.all(c, m, hour) as [number, number, string][]) steps.push([h, m, { n, volume: BigInt(v) }]);
    }
    steps.sort((a, b) => a[0] - b[0]);
    const existing = new Map(
      this.prepare("SELECT hour, running FROM stats_hours WHERE collection_id = ? AND hour >= ?").raw().all(c, hour) as [number, string][],
    );
    const put = this.prepare("INSERT OR REPLACE INTO stats_hours (collection_id, hour, running) VALUES (?, ?, ?)");
    let changed = 0;
    for (let i = 0; i < steps.length; i++) {
      const [h, m, totals] = steps[i]!;
      state.set(m, totals);
      if (steps[i + 1]?.[0] === h) continue;
      const text = formatRunning(state);
      if (existing.get(h) !== text) {
        put.run(c, h, text);
        changed++;
      }
      existing.delete(h);
    }
    const remove = this.prepare("DELETE FROM stats_hours WHERE collection_id = ? AND hour = ?");
    for (const h of existing.keys()) {
      remove.run(c, h);
      changed++;
    }
    return changed;
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
    // flush() rewrites stats_hours from each collection's earliest touched
    // hour; a collection left with no sales at all is not touched.
    const { changed } = this.flush();
    return { changed: changed + this.keepEveryRunning(collectionId) };
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
