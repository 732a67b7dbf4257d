import type { Statement } from "better-sqlite3";
import type { CollectionListRepository, CollectionsListFilter, CollectionsPage } from "../ports/market.js";
import type { PageRequest } from "../ports/paging.js";
import { toPage } from "../ports/paging.js";
import {
  ascendingKey,
  descendingKey,
  hourOf,
  SORT_COLUMNS,
  toCollectionSummary,
  windowStarts,
} from "../shared/collection-summaries.js";
import type { Db } from "./db.js";
import { HOUR } from "../../domain/series.js";
import type { SqliteStatements } from "./statements.js";

// The collections list on SQLite (migration 12; shared/collection-summaries.ts
// says what is kept and when the windows move). A write transaction keeps
// the summaries of the collections it changed just before it commits
// (data-versions.ts stampVersions): each is one range of the collection's
// hour series (at most 720 rows, hours with sales only) and one seek of the
// open listings by price.

export const COLLECTION_SUMMARIES_SCHEMA = `
  CREATE TABLE collection_summaries (
    collection_id INTEGER PRIMARY KEY,
    address TEXT NOT NULL,
    volume_1d TEXT NOT NULL,
    volume_7d TEXT NOT NULL,
    volume_30d TEXT NOT NULL,
    sales_1d INTEGER NOT NULL,
    sales_7d INTEGER NOT NULL,
    sales_30d INTEGER NOT NULL,
    floor_marketplace TEXT,
    floor_marketplace_id TEXT,
    floor_asset_id TEXT,
    floor_price TEXT,
    floor_created_at INTEGER,
    volume_1d_key TEXT NOT NULL,
    volume_7d_key TEXT NOT NULL,
    floor_key TEXT NOT NULL,
    sales_1d_key TEXT NOT NULL
  );
  CREATE INDEX collection_summaries_by_volume_1d ON collection_summaries (volume_1d_key, address);
  CREATE INDEX collection_summaries_by_volume_7d ON collection_summaries (volume_7d_key, address);
  CREATE INDEX collection_summaries_by_floor ON collection_summaries (floor_key, address);
  CREATE INDEX collection_summaries_by_sales_1d ON collection_summaries (sales_1d_key, address);
  CREATE INDEX collection_summaries_rolling ON collection_summaries (sales_30d) WHERE sales_30d > 0;
  CREATE INDEX listings_open_floor ON listings (collection_id, length(price), price, marketplace, marketplace_id)
    WHERE status = 'CREATED';
  ALTER TABLE store_state ADD COLUMN windows_hour INTEGER NOT NULL DEFAULT 0;
`;

/** What keeping a summary reads (exported for the query-plan test). */
export const KEEPER_SQL = {
  rolling: "SELECT collection_id FROM collection_summaries INDEXED BY collection_summaries_rolling WHERE sales_30d > 0",
  hours: "SELECT bucket, num_sales, volume FROM sales_series WHERE collection_id = ? AND marketplace = '' AND span = 3600 AND bucket >= ?",
  floor: `SELECT marketplace, marketplace_id, substr(asset_key, 3), price, created_at FROM listings INDEXED BY listings_open_floor
       WHERE collection_id = ? AND status = 'CREATED' ORDER BY length(price), price, marketplace, marketplace_id LIMIT 1`,
} as const;

/** Keeps the summaries of one connection's writes (prepared once per connection). */
export class SummaryKeeper {
  readonly #windowsHour: Statement;
  readonly #setWindowsHour: Statement;
  readonly #rolling: Statement;
  readonly #hours: Statement;
  readonly #floor: Statement;
  readonly #upsert: Statement;

  constructor(db: Db) {
    this.#windowsHour = db.prepare("SELECT windows_hour FROM store_state WHERE id = 1").pluck();
    this.#setWindowsHour = db.prepare("UPDATE store_state SET windows_hour = ? WHERE id = 1");
    this.#rolling = db.prepare(KEEPER_SQL.rolling).pluck();
    this.#hours = db.prepare(KEEPER_SQL.hours).raw();
    this.#floor = db.prepare(KEEPER_SQL.floor).raw();
    this.#upsert = db.prepare(
      `INSERT OR REPLACE INTO collection_summaries
       SELECT id, address, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM collections WHERE id = ?`,
    );
  }

  /**
   * Inside the caller's write transaction: moves the windows to the hour
   * of `now` when they are behind (every summary with sales in its 30-day
   * window is kept again), and keeps the summaries of `ids`.
   */
  keep(ids: Iterable<number>, now = Date.now() / 1000): void {
    const kept = this.#windowsHour.get() as number;
    const hour = Math.max(kept, hourOf(now));
    const todo = new Set(ids);
    if (hour > kept) {
      this.#setWindowsHour.run(hour);
      for (const id of this.#rolling.all() as number[]) todo.add(id);
    }
    for (const id of todo) this.#keepOne(id, hour);
  }

  #keepOne(collectionId: number, hour: number): void {
    const starts = windowStarts(hour);
    const w = { v1: 0n, v7: 0n, v30: 0n, n1: 0, n7: 0, n30: 0 };
    for (const [bucket, n, v] of this.#hours.all(collectionId, starts.d30 * HOUR) as [number, number, string][]) {
      const h = hourOf(bucket);
      const volume = BigInt(v);
      w.v30 += volume;
      w.n30 += n;
      if (h >= starts.d7) {
        w.v7 += volume;
        w.n7 += n;
      }
      if (h >= starts.d1) {
        w.v1 += volume;
        w.n1 += n;
      }
    }
    const floor = this.#floor.get(collectionId) as [string, string, string, string, number] | undefined;
    const [v1, v7, v30] = [String(w.v1), String(w.v7), String(w.v30)];
    this.#upsert.run(
      v1, v7, v30, w.n1, w.n7, w.n30,
      ...(floor ?? [null, null, null, null, null]),
      descendingKey(v1), descendingKey(v7), ascendingKey(floor?.[3]), descendingKey(String(w.n1)),
      collectionId,
    );
  }
}

/** Every collection's summary, as of the clock's hour (the migration's backfill). */
export function keepEverySummary(db: Db): void {
  new SummaryKeeper(db).keep(db.prepare("SELECT id FROM collections").pluck().all() as number[]);
}

export class SqliteCollectionList implements CollectionListRepository {
  constructor(private readonly s: SqliteStatements) {}

  collectionsPage(filter: CollectionsListFilter, page: PageRequest): CollectionsPage {
    const column = SORT_COLUMNS[filter.sort];
    // The chain's rows as the sort's index walks: a chain of few collections among many reads past the others' (docs/chains.md).
    const where: string[] = ["c.chain = ?"];
    const params: unknown[] = [filter.chain];
    if (page.after) {
      where.push(`(s.${column}, s.address) > (?, ?)`);
      params.push(...page.after);
    }
    if (filter.query !== undefined) {
      where.push("(instr(lower(c.name), ?) > 0 OR instr(s.address, ?) > 0)");
      params.push(filter.query, filter.query);
    }
    const sql = `SELECT s.*, c.name, c.chain, h.tokens, h.holders
      FROM collection_summaries s INDEXED BY collection_summaries_by_${column.replace(/_key$/, "")}
      JOIN collections c ON c.id = s.collection_id LEFT JOIN collection_holdings h ON h.collection_id = s.collection_id
      WHERE ${where.join(" AND ")} ORDER BY s.${column}, s.address LIMIT ?`;
    params.push(page.limit + 1);
    return this.s.snapshot(() => {
      const hour = this.s.prepare("SELECT windows_hour FROM store_state WHERE id = 1").pluck().get() as number;
      const rows = this.s.rows(sql, params);
      return {
        windowsEnd: hour === 0 ? 0 : (hour + 1) * HOUR,
        page: toPage(rows, page.limit, (r) => toCollectionSummary(r, filter.sort), (r) => r.key),
      };
    });
  }
}
