import type pg from "pg";
import { ApiKeyAdmin, type ApiKeyInfo, hashApiKey, newApiKey } from "../api-keys.js";
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { openKeys, openWritable, schemaVersion } from "../database.js";
import { MIGRATIONS } from "../migrations.js";
import { BUMP_DATA_VERSION, isPostgresUrl, openPool, requireCurrentPgSchema } from "../pg/database.js";

// Key management (the keys CLI) on either engine, behind one interface: the
// SQLite and PostgreSQL statements of the keys resource side by side. Keys
// live in the store, so every server (and every replica) sees a new key, a
// changed limit or a revocation.

export interface KeyAdmin {
  create(name: string, options?: { rateLimit?: number | null }): Promise<{ id: number; key: string }>;
  list(): Promise<ApiKeyInfo[]>;
  /** False when no such key exists. */
  setRateLimit(id: number, rateLimit: number | null): Promise<boolean>;
  /** False when no such key exists; revoking twice keeps the first time. */
  revoke(id: number): Promise<boolean>;
  close(): Promise<void>;
}

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

/**
 * Keys of a SQLite store, in its key file: never behind the store's write
 * lock, so a key is created or revoked in milliseconds while an import runs.
 * The store itself is only opened for writing (created or migrated) when it
 * is missing or behind this build's schema.
 */
function sqliteKeyAdmin(path: string): KeyAdmin {
  if (!existsSync(path) || storeSchemaVersion(path) < MIGRATIONS.length) openWritable(path).close();
  const db = openKeys(path);
  const admin = new ApiKeyAdmin(db);
  return {
    create: async (name, options) => admin.create(name, options),
    list: async () => admin.list(),
    setRateLimit: async (id, rate) => admin.setRateLimit(id, rate),
    revoke: async (id) => admin.revoke(id),
    close: async () => {
      db.close();
    },
  };
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

class PgKeyAdmin implements KeyAdmin {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Runs `sql` and bumps the data version in one transaction, so caches everywhere see the change. */
  async #write<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    const client = await this.#pool.connect();
    try {
      await client.query("BEGIN");
      const result = await client.query<R>(sql, params);
      await client.query(BUMP_DATA_VERSION);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async create(name: string, options: { rateLimit?: number | null } = {}): Promise<{ id: number; key: string }> {
    const key = newApiKey();
    const r = await this.#write<{ id: number }>(
      "INSERT INTO api_keys (name, key_hash, created_at, rate_limit) VALUES ($1, $2, $3, $4) RETURNING id",
      [name, hashApiKey(key), nowSeconds(), options.rateLimit ?? null],
    );
    return { id: r.rows[0]!.id, key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const r = await this.#pool.query<{ id: number; name: string; createdAt: string; revokedAt: string | null; rateLimit: number | null }>(
      `SELECT id, name, created_at AS "createdAt", revoked_at AS "revokedAt", rate_limit AS "rateLimit" FROM api_keys ORDER BY id`,
    );
    // bigint columns arrive as text: epoch seconds fit a number.
    return r.rows.map((k) => ({ ...k, createdAt: Number(k.createdAt), revokedAt: k.revokedAt === null ? null : Number(k.revokedAt) }));
  }

  async setRateLimit(id: number, rateLimit: number | null): Promise<boolean> {
    return ((await this.#write("UPDATE api_keys SET rate_limit = $1 WHERE id = $2", [rateLimit, id])).rowCount ?? 0) === 1;
  }

  async revoke(id: number): Promise<boolean> {
    const exists = await this.#pool.query("SELECT 1 FROM api_keys WHERE id = $1", [id]);
    if (exists.rowCount === 0) return false;
    await this.#write("UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL", [nowSeconds(), id]);
    return true;
  }

  close(): Promise<void> {
    return this.#pool.end();
  }
}

/** The schema version of the store at `path`, read without taking any lock a writer holds. */
function storeSchemaVersion(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return schemaVersion(db);
  } finally {
    db.close();
  }
}
