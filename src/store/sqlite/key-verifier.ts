import type { Statement } from "better-sqlite3";
import type { KeyGrant } from "../ports/keys.js";
import { hashApiKey } from "../shared/key-format.js";
import { type Db, hasScopeColumn } from "./database.js";

// The server's key check on SQLite (PostgreSQL's is postgres/key-verifier.ts).

/**
 * Server-side key check. Each check reads the store, so a revocation is seen
 * by running servers on their next request; a point lookup costs microseconds.
 */
export class ApiKeyVerifier {
  readonly #lookup: Statement;

  constructor(db: Db) {
    // A key file from before scopes, served read-only (not yet opened for
    // writing by this build): every key in it is a read key.
    const scope = hasScopeColumn(db) ? "scope" : "'read' AS scope";
    this.#lookup = db.prepare(
      `SELECT id, rate_limit AS rateLimit, ${scope} FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL`,
    );
  }

  /** The grant of a valid, unrevoked key; undefined otherwise. */
  lookup(key: string): KeyGrant | undefined {
    return this.#lookup.get(hashApiKey(key)) as KeyGrant | undefined;
  }
}
