import { createHash, randomBytes } from "node:crypto";
import type { Statement } from "better-sqlite3";
import type { Db } from "./database.js";

// API keys are 32 random bytes, so a plain SHA-256 is a safe digest to store:
// there is nothing to brute-force that a slow hash would protect.

const KEY_PREFIX = "mdk_";

export interface ApiKeyInfo {
  id: number;
  name: string;
  createdAt: number;
  revokedAt: number | null;
}

export function hashApiKey(key: string): Buffer {
  return createHash("sha256").update(key, "utf8").digest();
}

/** Operator-side key management (the keys CLI); needs a writable store. */
export class ApiKeyAdmin {
  readonly #db: Db;

  constructor(db: Db) {
    this.#db = db;
  }

  /** Issues a new key and returns it; only its hash is kept. */
  create(name: string, now = Date.now()): { id: number; key: string } {
    const key = KEY_PREFIX + randomBytes(32).toString("base64url");
    const info = this.#db
      .prepare("INSERT INTO api_keys (name, key_hash, created_at) VALUES (?, ?, ?)")
      .run(name, hashApiKey(key), Math.floor(now / 1000));
    return { id: Number(info.lastInsertRowid), key };
  }

  list(): ApiKeyInfo[] {
    return this.#db
      .prepare("SELECT id, name, created_at AS createdAt, revoked_at AS revokedAt FROM api_keys ORDER BY id")
      .all() as ApiKeyInfo[];
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

/**
 * Server-side key check. Each check reads the store, so a revocation is seen
 * by running servers on their next request; a point lookup costs microseconds.
 */
export class ApiKeyVerifier {
  readonly #lookup: Statement;

  constructor(db: Db) {
    this.#lookup = db.prepare("SELECT 1 FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL");
  }

  isValid(key: string): boolean {
    return this.#lookup.get(hashApiKey(key)) !== undefined;
  }
}
