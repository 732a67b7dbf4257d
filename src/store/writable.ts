import type pg from "pg";
import { type Db, openWritable } from "./database.js";
import { DeriveStore, type DeriveRepository } from "./derive-store.js";
import { isPostgresUrl, migratePg, openPool, pgSchemaVersion, redactUrl, requireCurrentPgSchema } from "./pg/database.js";
import { PgDeriveStore } from "./pg/pg-derive-store.js";

// A store opened for writing (import, derive, demo, stats rebuild), on
// either engine. SQLite files are created and migrated on open, as before;
// a PostgreSQL database is migrated automatically only when it is empty
// (import and demo), otherwise its schema must be this build's ("marketdata
// migrate" upgrades it: a deliberate step on a shared primary).

export type WritableStore =
  | { engine: "sqlite"; db: Db; description: string; close(): Promise<void> }
  | { engine: "postgres"; pool: pg.Pool; description: string; close(): Promise<void> };

export interface OpenWritableOptions {
  /** Create the schema in an empty PostgreSQL database (import, demo). */
  migrateEmpty?: boolean;
}

export async function openWritableStore(target: string, options: OpenWritableOptions = {}): Promise<WritableStore> {
  if (!isPostgresUrl(target)) {
    return sqliteWritable(openWritable(target));
  }
  const pool = openPool(target, 2);
  try {
    if (options.migrateEmpty && (await pgSchemaVersion(pool)) === 0) await migratePg(pool);
    await requireCurrentPgSchema(pool, target);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return { engine: "postgres", pool, description: redactUrl(target), close: () => pool.end() };
}

export function deriveRepository(store: WritableStore): DeriveRepository {
  return store.engine === "sqlite" ? new DeriveStore(store.db) : new PgDeriveStore(store.pool);
}

/** An open SQLite connection as a writable store (tests and benchmarks that hold one). */
export function sqliteWritable(db: Db): WritableStore {
  return {
    engine: "sqlite",
    db,
    description: db.name,
    close: async () => {
      db.close();
    },
  };
}
