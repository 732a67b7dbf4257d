import type pg from "pg";
import { StoreUnavailableError } from "../ports/errors.js";

/**
 * Runs a named prepared statement: PostgreSQL parses and plans each SQL text
 * once per connection instead of on every request. Names are derived from
 * the text, so every distinct query (per filter combination) gets its own.
 */
export class PgQueries {
  /** Statement name and the values of its first run, by SQL text. */
  readonly #names = new Map<string, { name: string; values: unknown[] }>();

  constructor(readonly pool: pg.Pool) {}

  /** The rows of a query, as objects by column name, or as arrays of values with `arrays` (columns taken by position). */
  async rows<R extends pg.QueryResultRow>(text: string, values: unknown[], arrays = false): Promise<R[]> {
    let known = this.#names.get(text);
    if (known === undefined) {
      known = { name: `q${this.#names.size}`, values };
      this.#names.set(text, known);
    }
    try {
      const query = { name: known.name, text, values };
      return arrays ? ((await this.pool.query({ ...query, rowMode: "array" })).rows as unknown as R[]) : (await this.pool.query<R>(query)).rows;
    } catch (err) {
      throw unavailable(err) ? new StoreUnavailableError("the PostgreSQL store is unreachable", { cause: err }) : err;
    }
  }

  /** Every SQL text run so far, with the values of its first run (for query-plan tests). */
  preparedRuns(): { text: string; values: unknown[] }[] {
    return [...this.#names].map(([text, { values }]) => ({ text, values }));
  }
}

/**
 * A failure of the store's availability rather than of the query: no
 * server, a server shutting down or restarting (SQLSTATE classes 08 and
 * 57P), a query cancelled at statement_timeout (57014: a server too busy, or
 * a replica held back by recovery), a lock not had within lock_timeout
 * (55P03: another writer holds it), a server out of resources (class 53:
 * connections, memory, shared memory for locks), a dropped connection or a
 * client that lost its own (node-postgres: "…is not queryable"), no host in
 * the wanted role (hosts.ts: a failover under way), no connection free in
 * time, or no answer within the client's query timeout (a partition). The
 * caller is told to come back (unavailable, Retry-After), never `internal`.
 * Codes, not classes: an error of another copy of pg-protocol is no
 * instance of this one's DatabaseError.
 */
export function unavailable(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? "");
  if (/^(08|57P|57014$|55P03$|53)/.test(code) || /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOHOST)$/.test(code)) return true;
  return err instanceof Error && /Connection terminated|timeout exceeded when trying to connect|Query read timeout|is not queryable/i.test(err.message);
}
