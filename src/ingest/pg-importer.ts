import type pg from "pg";
import { BULK_KINDS } from "../store/pg/bulk-kinds.js";
import { openStage, writeTransaction } from "../store/pg/copy.js";
import { type ImportOptions, type ImportStats, scanLines } from "./importer.js";

// NDJSON import into PostgreSQL: the same checks line by line as SQLite's
// (scanLines), the valid records streamed by COPY into a staging table and
// merged by set-based upserts (store/pg/bulk-kinds.ts), the stats aggregates
// recomputed from the hours the sales touched, and the data version bumped:
// all in one transaction, so readers (and replicas) see the whole file or
// none of it. A killed import rolls back.

export async function importLinesPg(pool: pg.Pool, lines: AsyncIterable<string>, options: ImportOptions): Promise<ImportStats> {
  const kind = BULK_KINDS[options.kind];
  const stats: ImportStats = { lines: 0, inserted: 0, updated: 0, unchanged: 0, rejected: 0 };
  await writeTransaction(pool, async (client) => {
    const stage = await openStage(client, kind);
    try {
      await scanLines(lines, options, stats, (record) => stage.write(record as Record<string, unknown>));
    } catch (err) {
      stage.abort(err);
      throw err;
    }
    await stage.finish();
    for (const [i, sql] of kind.statements.entries()) {
      const r = await client.query<{ inserted: number; updated: number }>(sql);
      if (i === kind.counts) {
        stats.inserted = r.rows[0]!.inserted;
        stats.updated = r.rows[0]!.updated;
      }
    }
    // Lines whose key repeats within the file, or whose values were already there.
    stats.unchanged = stage.rows - stats.inserted - stats.updated;
  });
  // After the commit (readers are not blocked): planner statistics, and the
  // visibility map, without which an index-only scan (an asset's stats over
  // sales_by_asset) visits the heap for every row until autovacuum comes:
  // 10,000 heap fetches, 12.7 ms instead of 3 ms, on the bench:engines asset.
  await pool.query(`VACUUM (ANALYZE) ${kind.tables.join(", ")}`);
  return stats;
}
