import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { notFlagged } from "./flags.js";
import {
  type DirtySpan,
  type FloorIo,
  type FloorPoint,
  MANY,
  rebuildRanges,
  runSync,
  settleFloors,
} from "../shared/floor-history.js";
import type { FloorBucket, FloorSpanLength } from "../../domain/floor-candles.js";

// Floor history on SQLite (shared/floor-history.ts decides; postgres/floor-history.ts
// is the same there): the tables, the triggers that log what changes the
// floor, and the reads and writes the settling asks for, run by the writer
// before it commits (record-writes.ts beforeCommit).

/** A token flagged or cleared: its listings' spans leave or enter the floor. */
function flagLogged(sign: string): string {
  return `INSERT INTO floor_dirty ${FLOOR_SQL.flagSpans(sign, "NEW.")};`;
}

/** The settling's reads of the spans (exported for the query-plan tests). */
export const FLOOR_SQL = {
  /** A token's listings' spans, by the token's listings (`key`: its collection_id and asset_key, as NEW. or ?). */
  flagSpans: (sign: string, key: "NEW." | "?") =>
    `SELECT s.collection_id, s.marketplace, s.listing_id, s.active_from, s.active_until, s.price, ${sign}
    FROM listings l INDEXED BY listings_by_asset JOIN listing_spans s ON s.listing_id = l.id
    WHERE l.collection_id = ${key === "?" ? "?" : "NEW.collection_id"} AND l.asset_key = ${key === "?" ? "?" : "NEW.asset_key"}`,
  /** The spans of tokens not flagged overlapping a range (of a marketplace, or all when its parameter is ''). */
  spans: (m: string) =>
    `SELECT s.active_from, s.active_until, s.price FROM listing_spans s INDEXED BY listing_spans_by_end JOIN listings l ON l.id = s.listing_id
     WHERE s.collection_id = ? AND s.active_until > ? AND s.active_from < ? AND ${m === "" ? "? = ''" : "s.marketplace = ?"} AND ${notFlagged("l")}`,
  /** A span logged as added, still there and of a token not flagged. */
  present: `SELECT 1 FROM listing_spans s JOIN listings l ON l.id = s.listing_id
     WHERE s.listing_id = ? AND s.active_from = ? AND s.active_until = ? AND s.price = ? AND ${notFlagged("l")}`,
};

/** Migration 41: the points, the buckets, the log and its triggers; then the history of what is stored. */
export const FLOOR_HISTORY_SCHEMA = `
  CREATE TABLE floor_points (
    collection_id INTEGER NOT NULL,
    -- '' for every marketplace
    marketplace TEXT NOT NULL,
    t INTEGER NOT NULL,
    -- wei from t on; NULL: no listing active
    price TEXT,
    PRIMARY KEY (collection_id, marketplace, t)
  ) WITHOUT ROWID;
  CREATE TABLE floor_buckets (
    collection_id INTEGER NOT NULL,
    marketplace TEXT NOT NULL,
    -- 60, 3600 or 86400 seconds
    span INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    low TEXT,
    high TEXT,
    first_at INTEGER NOT NULL,
    first TEXT,
    last TEXT,
    PRIMARY KEY (collection_id, marketplace, span, bucket)
  ) WITHOUT ROWID;
  -- What changed the floor in the transaction, emptied before it commits.
  CREATE TABLE floor_dirty (
    collection_id INTEGER NOT NULL,
    marketplace TEXT NOT NULL,
    listing_id INTEGER NOT NULL,
    active_from INTEGER NOT NULL,
    active_until INTEGER NOT NULL,
    price TEXT NOT NULL,
    sign INTEGER NOT NULL
  );
  -- The spans overlapping a range (a sweep): those ending after its start.
  CREATE INDEX listing_spans_by_end ON listing_spans (collection_id, active_until, active_from);
  CREATE TRIGGER listing_spans_floor_added AFTER INSERT ON listing_spans BEGIN
    INSERT INTO floor_dirty VALUES (NEW.collection_id, NEW.marketplace, NEW.listing_id, NEW.active_from, NEW.active_until, NEW.price, 1);
  END;
  CREATE TRIGGER listing_spans_floor_removed AFTER DELETE ON listing_spans BEGIN
    INSERT INTO floor_dirty VALUES (OLD.collection_id, OLD.marketplace, OLD.listing_id, OLD.active_from, OLD.active_until, OLD.price, -1);
  END;
  CREATE TRIGGER token_flags_floor_added AFTER INSERT ON token_flags WHEN NEW.is_flagged = 1 BEGIN
    ${flagLogged("-1")}
  END;
  CREATE TRIGGER token_flags_floor_changed AFTER UPDATE OF is_flagged ON token_flags WHEN NEW.is_flagged <> OLD.is_flagged BEGIN
    ${flagLogged("CASE WHEN NEW.is_flagged = 1 THEN -1 ELSE 1 END")}
  END;
`;

/** The names migration 41 made (test/support/engine.ts takes a store back before it). */
export const FLOOR_HISTORY_TRIGGERS = ["listing_spans_floor_added", "listing_spans_floor_removed", "token_flags_floor_added", "token_flags_floor_changed"];


/** The reads and writes of the settling on one connection, in the writer's transaction. */
export class SqliteFloorHistory implements FloorIo<"sync"> {
  readonly #db: Db;
  readonly #statements = new Map<string, Statement>();

  constructor(db: Db) {
    this.#db = db;
  }

  #prepare(sql: string): Statement {
    let s = this.#statements.get(sql);
    if (s === undefined) this.#statements.set(sql, (s = this.#db.prepare(sql)));
    return s;
  }

  /** Settles what the transaction logged (floor_dirty), emptying the log. */
  settle(): void {
    const counts = this.#prepare("SELECT collection_id, count(*) FROM floor_dirty GROUP BY collection_id").raw().all() as [number, number][];
    if (counts.length === 0) return;
    const big = JSON.stringify(counts.filter(([, n]) => n > MANY).map(([c]) => c));
    const whole = (this.#prepare(
      "SELECT collection_id, marketplace, min(active_from), max(active_until) FROM floor_dirty WHERE collection_id IN (SELECT value FROM json_each(?)) GROUP BY collection_id, marketplace",
    ).raw().all(big) as [number, string, number, number][]).map(([collectionId, marketplace, from, until]) => ({ collectionId, marketplace, from, until }));
    const rows = this.#prepare(
      "SELECT collection_id, marketplace, listing_id, active_from, active_until, price, sign FROM floor_dirty WHERE collection_id NOT IN (SELECT value FROM json_each(?))",
    ).raw().all(big) as [number, string, number, number, number, string, number][];
    this.#prepare("DELETE FROM floor_dirty").run();
    const dirty: DirtySpan[] = rows.map(([collectionId, marketplace, listingId, from, until, p, sign]) => ({
      collectionId, marketplace, listingId, from, until, price: p, sign: sign as 1 | -1,
    }));
    runSync(this, settleFloors(dirty, whole));
  }

  /** The whole history of every collection with spans, found again (migration 41). */
  rebuild(): void {
    this.#prepare("DELETE FROM floor_dirty").run();
    const ranges = this.#prepare("SELECT collection_id, marketplace, min(active_from), max(active_until) FROM listing_spans GROUP BY collection_id, marketplace").raw().all() as [number, string, number, number][];
    runSync(this, rebuildRanges(ranges.map(([collectionId, marketplace, from, until]) => ({ collectionId, marketplace, from, until }))));
  }

  points(c: number, m: string, from: number, through: number) {
    const before = this.#prepare(FLOOR_BEFORE).raw().get(c, m, from) as [string | null] | undefined;
    const rows = this.#prepare("SELECT t, price FROM floor_points WHERE collection_id = ? AND marketplace = ? AND t >= ? AND t <= ? ORDER BY t").raw().all(c, m, from, through) as [number, string | null][];
    return { before: before === undefined ? null : before[0], points: rows.map(([t, p]) => ({ t, price: p })) };
  }

  spans(c: number, m: string, from: number, until: number) {
    const rows = this.#prepare(FLOOR_SQL.spans(m)).raw().all(c, from, until, m) as [number, number, string][];
    return rows.map(([a, b, p]) => ({ from: a, until: b, price: p }));
  }

  present(spans: readonly DirtySpan[]) {
    const there = this.#prepare(FLOOR_SQL.present).pluck();
    return spans.map((d) => there.get(d.listingId, d.from, d.until, d.price) !== undefined);
  }

  writePoints(c: number, m: string, from: number, through: number, points: readonly FloorPoint[]) {
    this.#prepare("DELETE FROM floor_points WHERE collection_id = ? AND marketplace = ? AND t >= ? AND t <= ?").run(c, m, from, through);
    const insert = this.#prepare("INSERT INTO floor_points VALUES (?, ?, ?, ?)");
    for (const p of points) insert.run(c, m, p.t, p.price);
  }

  buckets(c: number, m: string, span: FloorSpanLength, from: number, until: number) {
    return bucketRows(this.#prepare(BUCKETS).raw().all(c, m, span, from, until) as BucketRow[]);
  }

  writeBuckets(c: number, m: string, span: FloorSpanLength, rows: readonly (readonly [number, FloorBucket | null])[]) {
    const remove = this.#prepare("DELETE FROM floor_buckets WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket = ?");
    const put = this.#prepare("INSERT OR REPLACE INTO floor_buckets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (const [b, row] of rows) {
      if (row === null) remove.run(c, m, span, b);
      else put.run(c, m, span, b, row.low, row.high, row.firstAt, row.first, row.last);
    }
  }
}

/** Bucket rows of a length in a range of buckets, oldest first (the candles' read too). */
export const BUCKETS = "SELECT bucket, low, high, first_at, first, last FROM floor_buckets WHERE collection_id = ? AND marketplace = ? AND span = ? AND bucket >= ? AND bucket < ? ORDER BY bucket";
/** The floor before a second: the last point before it. */
export const FLOOR_BEFORE = "SELECT price FROM floor_points WHERE collection_id = ? AND marketplace = ? AND t < ? ORDER BY t DESC LIMIT 1";

type BucketRow = [number, string | null, string | null, number, string | null, string | null];

export function bucketRows(rows: readonly BucketRow[]): FloorBucket[] {
  return rows.map(([bucket, low, high, firstAt, first, last]) => ({ bucket, low, high, firstAt, first, last }));
}
