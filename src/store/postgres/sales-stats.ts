import { BUCKET_SECONDS } from "../shared/sales-buckets.js";

// The hourly running totals of sales (store/sqlite/sales-stats.ts explains them) on
// PostgreSQL, kept by set-based statements instead of per-row marks: every
// merge of sales turns what it changes into deltas per hour (a sale added,
// moved or repriced), and adds them to the running totals from their hour
// on. `stats rebuild` sums them afresh (freshHourlySql).

/**
 * What a merge of sales changes in the hour rows, as deltas per collection,
 * marketplace and hour (a temporary table hour_deltas, c m h n v): +1 sale
 * and +price where each staged sale now lies, -1 and -price where the row
 * it replaces lay. `latest` is a query giving, for each staged key, the
 * values it will have (collection_id, marketplace, timestamp, price, and
 * the key: hash, asset_id). Run before the upsert: it reads the old rows.
 */
/** The hours' deltas of a transaction's sales (a removal's too: reorgs.ts), applied by APPLY_HOUR_DELTAS. */
export const HOUR_DELTAS_TABLE = "CREATE TEMP TABLE IF NOT EXISTS hour_deltas (c integer, m text, h bigint, n bigint, v numeric) ON COMMIT DROP";

export function hourDeltasSql(latest: string): string[] {
  return [
    HOUR_DELTAS_TABLE,
    // A CTE read twice is computed once.
    // The hours hold clean sales only (docs/wash-trades.md): a row keeps its
    // flags through the merge (they are evaluated again after it,
    // store/postgres/wash.ts, whose flips move it in or out), so a flagged
    // row's old and new values both count for nothing here.
    `WITH l AS (${latest}),
       o AS (SELECT l.*, s.marketplace AS old_m, s.timestamp AS old_t, s.price AS old_v, s.wash_flags AS old_flags
             FROM l LEFT JOIN sales s ON s.hash = l.hash AND s.collection_id = l.collection_id AND s.asset_id = l.asset_id)
     INSERT INTO hour_deltas
     SELECT c, m, h, sum(n), sum(v) FROM (
       SELECT o.collection_id AS c, o.marketplace AS m, o.timestamp / ${BUCKET_SECONDS} AS h, 1 AS n, o.price AS v FROM o WHERE coalesce(o.old_flags, 0) = 0
       UNION ALL
       SELECT o.collection_id, o.old_m, o.old_t / ${BUCKET_SECONDS}, -1, -o.old_v FROM o WHERE o.old_flags = 0) d
     GROUP BY c, m, h HAVING sum(n) <> 0 OR sum(v) <> 0`,
    // Statistics for the planner (autovacuum never sees a temporary table):
    // without them it guessed 720 delta rows, costed APPLY_HOUR_DELTAS past
    // jit_above_cost and compiled it for each commit, which cost many times
    // the statement itself and the ANALYZE together.
    "ANALYZE hour_deltas",
  ];
}

/**
 * Applies hour_deltas to the running totals in one pass: the hour rows from
 * the last one before each collection and marketplace's earliest delta on,
 * and the deltas, merged in hour order; each hour's new total is the last
 * stored total at or before it plus the deltas up to it (window sums), and
 * is upserted where it differs. An hour that gained its first sale gets a
 * row; one a move left without sales loses it (the statement after). The
 * work is one sort of the deltas and the rows after the earliest (one or
 * two for a live feed), never a pairing of them: pairing each hour row with
 * every delta before it was quadratic (a batch of sales an hour apart took
 * seconds), and summing the raw sales of the touched hours again grew
 * with the sales of the current hour (a live hour holds millions). The
 * hour rows are read by
 * a seek per collection and marketplace: OFFSET 0 keeps that subquery from
 * being pulled up into a join, which the planner (taking the range from a
 * subquery's hour to be a third of the table) made a hash of every hour
 * row in the store, whatever the number of deltas.
 */
export const APPLY_HOUR_DELTAS: readonly string[] = [
  `WITH f AS (SELECT c, m, min(h) AS h FROM hour_deltas GROUP BY c, m),
   u AS (
     SELECT x.collection_id AS c, x.marketplace AS m, x.hour AS h, x.cum_num_sales AS old_n, x.cum_volume AS old_v, 0::bigint AS n, 0::numeric AS v
     FROM f CROSS JOIN LATERAL (
       SELECT * FROM sales_hourly x WHERE x.collection_id = f.c AND x.marketplace = f.m
         AND x.hour >= coalesce((SELECT p.hour FROM sales_hourly p WHERE p.collection_id = f.c AND p.marketplace = f.m AND p.hour < f.h
                                 ORDER BY p.hour DESC LIMIT 1), f.h)
       OFFSET 0) x
     UNION ALL
     SELECT c, m, h, NULL, NULL, n, v FROM hour_deltas),
   g AS (SELECT c, m, h, max(old_n) AS old_n, max(old_v) AS old_v, sum(n) AS n, sum(v) AS v FROM u GROUP BY c, m, h),
   r AS (SELECT c, m, h, old_n, old_v, sum(n) OVER w AS rn, sum(v) OVER w AS rv, count(old_n) OVER w AS run
         FROM g WINDOW w AS (PARTITION BY c, m ORDER BY h)),
   t AS (SELECT c, m, h, coalesce(max(old_n) OVER b, 0) + rn AS n, coalesce(max(old_v) OVER b, 0) + rv AS v
         FROM r WINDOW b AS (PARTITION BY c, m, run))
   INSERT INTO sales_hourly AS sh (collection_id, marketplace, hour, cum_num_sales, cum_volume)
   SELECT c, m, h, n, v FROM t
   ON CONFLICT (collection_id, marketplace, hour) DO UPDATE SET cum_num_sales = EXCLUDED.cum_num_sales, cum_volume = EXCLUDED.cum_volume
   WHERE (sh.cum_num_sales, sh.cum_volume) IS DISTINCT FROM (EXCLUDED.cum_num_sales, EXCLUDED.cum_volume)`,
  `DELETE FROM sales_hourly sh USING (SELECT c, m, h FROM hour_deltas WHERE n < 0) e
   WHERE sh.collection_id = e.c AND sh.marketplace = e.m AND sh.hour = e.h
     AND sh.cum_num_sales = coalesce((SELECT p.cum_num_sales FROM sales_hourly p
                                      WHERE p.collection_id = e.c AND p.marketplace = e.m AND p.hour < e.h
                                      ORDER BY p.hour DESC LIMIT 1), 0)`,
];

/** The hour rows every sale implies, computed afresh from the raw sales of `table` (stats rebuild). */
export function freshHourlySql(collectionFilter: string, table = "sales"): string {
  return `SELECT collection_id, marketplace, hour,
      sum(n) OVER w AS cum_num_sales, sum(v) OVER w AS cum_volume
    FROM (SELECT collection_id, marketplace, timestamp / ${BUCKET_SECONDS} AS hour, count(*) AS n, sum(price) AS v
          FROM ${table} WHERE ${collectionFilter} GROUP BY 1, 2, 3) g
    WINDOW w AS (PARTITION BY collection_id, marketplace ORDER BY hour)`;
}
