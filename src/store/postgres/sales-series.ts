import { DAY, HOUR } from "../../domain/series.js";
import { exactUsdSql, pricedAsSql, usdPointOf } from "../shared/prices.js";

// Sales series (store/sqlite/sales-series.ts explains them) on PostgreSQL,
// kept by set-based statements around each merge of sales: a new sale is
// combined with the stored row of each interval holding it (count and
// volume added, lowest and highest kept, first and last compared); an
// interval a changed sale left or entered is summed again: an hour of one
// marketplace from its raw sales, those no wash rule flags
// (docs/wash-trades.md), every marketplace's hour and a day from their
// hours' rows. `stats rebuild` sums them afresh.
//
// Each interval keeps its sales' US dollars too (migration 34: volume_usd,
// exact at money.ts exactUsd's scale; unpriced, the sales with no point in
// force), as SQLite's: a new sale adds its dollars at the point in force when
// the marks are applied, a leaving one takes them off, and a price point
// written moves the dollars of the sales it now prices by their difference
// (REPRICED_SERIES).

const SPANS = `(VALUES (${HOUR}), (${DAY})) sp(span)`;

/** The columns of sales_series after its key. */
const SERIES_VALUES_BEFORE_USD = `num_sales, volume, min_price, max_price,
  first_price, first_timestamp, first_block, first_hash, first_asset_id,
  last_price, last_timestamp, last_block, last_hash, last_asset_id`;
export const SERIES_VALUES = `${SERIES_VALUES_BEFORE_USD}, volume_usd, unpriced`;
const SERIES_KEY = "collection_id, marketplace, span, bucket";

/**
 * The series rows of the sales `points` gives (collection_id, m: the
 * marketplace the row is of, timestamp, block, hash, asset_id, price, span,
 * and usd: its dollars, exact, NULL without a point), one per (collection,
 * m, span, interval): the sums, the first and last sale in the sales list's
 * order, and the dollars (`usd` false: a store before migration 34, none).
 */
function seriesOf(points: string, usd = true): string {
  const key = "collection_id, m, span, bucket";
  const point = (side: "first" | "last", w: string) =>
    ["price", "timestamp", "block", "hash", "asset_id"].map((c) => `first_value(${c}) OVER ${w} AS ${side}_${c}`).join(", ");
  // Windows over one sort each, not joins of three aggregates: the planner
  // cannot estimate a derived table's groups, and nested loops over them
  // took minutes on 20,000 sales.
  return `SELECT DISTINCT ON (${key}) collection_id, m AS marketplace, span, bucket,
      count(*) OVER g AS num_sales, sum(price) OVER g AS volume, min(price) OVER g AS min_price, max(price) OVER g AS max_price,
      ${point("first", "a")}, ${point("last", "d")}${usd ? ", coalesce(sum(usd) OVER g, 0) AS volume_usd, count(*) OVER g - count(usd) OVER g AS unpriced" : ""}
    FROM (SELECT p.*, (p.timestamp / p.span) * p.span AS bucket FROM (${points}) p) x
    WINDOW g AS (PARTITION BY ${key}),
      a AS (g ORDER BY timestamp, block, hash DESC, asset_id DESC),
      d AS (g ORDER BY timestamp DESC, block DESC, hash, asset_id)
    ORDER BY ${key}`;
}

/** A sale of alias `s` (its price, currency and time) at its point in force now, exact: a point's column. */
const saleUsd = (s: string) => exactUsdSql(s, usdPointOf(s));

/**
 * Each sale of `sales` (a query of the sales' columns, with their currency
 * unless `usd` is false) as the points of its marketplace's rows and of
 * every marketplace's, per span.
 */
function pointsOf(sales: string, usd = true): string {
  return `SELECT s.collection_id, mk.m, s.timestamp, s.block, s.hash, s.asset_id, s.price, sp.span${usd ? ", s.usd" : ""}
    FROM ${usd ? withUsd(sales) : `(${sales})`} s CROSS JOIN ${SPANS} CROSS JOIN LATERAL (VALUES (s.marketplace), ('')) mk(m)`;
}

/**
 * The sales of `sales` with their dollars (usd), each sought once: OFFSET 0
 * keeps the subquery whole, since flattened into the span rows and windows
 * above it the point was sought once per reference per row (bench:ingest: 8
 * seeks a sale, a second a commit).
 */
function withUsd(sales: string): string {
  return `(SELECT s.collection_id, s.marketplace, s.timestamp, s.block, s.hash, s.asset_id, s.price, ${saleUsd("s")} AS usd FROM (${sales}) s OFFSET 0)`;
}

/** The series rows of the raw sales of `table` that `filter` selects, computed afresh (`usd` false: without the dollars, before migration 34). */
export function freshSeriesSql(filter: string, table = "sales", usd = true): string {
  return seriesOf(pointsOf(`SELECT * FROM ${table} WHERE ${filter}`, usd), usd);
}

/**
 * The series' marks of a transaction's sales (a removal's too: reorgs.ts),
 * applied by APPLY_SERIES_MARKS: a sale `added` (with its values, and its
 * currency where the merge knows it), a stored
 * sale `leaving` (with its values: a wash rule flags it now, wash.ts), or,
 * neither, where a changed sale lay (its intervals summed again).
 */
export const SERIES_MARKS_TABLE = `CREATE TEMP TABLE IF NOT EXISTS series_marks (collection_id integer, marketplace text, timestamp bigint, block bigint, hash bytea,
       asset_id numeric, price numeric, added boolean, leaving boolean NOT NULL DEFAULT false, currency text) ON COMMIT DROP`;

/** Each mark of `where` in the intervals holding it: of its marketplace and of every one (''), per span. */
const markIntervals = (where: string) => `SELECT k.*, mk.m, sp.span, (k.timestamp / sp.span) * sp.span AS bucket
  FROM series_marks k CROSS JOIN ${SPANS} CROSS JOIN LATERAL (VALUES (k.marketplace), ('')) mk(m) WHERE ${where}`;

/**
 * Run before the merge (it reads the old rows): series_marks holds each
 * staged sale that is new (`added`, with its values), and where a changed
 * sale lay and will lie (to be summed again: a new currency changes its
 * dollars). `latest` gives each staged key's values (collection_id, hash,
 * asset_id, marketplace, timestamp, block, price, currency).
 */
export function seriesMarksSql(latest: string): string[] {
  return [
    SERIES_MARKS_TABLE,
    `WITH l AS (${latest}),
       o AS (SELECT l.*, s.marketplace AS old_marketplace, s.timestamp AS old_timestamp, s.block AS old_block, s.price AS old_price,
               s.currency AS old_currency
             FROM l LEFT JOIN sales s ON s.hash = l.hash AND s.collection_id = l.collection_id AND s.asset_id = l.asset_id)
     INSERT INTO series_marks
     SELECT collection_id, marketplace, timestamp, block, hash, asset_id, price, true, false, currency FROM o WHERE old_timestamp IS NULL
     UNION ALL
     SELECT collection_id, m, t, NULL, NULL, NULL, NULL, false, false, NULL FROM o
       CROSS JOIN LATERAL (VALUES (o.marketplace, o.timestamp), (o.old_marketplace, o.old_timestamp)) v(m, t)
     WHERE old_timestamp IS NOT NULL
       AND (old_marketplace, old_timestamp, old_block, old_price, old_currency) IS DISTINCT FROM (marketplace, timestamp, block, price, currency)`,
  ];
}

/** `excluded` holds a sale before (first) or after (last) the stored row's: the sales list's order. */
function earlier(side: "first" | "last"): string {
  const [lt, gt] = side === "first" ? ["<", ">"] : [">", "<"];
  const e = (c: string) => `EXCLUDED.${side}_${c}`;
  const s = (c: string) => `t.${side}_${c}`;
  return `((${e("timestamp")}, ${e("block")}) ${lt} (${s("timestamp")}, ${s("block")})
    OR ((${e("timestamp")}, ${e("block")}) = (${s("timestamp")}, ${s("block")}) AND (${e("hash")}, ${e("asset_id")}) ${gt} (${s("hash")}, ${s("asset_id")})))`;
}

const POINT = ["price", "timestamp", "block", "hash", "asset_id"];
/** An hour of one marketplace's clean sales (series_redo r's). */
const HOUR_SALES = `SELECT * FROM sales s WHERE s.collection_id = r.collection_id AND s.marketplace = r.marketplace
  AND s.timestamp >= r.bucket AND s.timestamp < r.bucket + r.span AND s.wash_flags = 0 OFFSET 0`;

/**
 * Series rows combined into the row of a wider interval or of every
 * marketplace: `rows` gives sales_series rows, each with the row it goes into
 * (m, into_span, into_bucket). Sums add, extremes hold, and the first (last)
 * of the firsts (lasts) in the sales list's order is the whole's.
 */
function combined(rows: string, usd = true): string {
  const pick = (side: "first" | "last", order: string) => POINT.map((c) => `(array_agg(${side}_${c} ORDER BY ${order}))[1]`).join(", ");
  return `SELECT collection_id, m, into_span, into_bucket, sum(num_sales), sum(volume), min(min_price), max(max_price),
      ${pick("first", "first_timestamp, first_block, first_hash DESC, first_asset_id DESC")},
      ${pick("last", "last_timestamp DESC, last_block DESC, last_hash, last_asset_id")}${usd ? ", sum(volume_usd), sum(unpriced)" : ""}
    FROM (${rows}) x GROUP BY collection_id, m, into_span, into_bucket`;
}

const takeIf = (side: "first" | "last") =>
  POINT.map((c) => `${side}_${c} = CASE WHEN ${earlier(side)} THEN EXCLUDED.${side}_${c} ELSE t.${side}_${c} END`).join(", ");

/**
 * Run after the merge: the intervals marked to be summed again are, from the
 * raw sales; the new sales of the others are combined with their rows.
 */
export const APPLY_SERIES_MARKS: readonly string[] = applySeriesMarks(true);

/** APPLY_SERIES_MARKS of a store with (`usd`) or before (migration 29's) the dollars of migration 34. */
export function applySeriesMarks(usd: boolean): string[] {
  const added = usd
    // A merge's marks carry their currency; a sale a wash rule cleared (wash.ts) has its own read.
    ? `SELECT k.collection_id, k.marketplace, k.timestamp, k.block, k.hash, k.asset_id, k.price,
         coalesce(k.currency, (SELECT s.currency FROM sales s WHERE s.hash = k.hash AND s.collection_id = k.collection_id AND s.asset_id = k.asset_id)) AS currency
       FROM series_marks k WHERE k.added`
    : "SELECT * FROM series_marks WHERE added";
  const values = usd ? SERIES_VALUES : SERIES_VALUES_BEFORE_USD;
  return [
  // Summed again: the intervals a changed sale lay in, and those a leaving sale may be an edge of (its lowest, highest,
  // first or last: the sums cannot say which sale is next). A price strictly between the stored lowest and highest, at a
  // time strictly between the first's and the last's, is none of them, and comes off by its delta below.
  `CREATE TEMP TABLE series_redo ON COMMIT DROP AS
   SELECT k.collection_id, k.m AS marketplace, k.span, k.bucket FROM (${markIntervals("NOT k.added AND NOT k.leaving")}) k
   UNION
   SELECT k.collection_id, k.m, k.span, k.bucket FROM (${markIntervals("k.leaving")}) k
     LEFT JOIN sales_series t ON (t.collection_id, t.marketplace, t.span, t.bucket) = (k.collection_id, k.m, k.span, k.bucket)
   WHERE t.collection_id IS NULL OR k.price <= t.min_price OR k.price >= t.max_price OR k.timestamp <= t.first_timestamp OR k.timestamp >= t.last_timestamp`,
  // Statistics for the planner (autovacuum never sees a temporary table): without them it
  // guessed hundreds of intervals and hash-joined every sale of the store to find theirs
  // (bench:reorg, 1M sales: half of a reorganisation's 470 ms).
  "ANALYZE series_redo",
  // The leaving sales of the intervals not summed again: their count and volume come off, their dollars at their point now.
  usd
    ? `UPDATE sales_series t SET num_sales = t.num_sales - l.n, volume = t.volume - l.v, volume_usd = t.volume_usd - l.u, unpriced = t.unpriced - l.unpriced
   FROM (SELECT k.collection_id, k.m, k.span, k.bucket, count(*) AS n, sum(k.price) AS v, coalesce(sum(k.usd), 0) AS u, count(*) - count(k.usd) AS unpriced
         FROM (SELECT k.*, ${saleUsd("s")} AS usd FROM (${markIntervals("k.leaving")}) k
               JOIN sales s ON s.hash = k.hash AND s.collection_id = k.collection_id AND s.asset_id = k.asset_id) k GROUP BY 1, 2, 3, 4) l
   WHERE (t.collection_id, t.marketplace, t.span, t.bucket) = (l.collection_id, l.m, l.span, l.bucket)
     AND NOT EXISTS (SELECT 1 FROM series_redo r WHERE (r.collection_id, r.marketplace, r.span, r.bucket) = (l.collection_id, l.m, l.span, l.bucket))`
    : `UPDATE sales_series t SET num_sales = t.num_sales - l.n, volume = t.volume - l.v
   FROM (SELECT k.collection_id, k.m, k.span, k.bucket, count(*) AS n, sum(k.price) AS v FROM (${markIntervals("k.leaving")}) k GROUP BY 1, 2, 3, 4) l
   WHERE (t.collection_id, t.marketplace, t.span, t.bucket) = (l.collection_id, l.m, l.span, l.bucket)
     AND NOT EXISTS (SELECT 1 FROM series_redo r WHERE (r.collection_id, r.marketplace, r.span, r.bucket) = (l.collection_id, l.m, l.span, l.bucket))`,
  `INSERT INTO sales_series AS t (${SERIES_KEY}, ${values})
   SELECT * FROM (${seriesOf(pointsOf(added, usd), usd)}) n
   WHERE NOT EXISTS (SELECT 1 FROM series_redo r
                     WHERE (r.collection_id, r.marketplace, r.span, r.bucket) = (n.collection_id, n.marketplace, n.span, n.bucket))
   ON CONFLICT (${SERIES_KEY}) DO UPDATE SET
     num_sales = t.num_sales + EXCLUDED.num_sales, volume = t.volume + EXCLUDED.volume,
     min_price = least(t.min_price, EXCLUDED.min_price), max_price = greatest(t.max_price, EXCLUDED.max_price),
     ${takeIf("first")}, ${takeIf("last")}${usd ? ", volume_usd = t.volume_usd + EXCLUDED.volume_usd, unpriced = t.unpriced + EXCLUDED.unpriced" : ""}`,
  `DELETE FROM sales_series t USING series_redo r
   WHERE (t.collection_id, t.marketplace, t.span, t.bucket) = (r.collection_id, r.marketplace, r.span, r.bucket)`,
  // Only an hour of one marketplace is summed from its raw sales. Every marketplace's hour, and a day, are its hours'
  // rows combined (each of them exact by now: summed again here, or moved above): a flag flipped at a live feed's edge
  // summed the day's every sale again, twice (bench:ingest: seconds a commit).
  `INSERT INTO sales_series (${SERIES_KEY}, ${values})
   ${seriesOf(`SELECT s.collection_id, r.marketplace AS m, s.timestamp, s.block, s.hash, s.asset_id, s.price, r.span${usd ? ", s.usd" : ""}
     FROM series_redo r CROSS JOIN LATERAL ${usd ? withUsd(HOUR_SALES) : `(${HOUR_SALES})`} s
     WHERE r.span = ${HOUR} AND r.marketplace <> ''`, usd)}`,
  `INSERT INTO sales_series (${SERIES_KEY}, ${values})
   ${combined(`SELECT h.*, '' AS m, h.span AS into_span, h.bucket AS into_bucket
     FROM (SELECT DISTINCT collection_id, bucket FROM series_redo WHERE span = ${HOUR} AND marketplace = '') r
     -- A seek per marketplace: every sale's is known to the store, or one of this transaction's marks.
     CROSS JOIN (SELECT name FROM marketplaces UNION SELECT marketplace FROM series_marks) mk
     CROSS JOIN LATERAL (SELECT * FROM sales_series h WHERE h.collection_id = r.collection_id AND h.marketplace = mk.name
       AND h.span = ${HOUR} AND h.bucket = r.bucket OFFSET 0) h
     WHERE mk.name <> ''`, usd)}`,
  `INSERT INTO sales_series (${SERIES_KEY}, ${values})
   ${combined(`SELECT h.*, r.marketplace AS m, r.span AS into_span, r.bucket AS into_bucket
     FROM series_redo r CROSS JOIN LATERAL (SELECT * FROM sales_series h WHERE h.collection_id = r.collection_id AND h.marketplace = r.marketplace
       AND h.span = ${HOUR} AND h.bucket >= r.bucket AND h.bucket < r.bucket + ${DAY} OFFSET 0) h
     WHERE r.span = ${DAY}`, usd)}`,
  ];
}

/**
 * A price points' merge (kind-writes.ts prices): before it, the points that
 * change (point_changes: the last staged record of each minute whose usd
 * differs) and the clean sales they will price, with the usd of the point
 * they had (repriced). A changed point prices its token's sales from its
 * minute up to the next point, stored or staged, within a day: found by the
 * every-marketplace hours of the series (sales_series_by_hour), then each
 * collection's sales of those hours.
 */
export const REPRICED_BEFORE: readonly string[] = [
  "DROP TABLE IF EXISTS point_changes, repriced",
  `CREATE TEMP TABLE point_changes ON COMMIT DROP AS
   SELECT DISTINCT ON (st.currency, st.minute) st.currency, st.minute, st.usd FROM stage st ORDER BY st.currency, st.minute, st.line DESC`,
  "DELETE FROM point_changes pc USING price_points p WHERE p.currency = pc.currency AND p.minute = pc.minute AND p.usd = pc.usd",
  `CREATE TEMP TABLE repriced ON COMMIT DROP AS
   SELECT s.collection_id, s.marketplace, s.timestamp, s.price, s.currency, ${usdPointOf("s")} AS old_usd
   -- The next changed point by a window over them: sought by a subquery each, a merge of 17,520 points (the demo's)
   -- compared every pair of them, 25 s (point_changes has no index).
   FROM (SELECT x.*, lead(x.minute) OVER (PARTITION BY x.currency ORDER BY x.minute) AS next_change FROM point_changes x) pc
   CROSS JOIN LATERAL (SELECT least(
       (SELECT min(p.minute) FROM price_points p WHERE p.currency = pc.currency AND p.minute > pc.minute),
       pc.next_change,
       pc.minute + ${DAY}) AS until) r
   -- Laterals (OFFSET 0: not flattened), so that the hours are sought by time and each one's sales by collection and time: joined
   -- freely, the planner hashed every sale of the store on its token (test/store/pg-query-plans.test.ts).
   CROSS JOIN LATERAL (SELECT h.collection_id, h.bucket FROM sales_series h
     WHERE h.span = ${HOUR} AND h.marketplace = '' AND h.bucket >= (pc.minute / ${HOUR}) * ${HOUR} AND h.bucket < r.until OFFSET 0) h
   CROSS JOIN LATERAL (SELECT * FROM sales s WHERE s.collection_id = h.collection_id
     AND s.timestamp >= greatest(h.bucket, pc.minute) AND s.timestamp < least(h.bucket + ${HOUR}, r.until) AND s.wash_flags = 0 OFFSET 0) s
   WHERE ${pricedAsSql("s")} = pc.currency`,
];

/** After the merge: each interval of the repriced sales moves by their dollars now less those they had. */
export const REPRICED_SERIES = `UPDATE sales_series t SET volume_usd = t.volume_usd + d.usd, unpriced = t.unpriced + d.unpriced
  FROM (SELECT r.collection_id, mk.m, sp.span, (r.timestamp / sp.span) * sp.span AS bucket,
          sum(coalesce(${exactUsdSql("r", "r.new_usd")}, 0) - coalesce(${exactUsdSql("r", "r.old_usd")}, 0)) AS usd,
          sum((r.new_usd IS NULL)::int - (r.old_usd IS NULL)::int) AS unpriced
        FROM (SELECT x.*, ${usdPointOf("x")} AS new_usd FROM repriced x) r CROSS JOIN ${SPANS} CROSS JOIN LATERAL (VALUES (r.marketplace), ('')) mk(m)
        GROUP BY 1, 2, 3, 4) d
  WHERE (t.collection_id, t.marketplace, t.span, t.bucket) = (d.collection_id, d.m, d.span, d.bucket) AND (d.usd <> 0 OR d.unpriced <> 0)`;
