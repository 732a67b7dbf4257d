import type { KeyAdmin } from "./ports/keys.js";
import type { ReadRepositories } from "./ports/reads.js";
import type { WebhookStore } from "./ports/webhooks.js";
import type { IngestWriter, WritableStore } from "./ports/writes.js";
import { SqliteWebhookStore } from "./sqlite/webhooks.js";
import { PgWebhookStore } from "./postgres/webhooks.js";
import { PgKeyAdmin } from "./postgres/key-admin.js";
import { isPostgresUrl, migratePg, openPool, pgSchemaVersion, redactUrl, requireCurrentPgSchema } from "./postgres/database.js";
import { pgRepositories } from "./postgres/read-repositories.js";
import { pgWritable } from "./postgres/writable.js";
import { pgIngestWriter } from "./postgres/ingest-writer.js";
import { StoreError, StoreUnavailableError } from "./ports/errors.js";
import { unavailable } from "./postgres/statements.js";
import { sqliteKeyAdmin } from "./sqlite/key-admin.js";
import { openReadOnly, openWritable, refusePostgres, storeSchemaVersion } from "./sqlite/database.js";
import { MIGRATIONS } from "./sqlite/migrations.js";
import { sqliteRepositories } from "./sqlite/read-repositories.js";
import { sqliteWritable } from "./sqlite/writable.js";
import { type OneWriterOptions, oneSqliteWriter } from "./sqlite/one-writer.js";

// The one module that chooses an engine from a --db value: a SQLite file
// (the embedded default), or a postgres:// URL. Everything else opens stores
// here and talks to them through the ports (ports.ts).

export { isPostgresUrl, refusePostgres };

export interface OpenReadOptions {
  /** PostgreSQL connections per process. */
  poolSize?: number;
  /** PostgreSQL: how long a query may take before it fails as unavailable (postgres/database.ts). */
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

export interface OpenWritableOptions {
  /** Create the schema in an empty PostgreSQL database (import, demo). */
  migrateEmpty?: boolean;
}

/**
 * A store opened for writing (import, derive, demo, stats rebuild), on
 * either engine. SQLite files are created and migrated on open; a
 * PostgreSQL database is migrated automatically only when it is empty
 * (import and demo), otherwise its schema must be this build's ("marketdata
 * migrate" upgrades it: a deliberate step on a shared primary).
 */
export async function openWritableStore(target: string, options: OpenWritableOptions = {}): Promise<WritableStore> {
  if (!isPostgresUrl(target)) return sqliteWritable(openWritable(target));
  const pool = openPool(target, 2);
  try {
    if (options.migrateEmpty && (await pgSchemaVersion(pool)) === 0) await migratePg(pool);
    await requireCurrentPgSchema(pool, target);
  } catch (err) {
    await pool.end();
    // No server (yet), or one restarting: the caller may wait for it (consume does) rather than give up.
    throw unavailable(err) ? new StoreUnavailableError(`the PostgreSQL store at ${redactUrl(target)} is unreachable (${err instanceof Error ? err.message : String(err)})`, { cause: err }) : err;
  }
  return pgWritable(pool, redactUrl(target));
}

/**
 * The server's writer for the ingest API, on either engine. Nothing is
 * opened until the first batch: a server that is never sent a write never
 * opens its store for writing (a read-only file, a replica).
 */
export function openIngestWriter(db: string, options: OneWriterOptions = {}): IngestWriter {
  if (isPostgresUrl(db)) {
    const writer = pgIngestWriter(db, options);
    return options.local === undefined ? writer : options.local(writer);
  }
  // One writer per file, whatever number of processes write it (sqlite/one-writer.ts).
  return oneSqliteWriter(db, options);
}

/** Key management on either engine (on SQLite: the store's key file, never behind an import). */
export async function openKeyAdmin(db: string): Promise<KeyAdmin> {
  if (!isPostgresUrl(db)) return sqliteKeyAdmin(db);
  const pool = openPool(db, 1);
  try {
    await requireCurrentPgSchema(pool, db);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return new PgKeyAdmin(pool);
}

/** Brings a store to this build's schema: a SQLite file (created if absent) or a PostgreSQL database (the primary). */
export async function migrateStore(db: string): Promise<{ description: string; from: number; to: number }> {
  if (isPostgresUrl(db)) {
    const pool = openPool(db, 1);
    try {
      const { from, to } = await migratePg(pool).catch((err: unknown) => {
        if (err instanceof StoreError) throw err;
        throw new StoreError(`cannot migrate the PostgreSQL store at ${redactUrl(db)}: ${err instanceof Error ? err.message : String(err)}`);
      });
      return { description: `PostgreSQL store ${redactUrl(db)}`, from, to };
    } finally {
      await pool.end();
    }
  }
  const from = storeSchemaVersion(db);
  openWritable(db).close();
  return { description: `store ${db}`, from, to: MIGRATIONS.length };
}

/** The webhooks of a store (on SQLite: the file beside it, created if absent; on PostgreSQL: the store's tables). */
export async function openWebhookStore(db: string): Promise<WebhookStore> {
  if (!isPostgresUrl(db)) return new SqliteWebhookStore(db);
  const pool = openPool(db, 2);
  try {
    await requireCurrentPgSchema(pool, db);
  } catch (err) {
    await pool.end();
    throw err;
  }
  return new PgWebhookStore(pool);
}
