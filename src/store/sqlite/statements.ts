import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";

/**
 * The prepared statements of one SQLite connection, shared by its
 * repositories: each SQL text is prepared the first time it is seen, then
 * reused (the repositories build SQL per filter combination).
 */
export class SqliteStatements {
  readonly db: Db;
  readonly #statements = new Map<string, Statement>();
  /** Runs a read in one transaction: every statement sees the same snapshot. */
  readonly snapshot: <T>(read: () => T) => T;

  constructor(db: Db) {
    this.db = db;
    this.snapshot = db.transaction((read: () => unknown) => read()) as <T>(read: () => T) => T;
  }

  prepare(sql: string): Statement {
    let stmt = this.#statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  /** Every SQL text prepared so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#statements.keys()];
  }
}

export type { Row } from "../shared/rows.js";
