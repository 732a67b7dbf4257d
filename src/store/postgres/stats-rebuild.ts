import type pg from "pg";
import { WRITE_LOCK } from "./record-writes.js";
import { stampVersions } from "./data-versions.js";
import { recordWashMoves } from "./collection-summaries.js";
import { freshHourlySql } from "./sales-stats.js";
import { freshSeriesSql, SERIES_VALUES } from "./sales-series.js";

/**
 * stats rebuild on PostgreSQL: the hour and series rows computed afresh
 * from the raw sales, compared with the stored ones (rows missing, extra or
 * different count as changed), and written unless `check`; one transaction.
 */
export async function rebuildStatsPg(pool: pg.Pool, collectionId: number | undefined, check: boolean): Promise<{ changed: number; rows: number }> {
  const scope = collectionId === undefined ? "true" : `collection_id = ${Number(collectionId)}`;
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    // One writer of sales at a time (record-writes.ts WRITE_LOCK): a merge
    // adding its deltas to hour rows this replaces would otherwise lose them,
    // or this would sum sales without a merge about to commit.
    await client.query("SELECT pg_advisory_xact_lock($1)", [WRITE_LOCK]);
    // Clean sales only (docs/wash-trades.md), as the writes keep them.
    await client.query(`CREATE TEMP TABLE fresh ON COMMIT DROP AS ${freshHourlySql(`${scope} AND wash_flags = 0`)}`);
    const diff = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM fresh f
       FULL JOIN (SELECT * FROM sales_hourly WHERE ${scope}) h
         ON h.collection_id = f.collection_id AND h.marketplace = f.marketplace AND h.hour = f.hour
       WHERE f.hour IS NULL OR h.hour IS NULL
          OR (f.cum_num_sales, f.cum_volume) IS DISTINCT FROM (h.cum_num_sales, h.cum_volume)`,
    );
    await client.query(`CREATE TEMP TABLE fresh_series ON COMMIT DROP AS ${freshSeriesSql(`${scope} AND wash_flags = 0`)}`);
    const values = SERIES_VALUES.split(",").map((c) => c.trim());
    const seriesDiff = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT collection_id, marketplace, span, bucket, ${SERIES_VALUES} FROM fresh_series) f
       FULL JOIN (SELECT * FROM sales_series WHERE ${scope}) h USING (collection_id, marketplace, span, bucket)
       WHERE (${values.map((c) => `f.${c}`).join(", ")}) IS DISTINCT FROM (${values.map((c) => `h.${c}`).join(", ")})`,
    );
    const changed = diff.rows[0]!.n + seriesDiff.rows[0]!.n;
    if (!check && changed > 0) {
      await client.query(`DELETE FROM sales_hourly WHERE ${scope}`);
      await client.query("INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume) SELECT * FROM fresh");
      await client.query(`DELETE FROM sales_series WHERE ${scope}`);
      await client.query("INSERT INTO sales_series SELECT * FROM fresh_series");
      // Its flagged sales summed again for its summary with wash, as every other part of it is.
      if (collectionId !== undefined) await recordWashMoves(client, [collectionId], []);
      await stampVersions(client, collectionId === undefined ? { all: true } : { ids: [collectionId] });
    }
    const rows = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM sales_hourly");
    await client.query(check ? "ROLLBACK" : "COMMIT");
    return { changed, rows: rows.rows[0]!.n };
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
