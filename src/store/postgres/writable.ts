import type pg from "pg";
import type { DiskUsage, WritableStore } from "../ports/writes.js";
import { PgDeriveStore } from "./derive-store.js";
import { PgRecordImport } from "./importer.js";
import { rebuildStatsPg } from "./stats-rebuild.js";

// A PostgreSQL store opened for writing (the primary), as the WritableStore port.

export function pgWritable(pool: pg.Pool, description: string): WritableStore {
  return {
    description,
    records: new PgRecordImport(pool),
    derive: new PgDeriveStore(pool),
    rebuildStats: (collectionId, check) => rebuildStatsPg(pool, collectionId, check),
    largestCollection: async () =>
      (
        await pool.query<{ address: string }>(
          "SELECT c.address FROM collections c ORDER BY (SELECT count(*) FROM tokens t WHERE t.collection_id = c.id) DESC, c.address LIMIT 1",
        )
      ).rows[0]?.address,
    diskUsage: () => diskUsage(pool),
    close: () => pool.end(),
  };
}

/** Every table (with its TOAST) and index of the store's schema by its size on disk, and the database's size. */
async function diskUsage(pool: pg.Pool): Promise<DiskUsage> {
  const parts = await pool.query<{ name: string; table: string; bytes: string; rows: string }>(
    `SELECT c.relname AS name, coalesce(t.relname, c.relname) AS "table", pg_table_size(c.oid) AS bytes, greatest(c.reltuples, 0)::bigint AS rows
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index i ON i.indexrelid = c.oid LEFT JOIN pg_class t ON t.oid = i.indrelid
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i', 'm')
     ORDER BY pg_table_size(c.oid) DESC, c.relname`,
  );
  const total = await pool.query<{ bytes: string }>("SELECT pg_database_size(current_database()) AS bytes");
  return {
    parts: parts.rows.map((r) => ({ name: r.name, table: r.table, bytes: Number(r.bytes), rows: Number(r.rows) })),
    total: Number(total.rows[0]!.bytes),
  };
}
