import type pg from "pg";
import { notFlagged } from "./flags.js";
import { type DirtySpan, type FloorIo, type FloorPoint, MANY, rebuildRanges, runAsync, settleFloors, type WholeRange } from "../shared/floor-history.js";
import type { FloorBucket, FloorSpanLength } from "../../domain/floor-candles.js";

// Floor history on PostgreSQL, as sqlite/floor-history.ts keeps it (shared/floor-history.ts
// decides): the tables, the statement triggers that log what changes the
// floor (their transition tables: a bulk merge logs its spans in one
// statement), and the reads and writes the settling asks for, run by every
// write transaction before it commits (copy.ts writeTransaction) under
// FLOOR_LOCK: writers of different kinds (a sale, a transfer, a listing)
// may change one collection's spans at once, and each finds the floor
// from the points the one before it committed.

/** Migration 41: the points, the buckets, the log and its triggers. */
export const FLOOR_HISTORY_SCHEMA = `
  CREATE TABLE floor_points (
    collection_id integer NOT NULL,
    marketplace text NOT NULL,
    t bigint NOT NULL,
    price numeric(78,0),
    PRIMARY KEY (collection_id, marketplace, t)
  );
  CREATE TABLE floor_buckets (
    collection_id integer NOT NULL,
    marketplace text NOT NULL,
    span integer NOT NULL,
    bucket bigint NOT NULL,
    low numeric(78,0),
    high numeric(78,0),
    first_at bigint NOT NULL,
    first numeric(78,0),
    last numeric(78,0),
    PRIMARY KEY (collection_id, marketplace, span, bucket)
  );
  CREATE TABLE floor_dirty (
    collection_id integer NOT NULL,
    marketplace text NOT NULL,
    listing_id bigint NOT NULL,
    active_from bigint NOT NULL,
    active_until bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    sign smallint NOT NULL
  );
  CREATE INDEX listing_spans_by_end ON listing_spans (collection_id, active_until) INCLUDE (active_from, marketplace, price, listing_id);
  CREATE FUNCTION floor_spans_added() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO floor_dirty SELECT collection_id, marketplace, listing_id, active_from, active_until, price, 1 FROM added;
    RETURN NULL;
  END $$;
  CREATE FUNCTION floor_spans_removed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO floor_dirty SELECT collection_id, marketplace, listing_id, active_from, active_until, price, -1 FROM removed;
    RETURN NULL;
  END $$;
  CREATE TRIGGER listing_spans_floor_added AFTER INSERT ON listing_spans REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION floor_spans_added();
  CREATE TRIGGER listing_spans_floor_removed AFTER DELETE ON listing_spans REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION floor_spans_removed();
  -- A token flagged or cleared: its listings' spans leave or enter the floor.
  CREATE FUNCTION floor_flags_added() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO floor_dirty SELECT s.collection_id, s.marketplace, s.listing_id, s.active_from, s.active_until, s.price, -1
    FROM added f JOIN listings l ON l.collection_id = f.collection_id AND l.asset_id = f.asset_id JOIN listing_spans s ON s.listing_id = l.id
    WHERE f.is_flagged;
    RETURN NULL;
  END $$;
  CREATE FUNCTION floor_flags_changed() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO floor_dirty SELECT s.collection_id, s.marketplace, s.listing_id, s.active_from, s.active_until, s.price, CASE WHEN n.is_flagged THEN -1 ELSE 1 END
    FROM changed n JOIN was o ON o.collection_id = n.collection_id AND o.asset_id = n.asset_id
      JOIN listings l ON l.collection_id = n.collection_id AND l.asset_id = n.asset_id JOIN listing_spans s ON s.listing_id = l.id
    WHERE n.is_flagged <> o.is_flagged;
    RETURN NULL;
  END $$;
  CREATE TRIGGER token_flags_floor_added AFTER INSERT ON token_flags REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION floor_flags_added();
  CREATE TRIGGER token_flags_floor_changed AFTER UPDATE ON token_flags REFERENCING OLD TABLE AS was NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION floor_flags_changed();
`;

/** The advisory lock the settling takes (after any kind's: no cycle). */
export const FLOOR_LOCK = 0x6d64_666c;


/** The spans of tokens not flagged overlapping a range, by their end (of a marketplace, or all when $4 is ''). */
export const SPANS = `SELECT s.active_from::text, s.active_until::text, s.price::text FROM listing_spans s JOIN listings l ON l.id = s.listing_id
  WHERE s.collection_id = $1 AND s.active_until > $2 AND s.active_from < $3 AND ($4 = '' OR s.marketplace = $4) AND ${notFlagged("l")}`;

/** Bucket rows of a length in a range of buckets, oldest first (the candles' read too). */
export const BUCKETS = `SELECT bucket::text AS b, low::text, high::text, first_at::text, first::text, last::text FROM floor_buckets
  WHERE collection_id = $1 AND marketplace = $2 AND span = $3 AND bucket >= $4 AND bucket < $5 ORDER BY bucket`;
/** The floor before a second: the last point before it. */
export const FLOOR_BEFORE = "SELECT price::text FROM floor_points WHERE collection_id = $1 AND marketplace = $2 AND t < $3 ORDER BY t DESC LIMIT 1";

type BucketRow = [string, string | null, string | null, string, string | null, string | null];

export function bucketRows(rows: readonly BucketRow[]): FloorBucket[] {
  return rows.map(([bucket, low, high, firstAt, first, last]) => ({
    bucket: Number(bucket), low, high, firstAt: Number(firstAt), first, last,
  }));
}

/** The reads and writes of the settling, on the write transaction's connection. */
export class PgFloorHistory implements FloorIo<"async"> {
  constructor(private readonly client: pg.PoolClient) {}

  async #rows<R extends unknown[]>(sql: string, values: unknown[]): Promise<R[]> {
    return (await this.client.query<R>({ text: sql, values, rowMode: "array" })).rows;
  }

  /**
   * Settles what the transaction logged (floor_dirty), emptying the log in
   * one statement: a collection that logged more than MANY comes back as
   * its marketplaces' ranges (sign 0), swept whole, not as its spans.
   */
  async settle(): Promise<void> {
    const rows = await this.#rows<[number, string, string, string, string, string, number]>(
      `WITH d AS (DELETE FROM floor_dirty RETURNING *), n AS (SELECT collection_id, count(*) AS n FROM d GROUP BY collection_id)
       SELECT d.collection_id, d.marketplace, d.listing_id::text, d.active_from::text, d.active_until::text, d.price::text, d.sign
       FROM d JOIN n USING (collection_id) WHERE n.n <= ${MANY}
       UNION ALL
       SELECT d.collection_id, d.marketplace, '0', min(d.active_from)::text, max(d.active_until)::text, '0', 0
       FROM d JOIN n USING (collection_id) WHERE n.n > ${MANY} GROUP BY d.collection_id, d.marketplace`,
      [],
    );
    if (rows.length === 0) return;
    await this.client.query("SELECT pg_advisory_xact_lock($1)", [FLOOR_LOCK]);
    const dirty: DirtySpan[] = [];
    const whole: WholeRange[] = [];
    for (const [collectionId, marketplace, listingId, from, until, p, sign] of rows) {
      if (sign === 0) whole.push({ collectionId, marketplace, from: Number(from), until: Number(until) });
      else dirty.push({ collectionId, marketplace, listingId: Number(listingId), from: Number(from), until: Number(until), price: p, sign: sign as 1 | -1 });
    }
    await runAsync(this, settleFloors(dirty, whole));
  }

  /** The whole history of every collection with spans, found again (migration 41). */
  async rebuild(): Promise<void> {
    await this.client.query("DELETE FROM floor_dirty");
    const ranges = await this.#rows<[number, string, string, string]>(
      "SELECT collection_id, marketplace, min(active_from)::text, max(active_until)::text FROM listing_spans GROUP BY collection_id, marketplace",
      [],
    );
    await runAsync(this, rebuildRanges(ranges.map(([collectionId, marketplace, from, until]) => ({ collectionId, marketplace, from: Number(from), until: Number(until) }))));
  }

  async points(c: number, m: string, from: number, through: number) {
    const rows = await this.#rows<[string, string | null]>(
      `SELECT '-1', (${FLOOR_BEFORE}) UNION ALL
       (SELECT t::text, price::text FROM floor_points WHERE collection_id = $1 AND marketplace = $2 AND t >= $3 AND t <= $4 ORDER BY t)`,
      [c, m, from, through],
    );
    const before = rows.find(([t]) => t === "-1")!;
    const points = rows.filter((r) => r !== before).map(([t, p]) => ({ t: Number(t), price: p })).sort((a, b) => a.t - b.t);
    return { before: before[1], points };
  }

  async spans(c: number, m: string, from: number, until: number) {
    const rows = await this.#rows<[string, string, string]>(SPANS, [c, from, until, m]);
    return rows.map(([a, b, p]) => ({ from: Number(a), until: Number(b), price: p }));
  }

  async present(spans: readonly DirtySpan[]) {
    const rows = await this.#rows<[number]>(
      `SELECT u.n FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::numeric[]) WITH ORDINALITY AS u(id, a, b, price, n)
       WHERE EXISTS (SELECT 1 FROM listing_spans s JOIN listings l ON l.id = s.listing_id
         WHERE s.listing_id = u.id AND s.active_from = u.a AND s.active_until = u.b AND s.price = u.price AND ${notFlagged("l")})`,
      [spans.map((d) => d.listingId), spans.map((d) => d.from), spans.map((d) => d.until), spans.map((d) => d.price)],
    );
    const there = new Set(rows.map(([n]) => Number(n)));
    return spans.map((_, i) => there.has(i + 1));
  }

  async writePoints(c: number, m: string, from: number, through: number, points: readonly FloorPoint[]) {
    await this.client.query(
      // One statement: the points no longer there go, the others are set (disjoint rows: no key is both deleted and inserted).
      `WITH u AS (SELECT * FROM unnest($5::bigint[], $6::numeric[]) AS u(t, price)),
       gone AS (DELETE FROM floor_points WHERE collection_id = $1 AND marketplace = $2 AND t >= $3 AND t <= $4 AND t NOT IN (SELECT t FROM u))
       INSERT INTO floor_points SELECT $1, $2, u.t, u.price FROM u
       ON CONFLICT (collection_id, marketplace, t) DO UPDATE SET price = EXCLUDED.price`,
      [c, m, from, through, points.map((p) => p.t), points.map((p) => p.price)],
    );
  }

  async buckets(c: number, m: string, span: FloorSpanLength, from: number, until: number) {
    return bucketRows(await this.#rows<BucketRow>(BUCKETS, [c, m, span, from, until]));
  }

  async writeBuckets(c: number, m: string, span: FloorSpanLength, rows: readonly (readonly [number, FloorBucket | null])[]) {
    const gone = rows.filter(([, r]) => r === null).map(([b]) => b);
    const kept = rows.flatMap(([, r]) => (r === null ? [] : [r]));
    await this.client.query(
      `WITH gone AS (DELETE FROM floor_buckets WHERE collection_id = $1 AND marketplace = $2 AND span = $3 AND bucket = ANY($4::bigint[]))
       INSERT INTO floor_buckets SELECT $1, $2, $3, u.* FROM unnest($5::bigint[], $6::numeric[], $7::numeric[], $8::bigint[], $9::numeric[], $10::numeric[]) AS u
       ON CONFLICT (collection_id, marketplace, span, bucket) DO UPDATE
       SET low = EXCLUDED.low, high = EXCLUDED.high, first_at = EXCLUDED.first_at, first = EXCLUDED.first, last = EXCLUDED.last`,
      [c, m, span, gone, kept.map((r) => r.bucket), kept.map((r) => r.low), kept.map((r) => r.high), kept.map((r) => r.firstAt), kept.map((r) => r.first), kept.map((r) => r.last)],
    );
  }
}
