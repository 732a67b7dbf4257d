import { openReadOnly } from "./database.js";
import { isPostgresUrl, openPool, requireCurrentPgSchema } from "./pg/database.js";
import { pgRepositories } from "./pg/read-repositories.js";
import type { ReadRepositories } from "./repositories.js";
import { sqliteRepositories } from "./sqlite/read-repositories.js";

export interface OpenReadOptions {
  /** PostgreSQL connections per process. */
  poolSize?: number;
  /** PostgreSQL: how long a query may take before it fails as unavailable (pg/database.ts). */
  queryTimeoutMs?: number;
}

/**
 * Opens a store for serving, read-only, on either engine: a SQLite file, or
 * a PostgreSQL URL (a primary or a hot standby; every transaction read-only).
 * Refuses a store whose schema is not this build's, saying what to do.
 */
export async function openReadRepositories(db: string, options: OpenReadOptions = {}): Promise<ReadRepositories> {
  if (!isPostgresUrl(db)) return sqliteRepositories(openReadOnly(db));
  const pool = openPool(db, {
    max: options.poolSize ?? 10,
    readOnly: true,
    ...(options.queryTimeoutMs === undefined ? {} : { queryTimeoutMs: options.queryTimeoutMs }),
  });
  try {
    await requireCurrentPgSchema(pool, db);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return pgRepositories(pool, db);
}
