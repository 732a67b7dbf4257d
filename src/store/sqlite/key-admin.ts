import type { ApiKeyInfo, KeyAdmin, KeyScope } from "../ports/keys.js";
import { hashApiKey, newApiKey } from "../shared/key-format.js";
import { type Db, openKeys, openWritable, storeSchemaVersion } from "./database.js";
import { MIGRATIONS } from "./migrations.js";

// API keys of a SQLite store, in its key file (database.ts keysFileOf).

export { hashApiKey, newApiKey };

/** Operator-side key management (the keys CLI); needs a writable store. */
export class ApiKeyAdmin {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Issues a new key and returns it; only its hash is kept. */
  create(name: string, options: { rateLimit?: number | null; scope?: KeyScope; now?: number } = {}): { id: number; key: string } {
    const key = newApiKey();
    const info = this.#db
      .prepare("INSERT INTO api_keys (name, key_hash, created_at, rate_limit, scope) VALUES (?, ?, ?, ?, ?)")
      .run(name, hashApiKey(key), Math.floor((options.now ?? Date.now()) / 1000), options.rateLimit ?? null, options.scope ?? "read");
    return { id: Number(info.lastInsertRowid), key };
  }

  list(): ApiKeyInfo[] {
    return this.#db
      .prepare(
        "SELECT id, name, created_at AS createdAt, revoked_at AS revokedAt, rate_limit AS rateLimit, scope FROM api_keys ORDER BY id",
      )
      .all() as ApiKeyInfo[];
  }

  /** Sets a key's rate limit (null: the server's default); false when no such key exists. */
  setRateLimit(id: number, rateLimit: number | null): boolean {
    return this.#db.prepare("UPDATE api_keys SET rate_limit = ? WHERE id = ?").run(rateLimit, id).changes === 1;
  }

  /** Revokes a key; false when no such key exists. Revoking twice keeps the first time. */
  revoke(id: number, now = Date.now()): boolean {
    const exists = this.#db.prepare("SELECT 1 FROM api_keys WHERE id = ?").get(id);
    if (!exists) return false;
    this.#db
      .prepare("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
      .run(Math.floor(now / 1000), id);
    return true;
  }
}

/** Runs `fn` on the keys of the SQLite store at `storePath` (its key file, database.ts openKeys), then closes them. */
export function withStoreKeys<T>(storePath: string, fn: (admin: ApiKeyAdmin) => T): T {
  const keys = openKeys(storePath);
  try {
    return fn(new ApiKeyAdmin(keys));
  } finally {
    keys.close();
  }
}

/**
 * Keys of a SQLite store, in its key file: never behind the store's write
 * lock, so a key is created or revoked in milliseconds while an import runs.
 * The store itself is only opened for writing (created or migrated) when it
 * is missing or behind this build's schema.
 */
export function sqliteKeyAdmin(path: string): KeyAdmin {
  if (storeSchemaVersion(path) < MIGRATIONS.length) openWritable(path).close();
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
