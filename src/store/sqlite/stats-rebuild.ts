import type { StatsRebuildCounts } from "../ports/writes.js";
import type { Db } from "./db.js";
import { stampVersions, TouchedCollections } from "./data-versions.js";
import { SalesAggregates } from "./sales-stats.js";

// stats rebuild on SQLite (PostgreSQL's is postgres/stats-rebuild.ts).

/** The aggregates recomputed from the raw sales in one transaction; with check, rolled back. */
export function rebuildStats(db: Db, collectionId: number | undefined, check: boolean): StatsRebuildCounts {
  db.exec("BEGIN IMMEDIATE");
  try {
    const { changed } = new SalesAggregates(db).rebuild(collectionId);
    const rows = db.prepare("SELECT count(*) FROM sales_hourly").pluck().get() as number;
    if (changed > 0 && !check) {
      const touched = new TouchedCollections();
      if (collectionId === undefined) touched.all = true;
      else {
        touched.add(collectionId);
        // A repair: its summary with wash summed again too (collection-summaries.ts keep).
        touched.washed.add(collectionId);
      }
      stampVersions(db, touched);
    }
    db.exec(check ? "ROLLBACK" : "COMMIT");
    return { changed, rows };
  } catch (err) {
    if (db.inTransaction) db.exec("ROLLBACK");
    throw err;
  }
}
