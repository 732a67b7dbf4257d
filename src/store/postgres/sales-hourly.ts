import { BUCKET_SECONDS } from "../shared/sales-buckets.js";

// The hourly running totals of sales (store/sqlite/sales-stats.ts explains them) on
// PostgreSQL, kept by set-based statements instead of per-row marks: every
// merge of sales turns what it changes into deltas per hour (a sale added,
// moved or repriced), and adds them to the running totals from their hour
// on. A partition built whole sums its rows afresh (freshHourlySql).

/**
 * What a merge of sales changes in the hour rows, as deltas per collection,
 * marketplace and hour (a temporary table hour_deltas, c m h n v): +1 sale
 * and +price where each staged sale now lies, -1 and -price where the row
 * it replaces lay. `latest` is a query giving, for each staged key, the
 * values it will have (collection_id, marketplace, timestamp, price, and
 * the key: hash, asset_id). Run before the upsert: it reads the old rows.
 */
export function hourDeltasSql(latest: string): string[] {
  return [
    "CREATE TEMP TABLE hour_deltas (c integer, m text, h bigint, n bigint, v numeric) ON COMMIT DROP",
    // A CTE read twice is computed once.
    `WITH l AS (${latest})
     INSERT INTO hour_deltas
     SELECT c, m, h, sum(n), sum(v) FROM (
       SELECT l.collection_id AS c, l.marketplace AS m, l.timestamp / ${BUCKET_SECONDS} AS h, 1 AS n, l.price AS v FROM l
       UNION ALL
       SELECT s.collection_id, s.marketplace, s.timestamp / ${BUCKET_SECONDS}, -1, -s.price
       FROM l JOIN sales s ON s.hash = l.hash AND s.collection_id = l.collection_id AND s.asset_id = l.asset_id) d
     GROUP BY c, m, h HAVING sum(n) <> 0 OR sum(v) <> 0`,
  ];
}

/**
 * Applies hour_deltas to the running totals: every hour row at or after a
 * delta gains the deltas up to its hour; an hour that gained its first sale
 * gets a row (the row before it plus the deltas since); an hour a move left
 * without sales loses its row. The work grows with the hour rows from the
 * earliest delta on (one or two for a live feed), not with the sales in
 * them: summing the raw sales of the touched hours again at each commit
 * grew with the sales of the current hour (31 ms a commit after 5,000 live
 * sales; an hour at 1,000 sales/s holds 3.6M).
 */
export const APPLY_HOUR_DELTAS: readonly string[] = [
  `UPDATE sales_hourly sh SET cum_num_sales = sh.cum_num_sales + d.n, cum_volume = sh.cum_volume + d.v
   FROM (SELECT x.collection_id, x.marketplace, x.hour, sum(hd.n) AS n, sum(hd.v) AS v
         FROM (SELECT c, m, min(h) AS h FROM hour_deltas GROUP BY c, m) f
         JOIN sales_hourly x ON x.collection_id = f.c AND x.marketplace = f.m AND x.hour >= f.h
         JOIN hour_deltas hd ON hd.c = x.collection_id AND hd.m = x.marketplace AND hd.h <= x.hour
         GROUP BY 1, 2, 3) d
   WHERE sh.collection_id = d.collection_id AND sh.marketplace = d.marketplace AND sh.hour = d.hour`,
  `INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume)
   SELECT hd.c, hd.m, hd.h,
     coalesce(base.n, 0) + (SELECT sum(x.n) FROM hour_deltas x WHERE x.c = hd.c AND x.m = hd.m AND x.h <= hd.h AND x.h > coalesce(base.hour, -1)),
     coalesce(base.v, 0) + (SELECT sum(x.v) FROM hour_deltas x WHERE x.c = hd.c AND x.m = hd.m AND x.h <= hd.h AND x.h > coalesce(base.hour, -1))
   FROM hour_deltas hd
   LEFT JOIN LATERAL (
     SELECT sh.hour, sh.cum_num_sales AS n, sh.cum_volume AS v FROM sales_hourly sh
     WHERE sh.collection_id = hd.c AND sh.marketplace = hd.m AND sh.hour < hd.h ORDER BY sh.hour DESC LIMIT 1) base ON true
   WHERE NOT EXISTS (SELECT 1 FROM sales_hourly sh WHERE sh.collection_id = hd.c AND sh.marketplace = hd.m AND sh.hour = hd.h)`,
  `DELETE FROM sales_hourly sh USING (SELECT c, m, h FROM hour_deltas WHERE n < 0) e
   WHERE sh.collection_id = e.c AND sh.marketplace = e.m AND sh.hour = e.h
     AND sh.cum_num_sales = coalesce((SELECT p.cum_num_sales FROM sales_hourly p
                                      WHERE p.collection_id = e.c AND p.marketplace = e.m AND p.hour < e.h
                                      ORDER BY p.hour DESC LIMIT 1), 0)`,
];

/** The hour rows every sale implies, computed afresh from the raw sales of `table` (stats rebuild; a new partition). */
export function freshHourlySql(collectionFilter: string, table = "sales"): string {
  return `SELECT collection_id, marketplace, hour,
      sum(n) OVER w AS cum_num_sales, sum(v) OVER w AS cum_volume
    FROM (SELECT collection_id, marketplace, timestamp / ${BUCKET_SECONDS} AS hour, count(*) AS n, sum(price) AS v
          FROM ${table} WHERE ${collectionFilter} GROUP BY 1, 2, 3) g
    WINDOW w AS (PARTITION BY collection_id, marketplace ORDER BY hour)`;
}
