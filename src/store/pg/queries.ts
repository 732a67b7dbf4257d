import type pg from "pg";

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
    return (await this.pool.query<R>({ name, text, values })).rows;
  }

  /** Every SQL text run so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#names.keys()];
  }
}

/** 0x-prefixed lower-case hex of a bytea column. */
export const hexOf = (column: string, as: string) => `'0x' || encode(${column}, 'hex') AS ${as}`;

/** The bytes of a 0x-hex value, as a bytea parameter. */
export const hexBytes = (hex: string) => Buffer.from(hex.slice(2), "hex");
