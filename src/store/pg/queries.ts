import type pg from "pg";
import { StoreUnavailableError } from "../database.js";

/**
 * Runs a named prepared statement: PostgreSQL parses and plans each SQL text
 * once per connection instead of on every request. Names are derived from
 * the text, so every distinct query (per filter combination) gets its own.
 */
export class PgQueries {
  readonly #names = new Map<string, string>();

  constructor(readonly pool: pg.Pool) {}

  async rows<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    let name = this.#names.get(text);
    if (name === undefined) {
      name = `q${this.#names.size}`;
      this.#names.set(text, name);
    }
    try {
      return (await this.pool.query<R>({ name, text, values })).rows;
    } catch (err) {
      throw unavailable(err) ? new StoreUnavailableError("the PostgreSQL store is unreachable", { cause: err }) : err;
    }
  }

  /** Every SQL text run so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#names.keys()];
  }
}

/**
 * A connection-level failure rather than a query's: no server, a server
 * shutting down or restarting (SQLSTATE classes 08 and 57P), a dropped
 * connection, or no connection free in time.
 */
export function unavailable(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  if (/^(08|57P)/.test(code) || /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EPIPE)$/.test(code)) return true;
  return err instanceof Error && /Connection terminated|timeout exceeded when trying to connect/i.test(err.message);
}

/** 0x-prefixed lower-case hex of a bytea column. */
export const hexOf = (column: string, as: string) => `'0x' || encode(${column}, 'hex') AS ${as}`;

/** The bytes of a 0x-hex value, as a bytea parameter. */
export const hexBytes = (hex: string) => Buffer.from(hex.slice(2), "hex");
