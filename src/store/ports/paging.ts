import type { KeyValue } from "../../domain/rows.js";
// The store's ports (this folder, a file per role: reads, market, feed,
// keys, writes, derive, webhooks, errors) are every interface the rest of
// the code uses of the store. Each engine implements all of them in one
// folder (sqlite/, postgres/), importing only the ports, shared/ and the
// domain; open.ts picks the engine from a --db value.
//
// What every port shares: SQLite answers synchronously (better-sqlite3),
// PostgreSQL with promises, and the MaybePromise results let the SQLite path
// stay synchronous where it matters (key checks and the data version on a
// cached answer); keyset pages bound to their query.

export type MaybePromise<T> = T | Promise<T>;

/** `then` for a value that may or may not be a promise: synchronous when it is not. */
export function settle<T, R>(value: MaybePromise<T>, then: (v: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}

/** The type of each element of a list's page key, for validating decoded tokens. */
export type KeySpec = readonly ("int" | "text")[];

export interface PageRequest {
  limit: number;
  /** Position after which the page starts; null for the first page. */
  after: KeyValue[] | null;
}

export interface Page<T> {
  rows: T[];
  /** Key of the last row when more rows follow, else null. */
  nextKey: KeyValue[] | null;
}

export interface TimeWindow {
  since?: number | undefined;
  until?: number | undefined;
}

/** A page of `rows` fetched with limit + 1: the extra row only says that more follow. */
export function toPage<R, T>(rows: R[], limit: number, map: (r: R) => T, keyOf: (t: T) => KeyValue[]): Page<T> {
  const more = rows.length > limit;
  const mapped = (more ? rows.slice(0, limit) : rows).map(map);
  const last = mapped[mapped.length - 1];
  return { rows: mapped, nextKey: more && last !== undefined ? keyOf(last) : null };
}
