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
  STORED_SPANS,
  type StoredSpan,
  toSeriesBucket,
  WEEK,
} from "../../domain/series.js";
import type { SeriesFilter } from "../ports/market.js";
import { assetKey } from "./asset-key.js";
import { CLEAN, WASHED, WASHED_FROM } from "./wash.js";

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

type Prepare = (sql: string) => Statement;

const COLUMNS = `bucket, num_sales, volume, min_price, max_price,
  first_price, first_timestamp, first_block, first_hash, first_asset_key,
  last_price, last_timestamp, last_block, last_hash, last_asset_key`;

/** A sales_series row as read and written: bucket, sums, then the first and last sale (price, timestamp, block, hash, asset_key). */
type StoredRow = [number, number, string, string, string, string, number, number, Buffer, string, string, number, number, Buffer, string];

/** One interval's marks: sales added since the stored row, or the whole interval to sum again. */
interface Mark {
  c: number;
  m: string;
  span: StoredSpan;
  bucket: number;
  /**
   * The sales added, by their place (saleAt), summed at flush: a sale a wash
   * rule flags before the commit comes out of them exactly (unadd), where a
   * running sum could not say which sale is its next lowest or first.
   */
  added: Map<string, SalePoint[]> | undefined;
  /** Stored sales that left the interval (SalesSeries.leave), taken off at flush if none may be its edge. */
  left: { timestamp: number; price: bigint }[] | undefined;
  recompute: boolean;
}

const spanStart = (span: number) => (t: number) => Math.floor(t / span) * span;

const point = (price: string, timestamp: number, block: number, hash: Buffer, key: string): SalePoint => ({
  timestamp,
  block,
  hash: `0x${hash.toString("hex")}`,
  assetId: key.slice(2),
  price: BigInt(price),
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
  };
}

/** Sales of a range as points: `from` and `where` select them. */
function rawPoints(prepare: Prepare, from: string, where: string, params: unknown[]): SalePoint[] {
  const rows = prepare(`SELECT price, timestamp, block, hash, asset_key FROM ${from} WHERE ${where}`).raw().all(...params) as [
    string, number, number, Buffer, string,
  ][];
  return rows.map((r) => point(r[0], r[1], r[2], r[3], r[4]));
}

export class SalesSeries {
  #marks = new Map<string, Mark>();

  /** `clean`: the condition of the sales the aggregates hold (sales-stats.ts StatsQueries). */
  constructor(private readonly prepare: Prepare, private readonly clean: () => string = () => CLEAN) {}

  /** The intervals in [from, to] with sales (SeriesRepository.series); wash trades left out unless includeWash. */
  read(collectionId: number, f: SeriesFilter): SeriesBucket[] {
    const startOf = (t: number) => intervalStart(f.interval, t);
    const end = f.to + intervalSeconds(f.interval) - 1;
    if (f.assetId !== undefined) {
      const where = ["collection_id = ?", "asset_key = ?", "timestamp >= ?", "timestamp <= ?", ...(f.includeWash === true ? [] : [CLEAN])];
      const params: unknown[] = [collectionId, assetKey(f.assetId), f.from, end];
      if (f.marketplace !== undefined) {
        where.push("marketplace = ?");
        params.push(f.marketplace);
      }
      return bucketSales(rawPoints(this.prepare, "sales INDEXED BY sales_by_asset", where.join(" AND "), params), startOf).map(toSeriesBucket);
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
      `SELECT bucket, num_sales, volume, min_price, max_price, first_price, last_price FROM sales_series
       WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket <= ? ORDER BY bucket`,
    )
      .raw()
      .all(...range, intervalSeconds(f.interval), f.from, f.to) as [number, number, string, string, string, string, string][];
    return rows.map((r) => ({ start: r[0], n: r[1], volume: r[2], min: r[3], max: r[4], firstPrice: r[5], lastPrice: r[6] }));
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
    for (const mark of this.#marksOf(c, m, timestamp)) {
      mark.recompute = true;
      mark.added = undefined;
      mark.left = undefined;
    }
  }

  /**
   * A sale add()ed since the marks were made leaves them (a wash rule flagged
   * it before the commit): taken out of what was added, exact. Should two
   * added sales share its place and price (they differ in their hash, which
   * the wash read does not carry), the interval is summed again.
   */
  unadd(c: number, m: string, sale: { timestamp: number; block: number; assetId: string; price: bigint }): void {
    const at = saleAt(sale);
    for (const mark of this.#marksOf(c, m, sale.timestamp)) {
      if (mark.recompute) continue;
      const same = mark.added?.get(at);
      const i = same?.findIndex((x) => x.price === sale.price) ?? -1;
      if (same !== undefined && i >= 0 && same.findLastIndex((x) => x.price === sale.price) === i) {
        same.splice(i, 1);
      } else {
        mark.recompute = true;
        mark.added = undefined;
        mark.left = undefined;
      }
    }
  }

  /**
   * A sale of the stored intervals leaves them (a wash rule now flags it):
   * taken off at flush, when the interval's sums say it is none of its
   * lowest, highest, first or last (leaveAll); else the interval is summed
   * again.
   */
  leave(c: number, m: string, sale: { timestamp: number; price: bigint }): void {
    for (const mark of this.#marksOf(c, m, sale.timestamp)) {
      if (mark.recompute) continue;
      (mark.left ??= []).push(sale);
    }
  }

  /** A rolled-back part of a transaction: nothing added can be trusted. */
  distrustAdded(): void {
    for (const mark of this.#marks.values()) {
      mark.recompute = true;
      mark.added = undefined;
      mark.left = undefined;
    }
  }

  get pending(): boolean {
    return this.#marks.size > 0;
  }

  /** Writes every marked interval; returns the rows inserted, changed or deleted. */
  flush(): number {
    const marks = this.#marks;
    this.#marks = new Map();
    let changed = 0;
    const stored = this.prepare(
      `SELECT ${COLUMNS} FROM sales_series WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket = ?`,
    ).raw();
    const put = this.prepare(
      `INSERT OR REPLACE INTO sales_series (collection_id, marketplace, span, ${COLUMNS})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const remove = this.prepare("DELETE FROM sales_series WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket = ?");
    for (const { c, m, span, bucket, added, left, recompute } of marks.values()) {
      const old = stored.get(c, m, span, bucket) as StoredRow | undefined;
      const before = old === undefined ? undefined : fromRow(old);
      // null: summed again from the raw sales.
      const sum = added === undefined ? undefined : addedTotals(bucket, added);
      const kept = recompute ? null : before === undefined ? sum : sum === undefined ? before : combine(before, sum);
      const exact = kept === null || left === undefined ? kept : leaveAll(kept, left);
      const now = exact === null ? this.#sum(c, m, span, bucket) : exact;
      if (now === undefined || now.n === 0) {
        if (old !== undefined) {
          remove.run(c, m, span, bucket);
          changed++;
        }
        continue;
      }
      const row = toRow(now);
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
          ])
        : rawPoints(
            this.prepare,
            "sales INDEXED BY sales_by_marketplace",
            `collection_id = ? AND marketplace = ? AND timestamp >= ? AND timestamp <= ? AND ${this.clean()}`,
            [c, m, bucket, bucket + span - 1],
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
      mark = { c, m, span, bucket, added: undefined, left: undefined, recompute: false };
      this.#marks.set(key, mark);
    }
    return mark;
  }
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
function leaveAll(now: BucketTotals | undefined, left: readonly { timestamp: number; price: bigint }[]): BucketTotals | null {
  if (now === undefined) return null;
  let n = now.n;
  let volume = now.volume;
  for (const sale of left) {
    if (sale.price <= now.min || sale.price >= now.max || sale.timestamp <= now.first.timestamp || sale.timestamp >= now.last.timestamp) return null;
    n--;
    volume -= sale.price;
  }
  return { ...now, n, volume };
}

function toRow(b: BucketTotals): StoredRow {
  const p = (s: SalePoint): [string, number, number, Buffer, string] => [
    s.price.toString(), s.timestamp, s.block, Buffer.from(s.hash.slice(2), "hex"), assetKey(s.assetId),
  ];
  return [b.start, b.n, b.volume.toString(), b.min.toString(), b.max.toString(), ...p(b.first), ...p(b.last)];
}

function sameRow(a: StoredRow, b: StoredRow): boolean {
  return a.every((v, i) => (Buffer.isBuffer(v) ? v.equals(b[i] as Buffer) : v === b[i]));
}
