import type { Statement } from "better-sqlite3";
import {
  type BucketTotals,
  bucketOfSale,
  bucketSales,
  combine,
  DAY,
  EVERY_MARKETPLACE,
  HOUR,
  foldBuckets,
  intervalSeconds,
  intervalStart,
  type SalePoint,
  type SeriesBucket,
  fromRawSales,
  STORED_SPANS,
  type StoredSpan,
  toSeriesBucket,
  WEEK,
} from "../../domain/series.js";
import type { SeriesFilter } from "../ports/market.js";
import { assetKey } from "./asset-key.js";
import { CLEAN, IN_WEI, WASHED, WASHED_FROM } from "./wash.js";
import { exactUsd, tokensPricedAs } from "../../domain/money.js";
import { POINT_IN_FORCE_SECONDS } from "../shared/prices.js";
import { LATEST_POINT_SQL, NEXT_POINT_SQL, PointsInForce } from "./prices.js";

// Sales series from aggregates kept at write time: sales_series holds, per
// collection, marketplace ('' for all of them), span (hour, day) and
// interval with sales, its count, exact volume, lowest and highest price and
// its first and last sale. A year of days is one index range of 366 rows
// whatever the sales in it; the stats' running totals (sales-stats.ts)
// cannot give a lowest price, and summing a day of raw sales per interval
// grows with the market.
//
// Writers add each new sale to the intervals holding it (combined with the
// stored row at flush: no raw rows read), and mark those a changed sale
// left or entered, which are summed again from the raw sales. A sale a wash
// rule flags or clears leaves or enters by its own amount (unadd, leave,
// add), summed again only where it may be an edge. Like the hours, an extra
// recompute costs time, never correctness.
//
// Each interval keeps its sales' US dollars too (migration 34, docs/money.md
// "USD kept with the series"): volume_usd, the exact sum of each sale's price
// times its point in force, and unpriced, the sales with none. A sale adds
// its dollars at the point in force when written; a price point written
// later moves the dollars of the sales it now prices by their difference
// (reprice), so no interval is summed again for a point.

type Prepare = (sql: string) => Statement;

/** The columns before migration 34 (the dollars): the migrations before it sum the series without them. */
const COLUMNS_BEFORE_USD = `bucket, num_sales, volume, min_price, max_price,
  first_price, first_timestamp, first_block, first_hash, first_asset_key,
  last_price, last_timestamp, last_block, last_hash, last_asset_key`;
const COLUMNS = `${COLUMNS_BEFORE_USD}, volume_usd, unpriced`;

/** A sales_series row as read and written: bucket, sums, the first and last sale (price, timestamp, block, hash, asset_key), then the dollars. */
type StoredRow = [number, number, string, string, string, string, number, number, Buffer, string, string, number, number, Buffer, string, string, number];

/** A sale's dollars as the sums count them: exact, and 1 when it had no point. */
interface UsdPart {
  usd: bigint;
  unpriced: number;
}
const usdPart = (usd: bigint | null): UsdPart => ({ usd: usd ?? 0n, unpriced: usd === null ? 1 : 0 });

/** One interval's marks: sales added since the stored row, or the whole interval to sum again. */
interface Mark {
  c: number;
  m: string;
  span: StoredSpan;
  bucket: number;
  /**
   * The sales added, by their place (saleAt), summed at flush: a sale a wash
   * rule flags before the commit comes out of them exactly (unadd), where a
   * running sum could not say which sale is its next lowest or first. Their
   * dollars are those of their point when added; usdDelta holds what points
   * written since moved.
   */
  added: Map<string, SalePoint[]> | undefined;
  /** Stored sales that left the interval (SalesSeries.leave), taken off at flush if none may be its edge. */
  left: { timestamp: number; price: bigint; usd: bigint | null }[] | undefined;
  /** What price points written since moved the dollars of its sales by (reprice), and the stored and added sales' own. */
  usdDelta: UsdPart;
  recompute: boolean;
}

const spanStart = (span: number) => (t: number) => Math.floor(t / span) * span;

const point = (price: string, timestamp: number, block: number, hash: Buffer, key: string, usd: bigint | null = null): SalePoint => ({
  timestamp,
  block,
  hash: `0x${hash.toString("hex")}`,
  assetId: key.slice(2),
  price: BigInt(price),
  usd,
});

function fromRow(r: StoredRow): BucketTotals {
  return {
    start: r[0],
    n: r[1],
    volume: BigInt(r[2]),
    min: BigInt(r[3]),
    max: BigInt(r[4]),
    first: point(r[5], r[6], r[7], r[8], r[9]),
    last: point(r[10], r[11], r[12], r[13], r[14]),
    usd: r.length > 15 ? BigInt(r[15]) : 0n,
    unpriced: r.length > 15 ? r[16] : 0,
  };
}

/** Sales of a range as points, each with its dollars at its point in force (`usd`: the store keeps them): `from` and `where` select them. */
function rawPoints(prepare: Prepare, from: string, where: string, params: unknown[], usd = true): SalePoint[] {
  if (!usd) {
    const rows = prepare(`SELECT price, timestamp, block, hash, asset_key FROM ${from} WHERE ${where}`).raw().all(...params) as [string, number, number, Buffer, string][];
    return rows.map((r) => point(r[0], r[1], r[2], r[3], r[4]));
  }
  const rows = prepare(`SELECT price, timestamp, block, hash, asset_key, currency FROM ${from} WHERE ${where}`).raw().all(...params) as [
    string, number, number, Buffer, string, string,
  ][];
  // Each sale's point found once per point the range meets, not a seek per sale (prices.ts PointsInForce: the time
  // indexes read newest first): a seek per sale was most of an import's added cost (docs/benchmarks.md).
  const points = new PointsInForce(prepare(LATEST_POINT_SQL).raw());
  return rows.map((r) => point(r[0], r[1], r[2], r[3], r[4], exactUsd(BigInt(r[0]), r[5], points.usdAt(r[5], r[1]))));
}

export class SalesSeries {
  #marks = new Map<string, Mark>();
  /** The collections #marks holds marks of (a price point's reprice looks them up once per point). */
  #marked = new Set<number>();

  /** `clean`: the condition of the sales the aggregates hold (sales-stats.ts StatsQueries). */
  /** Whether the store keeps the dollars (migration 34 on). */
  #usd: boolean | undefined;
  /** The points in force for the sales written, forgotten whenever a point is written and at each flush (a transaction's end). */
  #points: PointsInForce | undefined;

  constructor(private readonly prepare: Prepare, private readonly clean: () => string = () => CLEAN) {}

  get #keepsUsd(): boolean {
    return (this.#usd ??= this.prepare("SELECT 1 FROM pragma_table_info('sales_series') WHERE name = 'volume_usd'").get() !== undefined);
  }

  /** The intervals in [from, to] with sales (SeriesRepository.series); wash trades left out unless includeWash. */
  read(collectionId: number, f: SeriesFilter): SeriesBucket[] {
    const startOf = (t: number) => intervalStart(f.interval, t);
    const end = f.to + intervalSeconds(f.interval) - 1;
    if (f.assetId !== undefined || fromRawSales(f.interval)) {
      // An asset's sales (its index), or minutes (no span keeps them): the range's sales, summed.
      const where = ["collection_id = ?", "timestamp >= ?", "timestamp <= ?", f.includeWash === true ? IN_WEI : CLEAN];
      const params: unknown[] = [collectionId, f.from, end];
      if (f.assetId !== undefined) {
        where.push("asset_key = ?");
        params.push(assetKey(f.assetId));
      }
      if (f.marketplace !== undefined) {
        where.push("marketplace = ?");
        params.push(f.marketplace);
      }
      const index = f.assetId !== undefined ? "sales_by_asset" : f.marketplace !== undefined ? "sales_by_marketplace" : "sales_by_time";
      return bucketSales(rawPoints(this.prepare, `sales INDEXED BY ${index}`, where.join(" AND "), params, f.usd !== false), startOf).map(toSeriesBucket);
    }
    const range = [collectionId, f.marketplace ?? EVERY_MARKETPLACE];
    if (f.includeWash === true) {
      // The kept intervals (of hours, or of days for days and weeks), and the flagged sales of the range, folded together.
      const span = f.interval === "hour" ? HOUR : DAY;
      const kept = (this.prepare(
        `SELECT ${COLUMNS} FROM sales_series
         WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket <= ? ORDER BY bucket`,
      )
        .raw()
        .all(...range, span, f.from, end) as StoredRow[]).map(fromRow);
      const where = [WASHED, ...(f.marketplace === undefined ? [] : ["marketplace = ?"])];
      const washed = bucketSales(rawPoints(this.prepare, WASHED_FROM, where.join(" AND "), [collectionId, f.from, end, ...(f.marketplace === undefined ? [] : [f.marketplace])]), spanStart(span));
      return foldBuckets([...kept, ...washed].sort((a, b) => a.start - b.start), startOf).map(toSeriesBucket);
    }
    if (f.interval === "week") {
      // Days, with their first and last sale's place in time, folded.
      const days = this.prepare(
        `SELECT ${COLUMNS} FROM sales_series
         WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket <= ? ORDER BY bucket`,
      )
        .raw()
        .all(...range, DAY, f.from, f.to + WEEK - DAY) as StoredRow[];
      return foldBuckets(days.map(fromRow), startOf).map(toSeriesBucket);
    }
    // Hours and days as stored: their prices are all the answer needs.
    const rows = this.prepare(
      `SELECT bucket, num_sales, volume, min_price, max_price, first_price, last_price, volume_usd, unpriced FROM sales_series
       WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket <= ? ORDER BY bucket`,
    )
      .raw()
      .all(...range, intervalSeconds(f.interval), f.from, f.to) as [number, number, string, string, string, string, string, string, number][];
    return rows.map((r) => ({ start: r[0], n: r[1], volume: r[2], min: r[3], max: r[4], firstPrice: r[5], lastPrice: r[6], volumeUsd: r[7], unpriced: r[8] }));
  }

  /** A sale of `currency`'s dollars at the point in force now: null with none (or in a store before migration 34). */
  usdOf(currency: string, timestamp: number, price: bigint): bigint | null {
    if (!this.#keepsUsd) return null;
    this.#points ??= new PointsInForce(this.prepare(LATEST_POINT_SQL).raw(), this.prepare(NEXT_POINT_SQL).pluck());
    return exactUsd(price, currency, this.#points.usdAt(currency, timestamp));
  }

  /**
   * A price point of `symbol` at `minute` was written (`before`: the usd
   * the minute had, null when new; `after`: its usd now). The sales it now
   * prices, of the tokens priced as `symbol` from its minute up to the next
   * point (and within a day), move from the dollars of the point they had
   * to its: each of their intervals by the difference (reprice), none
   * summed again. Their collections are found by the hours of the series
   * (an index of them by hour) and by the marks not flushed yet (sales of
   * this transaction). Returns the collections whose sales moved.
   */
  repriced(symbol: string, minute: number, before: string | null, after: string): Set<number> {
    this.#points?.forget();
    const moved = new Set<number>();
    if (!this.#keepsUsd || before === after) return moved;
    const next = this.prepare("SELECT minute FROM price_points WHERE currency = ? AND minute > ? ORDER BY minute LIMIT 1").pluck().get(symbol, minute) as number | undefined;
    const end = Math.min(next ?? Number.MAX_SAFE_INTEGER, minute + POINT_IN_FORCE_SECONDS);
    // The point the sales had: the minute's own before, or the latest before it (in force within a day of each sale).
    const prev = before !== null
      ? { minute, usd: before }
      : (this.prepare("SELECT minute, usd FROM price_points WHERE currency = ? AND minute < ? ORDER BY minute DESC LIMIT 1").get(symbol, minute) as { minute: number; usd: string } | undefined);
    const tokens = tokensPricedAs(symbol);
    const collections = new Set([
      ...(this.prepare(
        `SELECT collection_id FROM sales_series INDEXED BY sales_series_by_hour WHERE span = ${HOUR} AND marketplace = '' AND bucket >= ? AND bucket < ?`,
      ).pluck().all(spanStart(HOUR)(minute), end) as number[]),
      ...this.markedCollections(),
    ]);
    const sales = this.prepare(
      `SELECT marketplace, timestamp, price, currency FROM sales INDEXED BY sales_by_time
       WHERE collection_id = ? AND timestamp >= ? AND timestamp < ? AND currency IN (${tokens.map(() => "?").join(", ")}) AND ${this.clean()}`,
    ).raw();
    for (const c of collections) {
      for (const [m, timestamp, price, currency] of sales.iterate(c, minute, end, ...tokens) as Iterable<[string, number, string, string]>) {
        const had = usdPart(exactUsd(BigInt(price), currency, prev !== undefined && timestamp < prev.minute + POINT_IN_FORCE_SECONDS ? prev.usd : null));
        const has = usdPart(exactUsd(BigInt(price), currency, after));
        this.reprice(c, m, timestamp, { usd: has.usd - had.usd, unpriced: has.unpriced - had.unpriced });
        moved.add(c);
      }
    }
    return moved;
  }

  /** A new sale: added to each interval holding it. */
  add(c: number, m: string, sale: SalePoint): void {
    const at = saleAt(sale);
    for (const mark of this.#marksOf(c, m, sale.timestamp)) {
      if (mark.recompute) continue;
      mark.added ??= new Map();
      const same = mark.added.get(at);
      if (same === undefined) mark.added.set(at, [sale]);
      else same.push(sale);
    }
  }

  /** A sale changed at or away from (m, timestamp): those intervals are summed again. */
  touch(c: number, m: string, timestamp: number): void {
    for (const mark of this.#marksOf(c, m, timestamp)) recomputed(mark);
  }

  /**
   * A price point written moved a stored or added sale's dollars (at its
   * old point, or none, to its new one) by `delta`: the intervals holding
   * it move by as much at flush.
   */
  reprice(c: number, m: string, timestamp: number, delta: UsdPart): void {
    for (const mark of this.#marksOf(c, m, timestamp)) {
      if (mark.recompute) continue;
      mark.usdDelta = { usd: mark.usdDelta.usd + delta.usd, unpriced: mark.usdDelta.unpriced + delta.unpriced };
    }
  }

  /** The collections with marks not yet flushed: a price point may reprice their added sales, which sales_series does not hold yet. */
  markedCollections(): ReadonlySet<number> {
    return this.#marked;
  }

  /**
   * A sale add()ed since the marks were made leaves them (a wash rule flagged
   * it before the commit): taken out of what was added, exact. Should two
   * added sales share its place and price (they differ in their hash, which
   * the wash read does not carry), the interval is summed again.
   */
  unadd(c: number, m: string, sale: { timestamp: number; block: number; assetId: string; price: bigint; usd: bigint | null }): void {
    const at = saleAt(sale);
    const now = usdPart(sale.usd);
    for (const mark of this.#marksOf(c, m, sale.timestamp)) {
      if (mark.recompute) continue;
      const same = mark.added?.get(at);
      const i = same?.findIndex((x) => x.price === sale.price) ?? -1;
      if (same !== undefined && i >= 0 && same.findLastIndex((x) => x.price === sale.price) === i) {
        // Out at its dollars when added; what a point written since moved them by (in usdDelta) out too.
        const then = usdPart(same[i]!.usd);
        same.splice(i, 1);
        mark.usdDelta = { usd: mark.usdDelta.usd - (now.usd - then.usd), unpriced: mark.usdDelta.unpriced - (now.unpriced - then.unpriced) };
      } else {
        recomputed(mark);
      }
    }
  }

  /**
   * A sale of the stored intervals leaves them (a wash rule now flags it):
   * taken off at flush, when the interval's sums say it is none of its
   * lowest, highest, first or last (leaveAll); else the interval is summed
   * again.
   */
  leave(c: number, m: string, sale: { timestamp: number; price: bigint; usd: bigint | null }): void {
    for (const mark of this.#marksOf(c, m, sale.timestamp)) {
      if (mark.recompute) continue;
      (mark.left ??= []).push(sale);
    }
  }

  /** A rolled-back part of a transaction: nothing added can be trusted. */
  distrustAdded(): void {
    for (const mark of this.#marks.values()) recomputed(mark);
    // A point written in the rolled-back part is gone.
    this.#points?.forget();
  }

  get pending(): boolean {
    return this.#marks.size > 0;
  }

  /** Writes every marked interval; returns the rows inserted, changed or deleted. */
  flush(): number {
    const marks = this.#marks;
    this.#marks = new Map();
    this.#marked = new Set();
    // The points found serve one transaction: another process may write points between this one's.
    this.#points?.forget();
    let changed = 0;
    const usd = this.#keepsUsd;
    const columns = usd ? COLUMNS : COLUMNS_BEFORE_USD;
    const width = usd ? 17 : 15;
    const stored = this.prepare(
      `SELECT ${columns} FROM sales_series WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket = ?`,
    ).raw();
    // An upsert, not INSERT OR REPLACE: a replace deletes the row and inserts it again, its entry in
    // sales_series_by_hour too; an update of its values leaves the index as it is.
    const values = columns.split(",").map((c) => c.trim()).filter((c) => c !== "bucket");
    const put = this.prepare(
      `INSERT INTO sales_series (collection_id, marketplace, span, ${columns})
       VALUES (?, ?, ?, ${Array(width).fill("?").join(", ")})
       ON CONFLICT (collection_id, marketplace, span, bucket) DO UPDATE SET ${values.map((c) => `${c} = excluded.${c}`).join(", ")}`,
    );
    const remove = this.prepare("DELETE FROM sales_series WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket = ?");
    for (const { c, m, span, bucket, added, left, usdDelta, recompute } of marks.values()) {
      const old = stored.get(c, m, span, bucket) as StoredRow | undefined;
      const before = old === undefined ? undefined : fromRow(old);
      // null: summed again from the raw sales.
      const sum = added === undefined ? undefined : addedTotals(bucket, added);
      const kept = recompute ? null : before === undefined ? sum : sum === undefined ? before : combine(before, sum);
      const exact = kept === null || left === undefined ? kept : leaveAll(kept, left);
      const moved = exact === null ? null : withDelta(exact, usdDelta);
      const now = moved === null ? this.#sum(c, m, span, bucket) : moved;
      if (now === undefined || now.n === 0) {
        if (old !== undefined) {
          remove.run(c, m, span, bucket);
          changed++;
        }
        continue;
      }
      const row = toRow(now).slice(0, width) as StoredRow;
      if (old !== undefined && sameRow(old, row)) continue;
      put.run(c, m, span, ...row);
      changed++;
    }
    return changed;
  }

  /**
   * Marks every stored interval of the collection (or all): flush() sums
   * them again (SalesAggregates.rebuild touches those with sales).
   */
  markAll(collectionId?: number): void {
    const scope = collectionId === undefined ? "" : "WHERE collection_id = ?";
    const args = collectionId === undefined ? [] : [collectionId];
    for (const [c, m, span, bucket] of this.prepare(`SELECT collection_id, marketplace, span, bucket FROM sales_series ${scope}`)
      .raw()
      .all(...args) as [number, string, number, number][]) {
      this.#mark(c, m, span as StoredSpan, bucket).recompute = true;
    }
  }

  #sum(c: number, m: string, span: StoredSpan, bucket: number): BucketTotals | undefined {
    const points =
      m === EVERY_MARKETPLACE
        ? rawPoints(this.prepare, "sales INDEXED BY sales_by_time", `collection_id = ? AND timestamp >= ? AND timestamp <= ? AND ${this.clean()}`, [
            c, bucket, bucket + span - 1,
          ], this.#keepsUsd)
        : rawPoints(
            this.prepare,
            "sales INDEXED BY sales_by_marketplace",
            `collection_id = ? AND marketplace = ? AND timestamp >= ? AND timestamp <= ? AND ${this.clean()}`,
            [c, m, bucket, bucket + span - 1],
            this.#keepsUsd,
          );
    return bucketSales(points, () => bucket)[0];
  }

  /** The marks of the intervals holding (m, timestamp) and (every marketplace, timestamp), in each stored span. */
  #marksOf(c: number, m: string, timestamp: number): Mark[] {
    const out: Mark[] = [];
    for (const span of STORED_SPANS) {
      const bucket = spanStart(span)(timestamp);
      out.push(this.#mark(c, m, span, bucket), this.#mark(c, EVERY_MARKETPLACE, span, bucket));
    }
    return out;
  }

  #mark(c: number, m: string, span: StoredSpan, bucket: number): Mark {
    const key = `${c}\t${m}\t${span}\t${bucket}`;
    let mark = this.#marks.get(key);
    if (mark === undefined) {
      mark = { c, m, span, bucket, added: undefined, left: undefined, usdDelta: NO_DELTA, recompute: false };
      this.#marks.set(key, mark);
      this.#marked.add(c);
    }
    return mark;
  }
}

const NO_DELTA: UsdPart = { usd: 0n, unpriced: 0 };

/** A mark to be summed again from the raw sales: what it kept of added, left and repriced sales is moot. */
function recomputed(mark: Mark): void {
  mark.recompute = true;
  mark.added = undefined;
  mark.left = undefined;
  mark.usdDelta = NO_DELTA;
}

/**
 * An interval's sums with its dollars moved by what price points written
 * since moved its sales' by; null (sum it again) when there is no interval
 * to move, which only an extra mark can leave.
 */
function withDelta(now: BucketTotals | undefined, delta: UsdPart): BucketTotals | undefined | null {
  if (delta.usd === 0n && delta.unpriced === 0) return now;
  if (now === undefined) return null;
  return { ...now, usd: now.usd + delta.usd, unpriced: now.unpriced + delta.unpriced };
}

/** A sale's place in its intervals' added sales: its time, block and token (the wash read has no hash). */
const saleAt = (s: { timestamp: number; block: number; assetId: string }) => `${s.timestamp}\t${s.block}\t${s.assetId}`;

/** The sums of the sales added to an interval, none if every one was taken out again. */
function addedTotals(bucket: number, added: Map<string, SalePoint[]>): BucketTotals | undefined {
  let sum: BucketTotals | undefined;
  for (const sales of added.values()) {
    for (const sale of sales) {
      const one = bucketOfSale(bucket, sale);
      sum = sum === undefined ? one : combine(sum, one);
    }
  }
  return sum;
}

/**
 * An interval's sums without sales that left it, or null when one of them
 * may be its lowest, highest, first or last sale: the sums cannot say which
 * sale is next (the caller sums the interval again). A price strictly
 * between the lowest and the highest, at a time strictly between the first's
 * and the last's, is none of them.
 */
function leaveAll(now: BucketTotals | undefined, left: readonly { timestamp: number; price: bigint; usd: bigint | null }[]): BucketTotals | null {
  if (now === undefined) return null;
  let n = now.n;
  let volume = now.volume;
  let usd = now.usd;
  let unpriced = now.unpriced;
  for (const sale of left) {
    if (sale.price <= now.min || sale.price >= now.max || sale.timestamp <= now.first.timestamp || sale.timestamp >= now.last.timestamp) return null;
    n--;
    volume -= sale.price;
    // At its point now: the stored dollars, moved by what any point written since moved them by (usdDelta), hold it at that.
    const part = usdPart(sale.usd);
    usd -= part.usd;
    unpriced -= part.unpriced;
  }
  return { ...now, n, volume, usd, unpriced };
}

function toRow(b: BucketTotals): StoredRow {
  const p = (s: SalePoint): [string, number, number, Buffer, string] => [
    s.price.toString(), s.timestamp, s.block, Buffer.from(s.hash.slice(2), "hex"), assetKey(s.assetId),
  ];
  return [b.start, b.n, b.volume.toString(), b.min.toString(), b.max.toString(), ...p(b.first), ...p(b.last), b.usd.toString(), b.unpriced];
}

function sameRow(a: StoredRow, b: StoredRow): boolean {
  return a.every((v, i) => (Buffer.isBuffer(v) ? v.equals(b[i] as Buffer) : v === b[i]));
}
