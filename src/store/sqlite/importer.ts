import type { Kind } from "../../domain/kinds/index.js";
import type { MaybePromise } from "../ports/paging.js";
import type { ImportCounts, ImportRecord, ImportRecordsOptions, RecordImport } from "../ports/writes.js";
import { type Db, refreshPlannerStats } from "./database.js";
import { kindWrites } from "./kind-writes.js";
import { WriteStore } from "./record-writes.js";

// Import into SQLite: checked records upserted by natural key, all inside
// one BEGIN IMMEDIATE transaction, so a store sees the whole import or none
// of it (a killed import leaves the store as it was: SQLite rolls back).

/**
 * An import switches to bulk mode (secondary indexes dropped, rebuilt once at
 * the end) once it has inserted a quarter as many rows as the table held:
 * from then on, rebuilding costs less than updating the indexes row by row.
 * Into an empty table that is from the first row.
 */
const BULK_FRACTION = 0.25;

export class SqliteRecordImport implements RecordImport {
  constructor(private readonly db: Db) {}

  async importRecords(
    kind: Kind,
    feed: (write: (record: ImportRecord) => MaybePromise<void>) => Promise<void>,
    counts: ImportCounts,
    options: ImportRecordsOptions = {},
  ): Promise<void> {
    const db = this.db;
    const store = new WriteStore(db, { maintainStats: options.maintainStats ?? true });
    const { table, write } = kindWrites(kind);
    db.exec("BEGIN IMMEDIATE");
    const rowsBefore = store.rowCount(table);
    let restoreIndexes: (() => void) | undefined;
    try {
      await feed((record) => {
        counts[write(store, record)] += 1;
        const threshold = options.bulk === true ? 1 : Math.max(1, rowsBefore * BULK_FRACTION);
        if (restoreIndexes === undefined && options.bulk !== false && counts.inserted >= threshold) {
          restoreIndexes = store.deferIndexes(table);
        }
      });
      restoreIndexes?.();
      // After the indexes are back: the aggregates are recomputed from index ranges.
      store.beforeCommit();
      db.exec("COMMIT");
      if (options.refreshStatistics ?? true) refreshPlannerStats(db);
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  }
}
