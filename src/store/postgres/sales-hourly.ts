import { BUCKET_SECONDS } from "../shared/sales-buckets.js";

// The hourly running totals of sales (store/sqlite/sales-stats.ts explains them) on
// PostgreSQL, kept by set-based statements instead of per-row marks: every
// write of sales names, per collection and marketplace, the earliest hour it
// touched; the rows from that hour on are deleted and summed again from the
// raw sales, on top of the running totals of the last hour before it.

/**
 * Recomputes the hour rows from each (c, m, h) of `scope` on: a query giving
 * collection_id AS c, marketplace AS m and the earliest touched hour AS h.
 * Two statements: the delete, then the insert.
 */
export function recomputeHourlySql(scope: string): [string, string] {
  const touched = `SELECT c, m, min(h) AS h FROM (${scope}) x GROUP BY c, m`;
  return [
    `DELETE FROM sales_hourly sh USING (${touched}) t
     WHERE sh.collection_id = t.c AND sh.marketplace = t.m AND sh.hour >= t.h`,
    `INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume)
     SELECT t.c, t.m, g.hour,
       coalesce(base.n, 0) + sum(g.n) OVER w,
       coalesce(base.v, 0) + sum(g.v) OVER w
     FROM (${touched}) t
     LEFT JOIN LATERAL (
       SELECT sh.cum_num_sales AS n, sh.cum_volume AS v FROM sales_hourly sh
       WHERE sh.collection_id = t.c AND sh.marketplace = t.m AND sh.hour < t.h
       ORDER BY sh.hour DESC LIMIT 1) base ON true
     CROSS JOIN LATERAL (
       SELECT s.timestamp / ${BUCKET_SECONDS} AS hour, count(*) AS n, sum(s.price) AS v FROM sales s
       WHERE s.collection_id = t.c AND s.marketplace = t.m AND s.timestamp >= t.h * ${BUCKET_SECONDS}
       GROUP BY 1) g
     WINDOW w AS (PARTITION BY t.c, t.m ORDER BY g.hour)`,
  ];
}

/** The hour rows every sale implies, computed afresh from the raw sales of `table` (stats rebuild; a new partition). */
export function freshHourlySql(collectionFilter: string, table = "sales"): string {
  return `SELECT collection_id, marketplace, hour,
      sum(n) OVER w AS cum_num_sales, sum(v) OVER w AS cum_volume
    FROM (SELECT collection_id, marketplace, timestamp / ${BUCKET_SECONDS} AS hour, count(*) AS n, sum(price) AS v
          FROM ${table} WHERE ${collectionFilter} GROUP BY 1, 2, 3) g
    WINDOW w AS (PARTITION BY collection_id, marketplace ORDER BY hour)`;
}
