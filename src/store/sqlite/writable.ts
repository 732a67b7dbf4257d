import type { DiskUsage, WritableStore } from "../ports/writes.js";
import type { Db } from "./db.js";
import { DeriveStore } from "./derive-store.js";
import { SqliteRecordImport } from "./importer.js";
import { rebuildStats } from "./stats-rebuild.js";

// A SQLite store opened for writing, as the WritableStore port.

/** An open SQLite connection as a writable store (closing the store closes it). */
export function sqliteWritable(db: Db): WritableStore {
  return {
    description: db.name,
    records: new SqliteRecordImport(db),
    derive: new DeriveStore(db),
    rebuildStats: async (collectionId, check) => rebuildStats(db, collectionId, check),
    largestCollection: async () =>
      db
        .prepare("SELECT c.address FROM collections c ORDER BY (SELECT count(*) FROM tokens t WHERE t.collection_id = c.id) DESC, c.address LIMIT 1")
        .pluck()
        .get() as string | undefined,
    diskUsage: async () => diskUsage(db),
    close: async () => {
      db.close();
    },
  };
}

/**
 * Every table and index by the pages it holds (the dbstat table), after a
 * checkpoint that empties the write-ahead log into the file, so that the
 * file is the whole store.
 */
function diskUsage(db: Db): DiskUsage {
  db.pragma("wal_checkpoint(TRUNCATE)");
  const parts = db
    .prepare(
      `SELECT d.name, coalesce(m.tbl_name, d.name) AS "table", sum(d.pgsize) AS bytes, sum(CASE WHEN m.type = 'index' OR d.pagetype = 'leaf' THEN d.ncell ELSE 0 END) AS rows
       FROM dbstat d LEFT JOIN sqlite_schema m ON m.name = d.name GROUP BY d.name ORDER BY bytes DESC, d.name`,
    )
    .all() as DiskUsage["parts"];
  const total = (db.pragma("page_count", { simple: true }) as number) * (db.pragma("page_size", { simple: true }) as number);
  return { parts, total };
}
