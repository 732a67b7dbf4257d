import { notFlagged, notSpam, SPAM_COLUMNS, SPAM_JOIN } from "./flags.js";
import { metadataSql } from "../shared/metadata.js";
import type { Statement } from "better-sqlite3";
import type { CollectionListRepository, CollectionsListFilter, CollectionsPage } from "../ports/market.js";
import type { PageRequest } from "../ports/paging.js";
import { toPage } from "../ports/paging.js";
import { usdPointSql } from "../shared/prices.js";
import {
  addFlaggedUsd,
  ascendingKey,
  CLEAN_SUMMARIES,
  descendingKey,
  hourOf,
  marketCapKey,
  marketCapOf,
  SORT_COLUMNS,
  type SummariesTable,
  toCollectionSummary,
  WASH_SUMMARIES,
  windowStarts,
} from "../shared/collection-summaries.js";
import type { Db } from "./db.js";
import { limbsToWei } from "./wei.js";
import { FLAGGED } from "./wash.js";
import { HOUR } from "../../domain/series.js";
import type { SqliteStatements } from "./statements.js";

// The collections list on SQLite (migration 12; shared/collection-summaries.ts
// says what is kept and when the windows move). A write transaction keeps
// the summaries of the collections it changed just before it commits
// (data-versions.ts stampVersions): each is one range of the collection's
// hour series (at most 720 rows, hours with sales only) and one seek of the
// open listings by price.

/**
 * A summaries table and its indexes: one per order, and the rolling one
 * (the collections whose windows move with the hour). Migration 12 made
 * collection_summaries (clean sales); migration 30 made
 * collection_summaries_with_wash (every sale, for includeWash), alike.
 */
function summariesTableSql(table: SummariesTable): string {
  return `
  CREATE TABLE ${table} (
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
  CREATE INDEX ${table}_by_volume_1d ON ${table} (volume_1d_key, address);
  CREATE INDEX ${table}_by_volume_7d ON ${table} (volume_7d_key, address);
  CREATE INDEX ${table}_by_floor ON ${table} (floor_key, address);
  CREATE INDEX ${table}_by_sales_1d ON ${table} (sales_1d_key, address);
  CREATE INDEX ${table}_rolling ON ${table} (sales_30d) WHERE sales_30d > 0;`;
}

export const COLLECTION_SUMMARIES_SCHEMA = `${summariesTableSql(CLEAN_SUMMARIES)}
  CREATE INDEX listings_open_floor ON listings (collection_id, length(price), price, marketplace, marketplace_id)
    WHERE status = 'CREATED';
  ALTER TABLE store_state ADD COLUMN windows_hour INTEGER NOT NULL DEFAULT 0;
`;

/** Migration 30: the summaries of every sale, flagged ones included (includeWash), kept for every collection. */
export function washSummariesMigration(db: Db): void {
  db.exec(summariesTableSql(WASH_SUMMARIES));
  // The flagged sales' index carries their price limbs (and the flags, which SQLite reads to cover the condition): a window's sums are read from it alone.
  db.exec(`DROP INDEX sales_washed;
    CREATE INDEX sales_washed ON sales (collection_id, timestamp, price_hi, price_lo, wash_flags) WHERE wash_flags <> 0;`);
  keepEverySummary(db);
}

/** What keeping a summary reads (exported for the query-plan test). */
export const KEEPER_SQL = {
  rolling: (table: SummariesTable) => `SELECT collection_id FROM ${table} INDEXED BY ${table}_rolling WHERE sales_30d > 0`,
  // One range of the 30 days: each window's count, limb sums and limbs held, the shorter windows by FILTER.
  flaggedSums: `SELECT ${["@d1", "@d7", "@d30"].map((d) => {
    const f = `FILTER (WHERE timestamp >= ${d})`;
    return `count(*) ${f}, sum(price_hi) ${f}, sum(price_lo) ${f}, count(price_hi) ${f}`;
  }).join(", ")} FROM sales INDEXED BY sales_washed WHERE collection_id = @id AND ${FLAGGED} AND timestamp >= @d30`,
  flagged: `SELECT timestamp, price FROM sales INDEXED BY sales_washed WHERE collection_id = ? AND ${FLAGGED} AND timestamp >= ?`,
  // What the flagged sales add to a collection's kept summaries: the summary with wash less the clean one, both of the windows' hour.
  flaggedKept: `SELECT w.volume_1d, w.volume_7d, w.volume_30d, w.sales_1d, w.sales_7d, w.sales_30d, c.volume_1d, c.volume_7d, c.volume_30d, c.sales_1d, c.sales_7d, c.sales_30d
    FROM ${WASH_SUMMARIES} w JOIN ${CLEAN_SUMMARIES} c ON c.collection_id = w.collection_id WHERE w.collection_id = ?`,
  /** Every marketplace's running totals of clean sales through the collection's last hour with sales (migration 38's all-time volume): one seek. */
  running: "SELECT running FROM stats_hours WHERE collection_id = ? ORDER BY hour DESC LIMIT 1",
  /** Every flagged sale's limb sums, and whether each had its limbs (the all-time volume with wash); else their prices (flaggedPrices). */
  flaggedAll: `SELECT count(*), sum(price_hi), sum(price_lo), count(price_hi) FROM sales INDEXED BY sales_washed WHERE collection_id = ? AND ${FLAGGED}`,
  flaggedPrices: `SELECT price FROM sales INDEXED BY sales_washed WHERE collection_id = ? AND ${FLAGGED}`,
  /** The all-time volumes kept, with wash and clean (the flagged sales' part moved by a commit's flips). */
  allKept: `SELECT w.volume_all, c.volume_all FROM ${WASH_SUMMARIES} w JOIN ${CLEAN_SUMMARIES} c ON c.collection_id = w.collection_id WHERE w.collection_id = ?`,
  hours: "SELECT bucket, num_sales, volume, volume_usd FROM sales_series WHERE collection_id = ? AND marketplace = '' AND span = 3600 AND bucket >= ?",
  /** Before migration 34 (the dollars): the hours without them. */
  hoursBeforeUsd: "SELECT bucket, num_sales, volume, '0' FROM sales_series WHERE collection_id = ? AND marketplace = '' AND span = 3600 AND bucket >= ?",
  /** The floor of the list: an unflagged token's (flags.ts), from migration 37 on (`unflagged`). */
  floor: (unflagged: boolean) => `SELECT marketplace, marketplace_id, substr(asset_key, 3), price, created_at FROM listings INDEXED BY listings_open_floor
       WHERE collection_id = ? AND status = 'CREATED'${unflagged ? ` AND ${notFlagged("listings")}` : ""} ORDER BY length(price), price, marketplace, marketplace_id LIMIT 1`,
} as const;

/** A sale whose mask flipped: its time and price, and whether it became flagged (+1) or clean (-1). */
export interface Flipped {
  timestamp: number;
  price: bigint;
  sign: 1 | -1;
}

interface Windows {
  v1: bigint;
  v7: bigint;
  v30: bigint;
  n1: number;
  n7: number;
  n30: number;
  /** The clean sales' US dollars, exact (money.ts exactUsd): kept in both tables, the flagged sales' added when read (SqliteCollectionList). */
  u1: bigint;
  u7: bigint;
  u30: bigint;
  /** All time (migration 38). */
  all: bigint;
}

/**
 * Keeps the summaries of one connection's writes (prepared once per
 * connection): the clean ones and, from migration 30 on, those with the
 * flagged sales added (read from the partial index of flagged sales).
 */
export class SummaryKeeper {
  readonly #flaggedSums: Statement | undefined;
  readonly #flagged: Statement | undefined;
  readonly #upsertWash: Statement | undefined;
  readonly #flaggedKept: Statement | undefined;
  readonly #windowsHour: Statement;
  readonly #setWindowsHour: Statement;
  readonly #rolling: Statement;
  readonly #hours: Statement;
  readonly #floor: Statement;
  readonly #upsert: Statement;
  /** Whether the summaries keep the dollars (migration 34 on). */
  readonly #usd: boolean;
  /** Whether the summaries keep the market cap and the all-time volume (migration 38 on), and the statements reading them. */
  readonly #v38: boolean;
  readonly #tokens: Statement | undefined;
  readonly #running: Statement | undefined;
  readonly #flaggedAll: Statement | undefined;
  readonly #flaggedPrices: Statement | undefined;
  readonly #allKept: Statement | undefined;

  constructor(db: Db) {
    this.#windowsHour = db.prepare("SELECT windows_hour FROM store_state WHERE id = 1").pluck();
    this.#setWindowsHour = db.prepare("UPDATE store_state SET windows_hour = ? WHERE id = 1");
    // Before migration 30 (its own backfill, and migration 12's) only the clean summaries exist.
    const withWash = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(WASH_SUMMARIES) !== undefined;
    // The summaries with wash hold a collection whenever the clean ones do: theirs is the rolling set.
    this.#rolling = db.prepare(KEEPER_SQL.rolling(withWash ? WASH_SUMMARIES : CLEAN_SUMMARIES)).pluck();
    this.#usd = db.prepare(`SELECT 1 FROM pragma_table_info('${CLEAN_SUMMARIES}') WHERE name = 'volume_usd_1d'`).get() !== undefined;
    this.#hours = db.prepare(this.#usd ? KEEPER_SQL.hours : KEEPER_SQL.hoursBeforeUsd).raw();
    this.#v38 = db.prepare(`SELECT 1 FROM pragma_table_info('${CLEAN_SUMMARIES}') WHERE name = 'market_cap'`).get() !== undefined;
    if (this.#v38) {
      this.#tokens = db.prepare("SELECT tokens FROM collection_holdings WHERE collection_id = ?").pluck();
      this.#running = db.prepare(KEEPER_SQL.running).pluck();
    }
    if (this.#v38 && withWash) {
      this.#flaggedAll = db.prepare(KEEPER_SQL.flaggedAll).raw().safeIntegers(true);
      this.#flaggedPrices = db.prepare(KEEPER_SQL.flaggedPrices).pluck();
      this.#allKept = db.prepare(KEEPER_SQL.allKept).raw();
    }
    const flags = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'token_flags'").get() !== undefined;
    this.#floor = db.prepare(KEEPER_SQL.floor(flags)).raw();
    const upsert = (table: SummariesTable) =>
      db.prepare(`INSERT OR REPLACE INTO ${table} SELECT id, address, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?${this.#usd ? ", ?, ?, ?" : ""}${this.#v38 ? ", ?, ?, ?, ?" : ""} FROM collections WHERE id = ?`);
    this.#upsert = upsert(CLEAN_SUMMARIES);
    if (withWash) {
      this.#flaggedSums = db.prepare(KEEPER_SQL.flaggedSums).raw().safeIntegers(true);
      this.#flagged = db.prepare(KEEPER_SQL.flagged).raw();
      this.#upsertWash = upsert(WASH_SUMMARIES);
      this.#flaggedKept = db.prepare(KEEPER_SQL.flaggedKept).raw();
    }
  }

  /**
   * Inside the caller's write transaction: moves the windows to the hour
   * of `now` when they are behind (every summary with sales in its 30-day
   * window is kept again), and keeps the summaries of `ids`. The flagged
   * sales are summed again for those of `flagged.washed` (all when not
   * told), and whenever the windows moved; for the others, what they added
   * to the kept summary is added again, moved by the commit's flips (a live
   * feed's commit: two rows read, where summing the 30 days' flagged sales
   * cost a collection with many of them 7 µs a sale of a 1,000-sale commit,
   * bench:ingest).
   */
  keep(ids: Iterable<number>, now = Date.now() / 1000, flagged?: { washed: ReadonlySet<number>; flips: ReadonlyMap<number, readonly Flipped[]> }): void {
    const kept = this.#windowsHour.get() as number;
    const hour = Math.max(kept, hourOf(now));
    const todo = new Set(ids);
    const moved = hour > kept;
    if (moved) {
      this.#setWindowsHour.run(hour);
      for (const id of this.#rolling.all() as number[]) todo.add(id);
    }
    for (const id of todo) this.#keepOne(id, hour, moved || flagged === undefined || flagged.washed.has(id) ? undefined : (flagged.flips.get(id) ?? []));
  }

  /** `flips`: the collection's flagged sales moved by these alone since its summaries were kept (undefined: they are summed again). */
  #keepOne(collectionId: number, hour: number, flips: readonly Flipped[] | undefined): void {
    const starts = windowStarts(hour);
    const w: Windows = { v1: 0n, v7: 0n, v30: 0n, n1: 0, n7: 0, n30: 0, u1: 0n, u7: 0n, u30: 0n, all: 0n };
    for (const [bucket, n, v, u] of this.#hours.all(collectionId, starts.d30 * HOUR) as [number, number, string, string][]) {
      addTo(w, hourOf(bucket), starts, n, BigInt(v), BigInt(u));
    }
    const floor = this.#floor.get(collectionId) as [string, string, string, string, number] | undefined;
    const cap = this.#v38 ? marketCapOf(floor?.[3], this.#tokens!.get(collectionId) as number | undefined) : undefined;
    // All time: every marketplace's running total of clean sales at the collection's last hour (sales-stats.ts).
    if (this.#v38) {
      const running = this.#running!.get(collectionId) as string | undefined;
      if (running !== undefined) for (const [, , volume] of JSON.parse(running) as [string, number, string][]) w.all += BigInt(volume);
    }
    const allKept = flips === undefined || this.#allKept === undefined ? undefined : (this.#allKept.get(collectionId) as [string, string] | undefined);
    // Read before the clean summary is written again.
    const flagged = flips === undefined || this.#flaggedKept === undefined ? undefined : (this.#flaggedKept.get(collectionId) as (string | number)[] | undefined);
    this.#write(this.#upsert, collectionId, w, floor, cap);
    if (this.#upsertWash === undefined) return;
    // With wash, all time: the flagged sales' part kept moved by the commit's flips, or summed again.
    if (this.#v38) {
      if (allKept === undefined) w.all += this.#flaggedAllTime(collectionId);
      else {
        w.all += BigInt(allKept[0]) - BigInt(allKept[1]);
        for (const f of flips!) w.all += BigInt(f.sign) * f.price;
      }
    }
    if (flagged === undefined) this.#addFlagged(collectionId, starts, w);
    else {
      const [wv1, wv7, wv30, wn1, wn7, wn30, cv1, cv7, cv30, cn1, cn7, cn30] = flagged;
      w.v1 += BigInt(wv1!) - BigInt(cv1!);
      w.v7 += BigInt(wv7!) - BigInt(cv7!);
      w.v30 += BigInt(wv30!) - BigInt(cv30!);
      w.n1 += Number(wn1) - Number(cn1);
      w.n7 += Number(wn7) - Number(cn7);
      w.n30 += Number(wn30) - Number(cn30);
      for (const f of flips!) if (f.timestamp >= starts.d30 * HOUR) addTo(w, hourOf(f.timestamp), starts, f.sign, BigInt(f.sign) * f.price);
    }
    this.#write(this.#upsertWash, collectionId, w, floor, cap);
  }

  /**
   * Adds the flagged sales of the windows: each window summed from the
   * index's limbs (a range of it, no row read); the sales themselves only
   * when a limb sum cannot be exact (an amount past 2^95 wei, or a sum
   * past 2^63: wei.ts).
   */
  #addFlagged(collectionId: number, starts: ReturnType<typeof windowStarts>, w: Windows): void {
    try {
      const row = this.#flaggedSums!.get({ id: collectionId, d1: starts.d1 * HOUR, d7: starts.d7 * HOUR, d30: starts.d30 * HOUR }) as (bigint | null)[];
      const sums = [0, 4, 8].map((i) => row.slice(i, i + 4) as [bigint, bigint | null, bigint | null, bigint]);
      if (sums.every(([n, , , limbs]) => n === limbs)) {
        const [d1, d7, d30] = sums.map(([n, hi, lo]) => ({ n: Number(n), v: limbsToWei(hi, lo) }));
        w.v1 += d1!.v;
        w.v7 += d7!.v;
        w.v30 += d30!.v;
        w.n1 += d1!.n;
        w.n7 += d7!.n;
        w.n30 += d30!.n;
        return;
      }
    } catch (e) {
      if (!(e instanceof Error && /integer overflow/.test(e.message))) throw e;
    }
    for (const [timestamp, price] of this.#flagged!.all(collectionId, starts.d30 * HOUR) as [number, string][]) {
      addTo(w, hourOf(timestamp), starts, 1, BigInt(price));
    }
  }

  /** Every flagged sale's price summed: from the index's limbs (no row read), or the prices themselves when a limb sum cannot be exact. */
  #flaggedAllTime(collectionId: number): bigint {
    try {
      const [n, hi, lo, limbs] = this.#flaggedAll!.get(collectionId) as [bigint, bigint | null, bigint | null, bigint];
      if (n === limbs) return limbsToWei(hi, lo);
    } catch (e) {
      if (!(e instanceof Error && /integer overflow/.test(e.message))) throw e;
    }
    let sum = 0n;
    for (const price of this.#flaggedPrices!.iterate(collectionId) as Iterable<string>) sum += BigInt(price);
    return sum;
  }

  #write(upsert: Statement, collectionId: number, w: Windows, floor: [string, string, string, string, number] | undefined, cap: string | undefined): void {
    const [v1, v7, v30] = [String(w.v1), String(w.v7), String(w.v30)];
    upsert.run(
      v1, v7, v30, w.n1, w.n7, w.n30,
      ...(floor ?? [null, null, null, null, null]),
      descendingKey(v1), descendingKey(v7), ascendingKey(floor?.[3]), descendingKey(String(w.n1)),
      ...(this.#usd ? [String(w.u1), String(w.u7), String(w.u30)] : []),
      ...(this.#v38 ? [cap ?? null, marketCapKey(cap), String(w.all), descendingKey(String(w.all))] : []),
      collectionId,
    );
  }
}

/** Adds `n` sales of `volume` (and `usd` dollars, exact) at hour `h` to the windows that hold it. */
function addTo(w: Windows, h: number, starts: ReturnType<typeof windowStarts>, n: number, volume: bigint, usd = 0n): void {
  w.v30 += volume;
  w.n30 += n;
  w.u30 += usd;
  if (h >= starts.d7) {
    w.v7 += volume;
    w.n7 += n;
    w.u7 += usd;
  }
  if (h >= starts.d1) {
    w.v1 += volume;
    w.n1 += n;
    w.u1 += usd;
  }
}

/**
 * Migration 38: the market cap (floor × tokens) and the all-time volume of
 * each summary, and their orders' indexes, in both tables; every summary
 * kept again to fill them.
 */
export function summaryOrdersMigration(db: Db): void {
  for (const table of [CLEAN_SUMMARIES, WASH_SUMMARIES]) {
    db.exec(`ALTER TABLE ${table} ADD COLUMN market_cap TEXT;
      ALTER TABLE ${table} ADD COLUMN market_cap_key TEXT NOT NULL DEFAULT '${marketCapKey(undefined)}';
      ALTER TABLE ${table} ADD COLUMN volume_all TEXT NOT NULL DEFAULT '0';
      ALTER TABLE ${table} ADD COLUMN volume_all_key TEXT NOT NULL DEFAULT '${descendingKey("0")}';
      CREATE INDEX ${table}_by_market_cap ON ${table} (market_cap_key, address);
      CREATE INDEX ${table}_by_volume_all ON ${table} (volume_all_key, address);`);
  }
  keepEverySummary(db);
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
    const table = filter.includeWash ? WASH_SUMMARIES : CLEAN_SUMMARIES;
    if (!filter.includeSpam) where.push(notSpam("s"));
    const sql = `SELECT s.*, c.name, ${metadataSql("c", "collections")}, ${SPAM_COLUMNS}, c.chain, c.token_standard, h.tokens, h.holders
      FROM ${table} s INDEXED BY ${table}_by_${column.replace(/_key$/, "")}
      JOIN collections c ON c.id = s.collection_id LEFT JOIN collection_holdings h ON h.collection_id = s.collection_id
      ${SPAM_JOIN}
      WHERE ${where.join(" AND ")} ORDER BY s.${column}, s.address LIMIT ?`;
    params.push(page.limit + 1);
    return this.s.snapshot(() => {
      const hour = this.s.prepare("SELECT windows_hour FROM store_state WHERE id = 1").pluck().get() as number;
      const rows = this.s.rows(sql, params);
      if (filter.includeWash) {
        // The flagged sales' dollars (the kept ones are the clean sales'): the page's only, one point seek each.
        const flagged = this.s.prepare(`SELECT s.timestamp, s.price, s.currency, ${usdPointSql("s")} FROM sales s INDEXED BY sales_washed
          WHERE s.collection_id = ? AND ${FLAGGED} AND s.timestamp >= ?`).raw();
        for (const r of rows.slice(0, page.limit)) {
          addFlaggedUsd(r, hour, flagged.iterate(r.collection_id, windowStarts(hour).d30 * HOUR) as Iterable<[number, string, string, string | null]>);
        }
      }
      return {
        windowsEnd: hour === 0 ? 0 : (hour + 1) * HOUR,
        page: toPage(rows, page.limit, (r) => toCollectionSummary(r, filter.sort), (r) => r.key),
      };
    });
  }
}
