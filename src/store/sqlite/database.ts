import Database from "better-sqlite3";
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS } from "./migrations.js";

export type { Db } from "./db.js";
import type { Db } from "./db.js";

export { StoreError, StoreUnavailableError } from "../ports/errors.js";
import { StoreError } from "../ports/errors.js";

/**
 * The one line a command prints for an error of the SQLite engine (locked,
 * busy, corrupt, read-only, disk full); undefined for any other error.
 */
export function sqliteErrorLine(err: unknown): string | undefined {
  if (!(err instanceof Database.SqliteError)) return undefined;
  if (err.code === "SQLITE_BUSY" || err.code === "SQLITE_LOCKED") {
    return `the store is busy: another process (an import, derive or demo) holds its write lock; retry when it has finished (${err.message})`;
  }
  return `the store failed: ${err.message} (${err.code})`;
}


/**
 * A PostgreSQL URL given to a command that has no PostgreSQL store yet: said
 * plainly rather than taken for a file name.
 */
export function refusePostgres(path: string): void {
  if (/^postgres(ql)?:\/\//i.test(path)) {
    throw new StoreError(
      "this command works on the embedded SQLite store only (start builds and serves the SQLite demo); on PostgreSQL use demo, keys create and serve with --db postgres://...",
    );
  }
  // Another scheme (mysql://, sqlite://, file://) is no file name: say which stores there are, not that a file is missing.
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(path);
  if (scheme !== null) {
    throw new StoreError(`--db takes a SQLite file's path or a postgres:// (postgresql://) URL; ${scheme[1]}:// is not a store this build knows`);
  }
}

/**
 * The file beside a SQLite store that holds its API keys. Keys have a file of
 * their own because SQLite has one writer per file: an import holds the
 * store's write lock for its whole length, and a leaked key must be
 * revocable (and a key created) in milliseconds whatever else is running.
 * Copy or back up both files together.
 */
export function keysFileOf(storePath: string): string {
  return `${storePath}-keys`;
}

const KEYS_SCHEMA = `
  CREATE TABLE IF NOT EXISTS api_keys (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    -- requests per second; NULL: the server's default
    rate_limit INTEGER,
    -- what the key may do (ports.ts KeyScope)
    scope TEXT NOT NULL DEFAULT 'read' CHECK (scope IN ('read', 'ingest', 'admin'))
  );
`;

/**
 * A key file made before keys had scopes gets the column (every key in it
 * a read key). Key files have no migrations of their own: each writable
 * open brings the file to this schema, in one statement.
 */
function addScopeColumn(db: Db): void {
  if (hasScopeColumn(db)) return;
  db.exec("ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'read' CHECK (scope IN ('read', 'ingest', 'admin'))");
}

/** False for a key file made before scopes (a server reading it read-only treats every key as a read key). */
export function hasScopeColumn(db: Db): boolean {
  return (db.pragma("table_info(api_keys)") as { name: string }[]).some((c) => c.name === "scope");
}

/**
 * Opens the keys of the store at `storePath` (keysFileOf): for writing,
 * created if absent; read-only (servers), refused plainly if absent. A
 * connection of its own, so that no write on the store ever waits for a
 * key change or the other way round. An in-memory store has in-memory keys.
 */
export function openKeys(storePath: string, options: { readonly?: boolean } = {}): Db {
  if (storePath === ":memory:" || storePath === "") {
    const db = new Database(":memory:");
    db.exec(KEYS_SCHEMA);
    return db;
  }
  const path = keysFileOf(storePath);
  if (options.readonly) {
    if (!existsSync(path)) {
      throw new StoreError(`the key file ${path} of store ${storePath} is missing; "marketdata keys list --db ${storePath}" creates it`);
    }
    const db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma("busy_timeout = 1000");
    return db;
  }
  const db = new Database(path);
  // Before anything else: another process may be creating the same file (its lock is waited for, not an error).
  db.pragma("busy_timeout = 5000");
  db.pragma("journal_mode = WAL");
  // A revocation acknowledged must survive a power cut.
  db.pragma("synchronous = FULL");
  db.transaction(() => {
    db.exec(KEYS_SCHEMA);
    addScopeColumn(db);
  }).immediate();
  return db;
}

/**
 * Opens the store for writing (import, keys, demo), creating it and applying
 * pending migrations. WAL lets running servers keep reading meanwhile.
 */
export function openWritable(path: string): Db {
  refusePostgres(path);
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // Before anything else: another process may be creating the same file (its lock is waited for, not an error).
  db.pragma("busy_timeout = 5000");
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  tuneForWrites(db);
  migrate(db);
  // Every writable open leaves the key file in place (a store copied without it gets an empty one).
  if (path !== ":memory:" && !existsSync(keysFileOf(path))) openKeys(path).close();
  // A store written before planner statistics were kept gets them on its first
  // writable open, so servers never plan without them.
  if (!hasPlannerStats(db)) refreshPlannerStats(db);
  return db;
}

/**
 * What every writing connection sets (imports, the server's ingest writer).
 * Writes touch index pages all over the file (a sale's hash and asset keys
 * land anywhere in their indexes): a large cache keeps them in memory between
 * transactions instead of reading them back each time, and keeps a
 * transaction's dirty pages from spilling before its commit (the pages are
 * only allocated as needed).
 *
 * Temporary files on disk, not in memory: the statement sub-journal follows
 * temp_store, and kept in memory, a statement that may abort (an UPDATE of
 * a table with triggers, an upsert) cost more the more pages the open
 * savepoints had journaled before it, so that a group commit's batch (a
 * savepoint) cost what the store held (bench:ingest-scale: one collection's
 * batches grew slower as it grew; on disk, flat).
 * Past a small threshold the journal spills to a file that the OS caches.
 */
export function tuneForWrites(db: Db): void {
  db.pragma("foreign_keys = ON");
  db.pragma("cache_size = -262144");
  db.pragma("temp_store = FILE");
}

/**
 * Gathers the statistics SQLite's planner needs to pick, for each query, the
 * index that binds the most of its filters (without them it can prefer an
 * index that binds fewer columns and scan within it). A sampled ANALYZE:
 * milliseconds even on millions of rows. Run after every import and derive.
 */
export function refreshPlannerStats(db: Db): void {
  db.pragma("analysis_limit = 1000");
  db.exec("ANALYZE");
}

export function hasPlannerStats(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").get() !== undefined &&
    db.prepare("SELECT 1 FROM sqlite_stat1 LIMIT 1").get() !== undefined;
}

const READ_MMAP_BYTES = 1 << 30;

/** Opens an existing store read-only, as the server does. */
export function openReadOnly(path: string): Db {
  refusePostgres(path);
  if (!existsSync(path)) {
    throw new StoreError(`store ${path} does not exist; create it with "marketdata import" or "marketdata demo"`);
  }
  const db = new Database(path, { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  // Reads map the file instead of copying each page through a read() call:
  // index seeks (stats make dozens per call) stop paying a syscall per page.
  // Virtual address space only; the OS page cache holds the pages either way.
  db.pragma(`mmap_size = ${READ_MMAP_BYTES}`);
  const version = schemaVersion(db);
  if (version !== MIGRATIONS.length) {
    db.close();
    throw new StoreError(
      `store ${path} has schema version ${version}, this build needs ${MIGRATIONS.length}; ` +
        `run any writing command (e.g. "marketdata keys list") to migrate it`,
    );
  }
  return db;
}

/** The schema version of the store file at `path` (0 when there is none), read without taking any lock a writer holds. */
export function storeSchemaVersion(path: string): number {
  if (!existsSync(path)) return 0;
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return schemaVersion(db);
  } finally {
    db.close();
  }
}

export function schemaVersion(db: Db): number {
  return db.pragma("user_version", { simple: true }) as number;
}

export function migrate(db: Db): void {
  // Each step takes the write lock first, then reads the version under it:
  // another process opening the same new file at once (two `migrate`s, two
  // servers) may have applied it meanwhile, and a step run twice fails
  // (a column or table already there, or gone).
  const step = db.transaction((): boolean => {
    const v = schemaVersion(db);
    if (v > MIGRATIONS.length) throw new StoreError(`store has schema version ${v}, newer than this build (${MIGRATIONS.length})`);
    if (v === MIGRATIONS.length) return false;
    const migration = MIGRATIONS[v]!;
    if (typeof migration === "string") db.exec(migration);
    else migration(db, { openKeys: () => openKeys(db.name) });
    db.pragma(`user_version = ${v + 1}`);
    return true;
  });
  if (schemaVersion(db) === MIGRATIONS.length) return;
  // A step may make a table again (migration 20), dropping the one other
  // tables' rows refer to: foreign keys are off meanwhile (a pragma taken
  // only outside a transaction), and such a step checks them itself.
  const keys = db.pragma("foreign_keys", { simple: true }) as number;
  db.pragma("foreign_keys = OFF");
  try {
    while (step.immediate());
  } finally {
    db.pragma(`foreign_keys = ${keys ? "ON" : "OFF"}`);
  }
}
