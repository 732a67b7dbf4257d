import type { KeyGrant } from "../ports/keys.js";
import { hashApiKey } from "../shared/key-format.js";
import type { PgQueries } from "./statements.js";
import type { KeysRepository } from "../ports/keys.js";

/** The server's key check on PostgreSQL (SQLite's is sqlite/key-verifier.ts): the same lookup by digest. */
export class PgKeyVerifier implements KeysRepository {
  constructor(private readonly q: PgQueries) {}

  async lookup(key: string): Promise<KeyGrant | undefined> {
    const rows = await this.q.rows<KeyGrant>(
      `SELECT id, rate_limit AS "rateLimit", scope FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`,
      [hashApiKey(key)],
    );
    return rows[0];
  }
}
