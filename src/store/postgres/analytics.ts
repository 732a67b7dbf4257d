import { notFlagged } from "./flags.js";
import { FLAGGED, IN_WEI } from "../shared/wash-scope.js";
import { exactUsdSql, usdPointOf } from "../shared/prices.js";
import {
  type BucketTotals,
  DAY,
  EVERY_MARKETPLACE,
  bucketSales,
  foldBuckets,
  fromRawSales,
  HOUR,
  intervalSeconds,
  intervalStart,
  type SalePoint,
  type SeriesBucket,
  toSeriesBucket,
  WEEK,
} from "../../domain/series.js";
import { BUCKETS, bucketRows, FLOOR_BEFORE } from "./floor-history.js";
import type { FloorBucket, FloorPrice, FloorSpanLength } from "../../domain/floor-candles.js";
import type { AnalyticsRepository, FloorFilter, HoldersPage, SeriesFilter } from "../ports/market.js";
import { type FloorListingRow, HOLDER_BUCKETS } from "../../domain/rows.js";
import { type PageRequest, toPage } from "../ports/paging.js";
import type { PgQueries } from "./statements.js";

// Floor, holders and sales series on PostgreSQL (migration 6 keeps what
// they read): each answer one statement, one snapshot, one round trip.

/** A series row's first or last sale, as SQL giving its columns. */
const point = (side: "first" | "last") =>
  `${side}_price::text AS ${side}_price, ${side}_timestamp, ${side}_block, '0x' || encode(${side}_hash, 'hex') AS ${side}_hash, ${side}_asset_id::text AS ${side}_asset_id`;

interface PriceRow {
  bucket: string;
  n: string;
  volume: string;
  min: string;
  max: string;
  first_price: string;
  last_price: string;
  /** Exact (money.ts exactUsd's scale), as text; the sales without a point. */
  volume_usd: string;
  unpriced: string;
}

/** An interval's sums, as every series row has them. */
function toSeriesRow(r: PriceRow): SeriesBucket {
  return {
    start: Number(r.bucket), n: Number(r.n), volume: r.volume, min: r.min, max: r.max, firstPrice: r.first_price, lastPrice: r.last_price,
    volumeUsd: r.volume_usd, unpriced: Number(r.unpriced),
  };
}

/** A series row's dollars, as SQL giving PriceRow's columns. */
const USD_COLUMNS = "volume_usd::text AS volume_usd, unpriced";

interface SeriesRow extends PriceRow {
  first_timestamp: string;
  first_block: string;
  first_hash: string;
  first_asset_id: string;
  last_timestamp: string;
  last_block: string;
  last_hash: string;
  last_asset_id: string;
}

const toPoint = (r: SeriesRow, side: "first" | "last") => ({
  price: BigInt(r[`${side}_price`]),
  timestamp: Number(r[`${side}_timestamp`]),
  block: Number(r[`${side}_block`]),
  hash: r[`${side}_hash`],
  assetId: r[`${side}_asset_id`],
  // An interval's edges carry no dollars of their own: its sums do.
  usd: null,
});

/**
 * The lowest active entry of each marketplace of collection `c` (an SQL
 * expression): now (listings), or at second `at` (listing_spans; an SQL
 * expression); of marketplace `marketplace` only when given. Rows of
 * (marketplace, price, listing_id). The marketplaces with entries in the
 * index are found by a loose index scan (one seek each).
 */
function marketplaceFloors(c: string, at: string | undefined, marketplace?: string, includeFlagged = false): string {
  const [table, active, id] =
    at === undefined ? ["listings", "status = 'CREATED'", "id"] : ["listing_spans", `active_from <= ${at} AND active_until > ${at}`, "listing_id"];
  // A flagged token's listings are no floor (flags.ts): a listing's own token, a span's through its listing.
  const unflagged = includeFlagged ? "" : at === undefined ? ` AND ${notFlagged("s")}`
    : ` AND NOT EXISTS (SELECT 1 FROM listings y WHERE y.id = s.listing_id AND NOT ${notFlagged("y")})`;
  const marketplaces =
    marketplace !== undefined
      ? `SELECT ${marketplace}::text AS marketplace`
      : `WITH RECURSIVE m AS (
           (SELECT marketplace FROM ${table} WHERE collection_id = ${c} AND ${at === undefined ? active : "true"} ORDER BY marketplace LIMIT 1)
           UNION ALL
           SELECT (SELECT x.marketplace FROM ${table} x WHERE x.collection_id = ${c} AND ${at === undefined ? "x.status = 'CREATED'" : "true"}
                   AND x.marketplace > m.marketplace ORDER BY x.marketplace LIMIT 1)
           FROM m WHERE m.marketplace IS NOT NULL)
         SELECT marketplace FROM m WHERE marketplace IS NOT NULL`;
  return `SELECT f.marketplace, f.price, f.${id} AS listing_id FROM (${marketplaces}) m
     CROSS JOIN LATERAL (
       SELECT * FROM ${table} s WHERE collection_id = ${c} AND marketplace = m.marketplace AND ${active}${unflagged}
       ORDER BY price, marketplace_id COLLATE "C" LIMIT 1) f`;
}

/** Each of HOLDER_BUCKETS' wallets and tokens, as one array (wallets, tokens, ...): one pass over the collection's holders (token_owners_by_count). */
const DISTRIBUTION = `ARRAY[${HOLDER_BUCKETS.map(([min, max]) => {
  const inBucket = `o.tokens >= ${min}${max === 0 ? "" : ` AND o.tokens <= ${max}`}`;
  return `count(*) FILTER (WHERE ${inBucket}), coalesce(sum(o.tokens) FILTER (WHERE ${inBucket}), 0)`;
}).join(", ")}]::text[]`;

export class PgAnalytics implements AnalyticsRepository {
  constructor(private readonly q: PgQueries) {}

  async floors(collectionId: number, filter: FloorFilter): Promise<FloorListingRow[]> {
    const values: unknown[] = [collectionId];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const at = filter.at === undefined ? undefined : $(filter.at);
    const marketplace = filter.marketplace === undefined ? undefined : $(filter.marketplace);
    return this.q.rows<FloorListingRow>(
      `SELECT l.marketplace, l.marketplace_id AS "marketplaceId", l.asset_id::text AS "assetId", f.price::text AS price,
         l.created_at::float8 AS "createdAt"
       FROM (${marketplaceFloors("$1", at, marketplace, filter.includeFlagged)}) f
       JOIN listings l ON l.id = f.listing_id`,
      values,
    );
  }

  async lowestFloorsAt(collectionIds: readonly number[], at: number): Promise<(string | undefined)[]> {
    if (collectionIds.length === 0) return [];
    // One statement (one snapshot): each collection's marketplaces' floors then, by its position in the list.
    const rows = await this.q.rows<{ n: string; price: string | null }>(
      `SELECT u.n, (SELECT min(f.price)::text FROM (${marketplaceFloors("u.cid", "$2")}) f) AS price
       FROM unnest($1::integer[]) WITH ORDINALITY AS u(cid, n)`,
      [collectionIds, at],
    );
    const out: (string | undefined)[] = collectionIds.map(() => undefined);
    for (const r of rows) out[Number(r.n) - 1] = r.price ?? undefined;
    return out;
  }

  async holders(collectionId: number, page: PageRequest): Promise<HoldersPage> {
    const values: unknown[] = [collectionId];
    const $ = (v: unknown) => `$${values.push(v)}`;
    let after = "";
    if (page.after) after = `AND (o.tokens, ${$(page.after[1])}::text COLLATE "C") < (${$(page.after[0])}, o.owner COLLATE "C")`;
    // One statement: the counts and the page from one snapshot.
    const rows = await this.q.rows<{ owner: string | null; tokens: string | null; total: string; holders: string; distribution: string[] }>(
      `WITH page AS (
         SELECT o.owner, o.tokens FROM token_owners o WHERE o.collection_id = $1 ${after}
         ORDER BY o.tokens DESC, o.owner COLLATE "C" LIMIT ${$(page.limit + 1)})
       SELECT p.owner, p.tokens,
         coalesce((SELECT tokens FROM collection_holdings WHERE collection_id = $1), 0) AS total,
         coalesce((SELECT holders FROM collection_holdings WHERE collection_id = $1), 0) AS holders,
         (SELECT ${DISTRIBUTION} FROM token_owners o WHERE o.collection_id = $1 AND o.tokens > 0) AS distribution
       FROM (SELECT 1) one LEFT JOIN page p ON true`,
      values,
    );
    const holders = rows.filter((r) => r.owner !== null).map((r) => ({ address: r.owner!, tokens: Number(r.tokens) }));
    const counts = rows[0]?.distribution ?? HOLDER_BUCKETS.flatMap(() => ["0", "0"]);
    return {
      distribution: HOLDER_BUCKETS.map(([min, max], i) => ({ min, max, wallets: Number(counts[2 * i]), tokens: Number(counts[2 * i + 1]) })),
      totalTokens: Number(rows[0]?.total ?? 0),
      numHolders: Number(rows[0]?.holders ?? 0),
      page: toPage(holders, page.limit, (h) => h, (h) => [h.tokens, h.address]),
    };
  }

  async series(collectionId: number, f: SeriesFilter): Promise<SeriesBucket[]> {
    const length = intervalSeconds(f.interval);
    if (f.assetId === undefined && fromRawSales(f.interval)) return this.#minutes(collectionId, f);
    if (f.assetId !== undefined) {
      // An asset's raw sales (sales_by_asset), summed per interval in SQL:
      // bucket = the start of the interval (weeks from Monday: an origin).
      const origin = intervalStart(f.interval, 0);
      const values: unknown[] = [collectionId, f.assetId, f.from, f.to + length - 1, length, origin];
      const $ = (v: unknown) => `$${values.push(v)}`;
      const market = f.marketplace === undefined ? "" : `AND marketplace = ${$(f.marketplace)}`;
      const clean = `AND ${f.includeWash === true ? IN_WEI : "wash_flags = 0"}`;
      const rows = await this.q.rows<PriceRow>(
        `WITH x AS (SELECT s.*, ((s.timestamp - $6) / $5) * $5 + $6 AS bucket, ${f.usd === false ? "NULL::numeric" : exactUsdSql("s", usdPointOf("s"))} AS usd FROM sales s
                    WHERE collection_id = $1 AND asset_id = $2 AND timestamp >= $3 AND timestamp <= $4 ${market} ${clean})
         SELECT DISTINCT ON (bucket) bucket, count(*) OVER g AS n, (sum(price) OVER g)::text AS volume,
           (min(price) OVER g)::text AS min, (max(price) OVER g)::text AS max,
           (first_value(price) OVER a)::text AS first_price, (first_value(price) OVER d)::text AS last_price,
           coalesce(sum(usd) OVER g, 0)::text AS volume_usd, count(*) OVER g - count(usd) OVER g AS unpriced
         FROM x
         WINDOW g AS (PARTITION BY bucket), a AS (g ORDER BY timestamp, block, hash DESC, asset_id DESC),
           d AS (g ORDER BY timestamp DESC, block DESC, hash, asset_id)
         ORDER BY bucket`,
        values,
      );
      return rows.map(toSeriesRow);
    }
    const marketplace = f.marketplace ?? EVERY_MARKETPLACE;
    if (f.includeWash === true) {
      // The kept intervals (of hours, or of days for days and weeks) and each flagged sale of the range as an
      // interval of its own (from its time), in one statement (one snapshot), folded into the intervals asked.
      const washedMarket = f.marketplace === undefined ? "" : "AND marketplace = $2";
      const one = (c: string) => `price::text AS ${c}_price, timestamp AS ${c}_timestamp, block AS ${c}_block, '0x' || encode(hash, 'hex') AS ${c}_hash, asset_id::text AS ${c}_asset_id`;
      const rows = await this.q.rows<SeriesRow>(
        `SELECT bucket, num_sales AS n, volume::text AS volume, min_price::text AS min, max_price::text AS max, ${point("first")}, ${point("last")}, ${USD_COLUMNS}
         FROM sales_series WHERE collection_id = $1 AND marketplace = $2 AND span = $3 AND bucket >= $4 AND bucket <= $5
         UNION ALL
         SELECT w.timestamp, 1, w.price::text, w.price::text, w.price::text, ${one("first")}, ${one("last")}, coalesce(w.usd, 0)::text, (w.usd IS NULL)::int
         FROM (SELECT s.*, ${exactUsdSql("s", usdPointOf("s"))} AS usd FROM sales s
               WHERE s.collection_id = $1 AND ${FLAGGED} AND s.timestamp >= $4 AND s.timestamp <= $5 ${washedMarket}) w`,
        [collectionId, marketplace, f.interval === "hour" ? HOUR : DAY, f.from, f.to + length - 1],
      );
      const buckets = rows.map(toBucket).sort((a, b) => a.start - b.start);
      return foldBuckets(buckets, (t) => intervalStart(f.interval, t)).map(toSeriesBucket);
    }
    if (f.interval === "week") {
      // Days, with their first and last sale's place in time, folded.
      const days = await this.q.rows<SeriesRow>(
        `SELECT bucket, num_sales AS n, volume::text AS volume, min_price::text AS min, max_price::text AS max, ${point("first")}, ${point("last")}, ${USD_COLUMNS}
         FROM sales_series WHERE collection_id = $1 AND marketplace = $2 AND span = $3 AND bucket >= $4 AND bucket <= $5
         ORDER BY bucket`,
        [collectionId, marketplace, DAY, f.from, f.to + WEEK - DAY],
      );
      return foldBuckets(days.map(toBucket), (t) => intervalStart("week", t)).map(toSeriesBucket);
    }
    // Hours and days as stored: their prices are all the answer needs.
    const rows = await this.q.rows<PriceRow>(
      `SELECT bucket, num_sales AS n, volume::text AS volume, min_price::text AS min, max_price::text AS max,
         first_price::text AS first_price, last_price::text AS last_price, ${USD_COLUMNS}
       FROM sales_series WHERE collection_id = $1 AND marketplace = $2 AND span = $3 AND bucket >= $4 AND bucket <= $5
       ORDER BY bucket`,
      [collectionId, marketplace, length, f.from, f.to],
    );
    return rows.map(toSeriesRow);
  }

  /**
   * Minutes (no span keeps them): the range's sales in the time index's order (no sort, however many a minute holds),
   * folded here (domain/series.ts bucketSales), as SQLite's are.
   */
  async #minutes(collectionId: number, f: SeriesFilter): Promise<SeriesBucket[]> {
    const values: unknown[] = [collectionId, f.from, f.to + intervalSeconds(f.interval) - 1];
    const market = f.marketplace === undefined ? "" : `AND s.marketplace = $${values.push(f.marketplace)}`;
    const usd = f.usd === false ? "NULL" : `${exactUsdSql("s", usdPointOf("s"))}::text`;
    const rows = await this.q.rows<{ price: string; t: string; block: string; hash: string; asset_id: string; usd: string | null }>(
      `SELECT s.price::text AS price, s.timestamp AS t, s.block, '0x' || encode(s.hash, 'hex') AS hash, s.asset_id::text AS asset_id, ${usd} AS usd
       FROM sales s WHERE s.collection_id = $1 AND s.timestamp >= $2 AND s.timestamp <= $3 ${market}
         AND ${f.includeWash === true ? IN_WEI : "s.wash_flags = 0"}
       ORDER BY s.timestamp`,
      values,
    );
    const points = rows.map((r): SalePoint => ({
      timestamp: Number(r.t), block: Number(r.block), hash: r.hash, assetId: r.asset_id, price: BigInt(r.price), usd: r.usd === null ? null : BigInt(r.usd),
    }));
    return bucketSales(points, (t) => intervalStart(f.interval, t)).map(toSeriesBucket);
  }

  async salesExtent(collectionId: number): Promise<{ first: number; last: number } | undefined> {
    const rows = await this.q.rows<{ first: string | null; last: string | null }>(
      `SELECT (SELECT timestamp FROM sales WHERE collection_id = $1 ORDER BY timestamp LIMIT 1) AS first,
              (SELECT timestamp FROM sales WHERE collection_id = $1 ORDER BY timestamp DESC LIMIT 1) AS last`,
      [collectionId],
    );
    const r = rows[0];
    return r?.first == null || r.last == null ? undefined : { first: Number(r.first), last: Number(r.last) };
  }

  async floorHistory(collectionId: number, marketplace: string, span: FloorSpanLength, from: number, until: number): Promise<{ before: FloorPrice; rows: FloorBucket[] }> {
    // One statement (one snapshot): the floor before the page, marked by bucket -1, then its buckets.
    const rows = await this.q.rows<[string, string | null, string | null, string, string | null, string | null]>(
      `SELECT '-1', NULL, NULL, '0', NULL, (${FLOOR_BEFORE.replace("$3", "$4")}) UNION ALL (${BUCKETS})`,
      [collectionId, marketplace, span, from, until],
      true,
    );
    const before = rows.find(([b]) => b === "-1")!;
    return { before: before[5], rows: bucketRows(rows.filter((r) => r !== before)).sort((a, b) => a.bucket - b.bucket) };
  }

  async floorExtent(collectionId: number, marketplace: string): Promise<{ first: number; last: number } | undefined> {
    const rows = await this.q.rows<{ first: string | null; last: string | null }>(
      `SELECT (SELECT t FROM floor_points WHERE collection_id = $1 AND marketplace = $2 ORDER BY t LIMIT 1) AS first,
              (SELECT t FROM floor_points WHERE collection_id = $1 AND marketplace = $2 ORDER BY t DESC LIMIT 1) AS last`,
      [collectionId, marketplace],
    );
    const r = rows[0];
    return r?.first == null || r.last == null ? undefined : { first: Number(r.first), last: Number(r.last) };
  }
}

function toBucket(r: SeriesRow): BucketTotals {
  return {
    start: Number(r.bucket),
    n: Number(r.n),
    volume: BigInt(r.volume),
    min: BigInt(r.min),
    max: BigInt(r.max),
    first: toPoint(r, "first"),
    last: toPoint(r, "last"),
    usd: BigInt(r.volume_usd),
    unpriced: Number(r.unpriced),
  };
}
