import type pg from "pg";
import type { ApiKeyInfo, KeyAdmin, KeyScope } from "../ports/keys.js";
import { hashApiKey, newApiKey } from "../shared/key-format.js";
import { stampVersions } from "./data-versions.js";
import { inTransaction } from "./transaction.js";

// Keys of a PostgreSQL store: every write stamps the keys with the next data
// version in its transaction (data-versions.ts), so servers on the primary
// and on every replica drop the keys they remembered (a revoked key is
// refused once replayed); what they cached of the data stays.

const nowSeconds = () => Math.floor(Date.now() / 1000);

export class PgKeyAdmin implements KeyAdmin {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  /** Runs `sql` and stamps the keys changed in one transaction, so servers everywhere see the change. */
  async #write<R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    return inTransaction(this.#pool, async (client) => {
      const result = await client.query<R>(sql, params);
      await stampVersions(client, { keys: true });
      return result;
    });
  }

  async create(name: string, options: { rateLimit?: number | null; scope?: KeyScope } = {}): Promise<{ id: number; key: string }> {
    const key = newApiKey();
    const r = await this.#write<{ id: number }>(
      "INSERT INTO api_keys (name, key_hash, created_at, rate_limit, scope) VALUES ($1, $2, $3, $4, $5) RETURNING id",
      [name, hashApiKey(key), nowSeconds(), options.rateLimit ?? null, options.scope ?? "read"],
    );
    return { id: r.rows[0]!.id, key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const r = await this.#pool.query<{ id: number; name: string; createdAt: string; revokedAt: string | null; rateLimit: number | null; scope: KeyScope }>(
      `SELECT id, name, created_at AS "createdAt", revoked_at AS "revokedAt", rate_limit AS "rateLimit", scope FROM api_keys ORDER BY id`,
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

