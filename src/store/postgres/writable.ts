import type pg from "pg";
import type { WritableStore } from "../ports.js";
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
    close: () => pool.end(),
  };
}
