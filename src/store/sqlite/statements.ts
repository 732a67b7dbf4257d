import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import type { Row } from "../shared/rows.js";

/** A read statement in raw mode (rows as arrays) and the function that names its columns. */
interface Read {
  stmt: Statement;
  toRow: (values: unknown[]) => Row;
}

/**
 * The prepared statements of one SQLite connection, shared by its
 * repositories: each SQL text is prepared the first time it is seen, then
 * reused (the repositories build SQL per filter combination).
 */
export class SqliteStatements {
  readonly db: Db;
  readonly #statements = new Map<string, Statement>();
  readonly #reads = new Map<string, Read>();
  /** Runs a read in one transaction: every statement sees the same snapshot. */
  readonly snapshot: <T>(read: () => T) => T;

  constructor(db: Db) {
    this.db = db;
    const transaction = db.transaction((read: () => unknown) => read()) as <T>(read: () => T) => T;
    // A snapshot inside another (a page's reads, each one a snapshot of its
    // own) is already in one: a savepoint per nested read cost a tenth of
    // the collections list's CPU in a profile.
    this.snapshot = <T>(read: () => T): T => (db.inTransaction ? read() : transaction(read));
  }

  prepare(sql: string): Statement {
    let stmt = this.#statements.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * Every row of a read, as objects keyed by column name. better-sqlite3
   * builds each row object through V8's C++ API, property by property: on a
   * page of 20-50 rows that was a third to a half of the read's time
   * (bench:profile). Here SQLite hands rows over as
   * arrays (raw mode) and a function compiled once per statement, from the
   * statement's own column names, turns each into an object literal of one
   * fixed shape.
   */
  rows(sql: string, params: readonly unknown[]): Row[] {
    const { stmt, toRow } = this.#read(sql);
    const values = stmt.all(...params) as unknown[][];
    const rows = new Array<Row>(values.length);
    for (let i = 0; i < values.length; i++) rows[i] = toRow(values[i]!);
    return rows;
  }

  /** Every row of a read as its array of values (for reads that take columns by position). */
  values(sql: string, params: readonly unknown[]): unknown[][] {
    return this.#read(sql).stmt.all(...params) as unknown[][];
  }

  /** The first row of a read (rows()), or undefined. */
  row(sql: string, params: readonly unknown[]): Row | undefined {
    const { stmt, toRow } = this.#read(sql);
    const values = stmt.get(...params) as unknown[] | undefined;
    return values === undefined ? undefined : toRow(values);
  }

  #read(sql: string): Read {
    let read = this.#reads.get(sql);
    if (!read) {
      const stmt = this.db.prepare(sql).raw(true);
      read = { stmt, toRow: rowMaker(stmt.columns().map((c) => c.name)) };
      this.#reads.set(sql, read);
    }
    return read;
  }

  /** Every SQL text prepared so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#statements.keys(), ...this.#reads.keys()];
  }
}

/**
 * `(values) => ({ name0: values[0], name1: values[1], ... })` for these
 * column names. The names come from our own SQL and are quoted with
 * JSON.stringify, so nothing but a property name reaches the source text.
 * Two columns of one name keep the last, as better-sqlite3's objects do.
 */
function rowMaker(names: readonly string[]): (values: unknown[]) => Row {
  const last = new Map(names.map((name, i) => [name, i]));
  const fields = [...last].map(([name, i]) => `${JSON.stringify(name)}: v[${i}]`);
  return new Function("v", `return { ${fields.join(", ")} };`) as (values: unknown[]) => Row;
}

export type { Row } from "../shared/rows.js";
