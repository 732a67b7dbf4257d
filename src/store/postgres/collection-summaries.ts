import { notFlagged, notSpam, SPAM_COLUMNS } from "./flags.js";
import { metadataSql } from "../shared/metadata.js";
import { FLAGGED } from "../shared/wash-scope.js";
import type pg from "pg";
import type { CollectionListRepository, CollectionsListFilter, CollectionsPage } from "../ports/market.js";
import type { PageRequest } from "../ports/paging.js";
import { toPage } from "../ports/paging.js";
import {
  addFlaggedUsd, CLEAN_SUMMARIES, descendingKey, hourOf, marketCapKey, SORT_COLUMNS, type SummariesTable, toCollectionSummary, WASH_SUMMARIES, windowStarts,
} from "../shared/collection-summaries.js";
import { usdPointSql } from "../shared/prices.js";
import { NO_ASK } from "../shared/token-market.js";
import type { PgQueries } from "./statements.js";
import { HOUR } from "../../domain/series.js";

// The collections list on PostgreSQL, as SQLite's (sqlite/collection-summaries.ts;
// shared/collection-summaries.ts says what is kept and when the windows
// move): the last statements of every write transaction (data-versions.ts)
// keep the summaries of the collections it stamped, in one statement.

/** A decimal's descending key (shared/collection-summaries.ts descendingKey), in SQL. */
const descendingKeyOf = (x: string) => `lpad((99 - length(${x}::text))::text, 2, '0') || translate(${x}::text, '0123456789', '9876543210')`;

/** A summaries table and its indexes (SQLite's summariesTableSql): migration 12's clean one, migration 30's with wash. */
function summariesTableSql(table: SummariesTable): string {
  return `
  CREATE TABLE ${table} (
    collection_id integer PRIMARY KEY,
    address text COLLATE "C" NOT NULL,
    volume_1d numeric NOT NULL,
    volume_7d numeric NOT NULL,
    volume_30d numeric NOT NULL,
    sales_1d bigint NOT NULL,
    sales_7d bigint NOT NULL,
    sales_30d bigint NOT NULL,
    floor_marketplace text,
    floor_marketplace_id text,
    floor_asset_id numeric(78,0),
    floor_price numeric(78,0),
    floor_created_at bigint,
    volume_1d_key text COLLATE "C" NOT NULL,
    volume_7d_key text COLLATE "C" NOT NULL,
    floor_key text COLLATE "C" NOT NULL,
    sales_1d_key text COLLATE "C" NOT NULL
  );
  CREATE INDEX ${table}_by_volume_1d ON ${table} (volume_1d_key, address);
  CREATE INDEX ${table}_by_volume_7d ON ${table} (volume_7d_key, address);
  CREATE INDEX ${table}_by_floor ON ${table} (floor_key, address);
  CREATE INDEX ${table}_by_sales_1d ON ${table} (sales_1d_key, address);
  CREATE INDEX ${table}_rolling ON ${table} (collection_id) WHERE sales_30d > 0;`;
}

const WINDOWS_HOUR = "(SELECT windows_hour FROM store_state WHERE id = 1)";

export const COLLECTION_SUMMARIES_MIGRATION = `${summariesTableSql(CLEAN_SUMMARIES)}
  CREATE INDEX listings_open_floor ON listings (collection_id, price, marketplace, marketplace_id COLLATE "C") WHERE status = 'CREATED';
  ALTER TABLE store_state ADD COLUMN windows_hour bigint NOT NULL DEFAULT 0;
  UPDATE store_state SET windows_hour = floor(extract(epoch FROM now()) / ${HOUR});
  ${keepSql("true", WINDOWS_HOUR, CLEAN_SUMMARIES, false, false, 12)};
`;

/**
 * Migration 30: the summaries of every sale, flagged ones included
 * (includeWash), kept for every collection; the clean ones kept again with
 * them (migration 29 took the flagged sales out of the aggregates, not out
 * of the summaries made from them).
 */
export const WASH_SUMMARIES_MIGRATION = `${summariesTableSql(WASH_SUMMARIES)}
  WITH clean AS (${keepSql("true", WINDOWS_HOUR, CLEAN_SUMMARIES, false, false, 30)}) ${keepSql("true", WINDOWS_HOUR, WASH_SUMMARIES, false, false, 30)}`;

/** Migration 34's columns of the summaries (docs/money.md, "USD kept with the series"), kept again for every collection. */
export const USD_SUMMARIES_MIGRATION = `${[CLEAN_SUMMARIES, WASH_SUMMARIES].map((t) =>
  `ALTER TABLE ${t} ${["1d", "7d", "30d"].map((w) => `ADD COLUMN volume_usd_${w} numeric NOT NULL DEFAULT 0`).join(", ")};`).join("\n")}
  WITH clean AS (${keepSql("true", WINDOWS_HOUR, CLEAN_SUMMARIES, true, false, 34)}) ${keepSql("true", WINDOWS_HOUR, WASH_SUMMARIES, true, false, 34)}`;

/** The schema the summaries are kept in (their last migration): keepSql's default. */
const LATEST_SUMMARIES = 38;

/** Migration 38: the market cap (floor × tokens) and the all-time volume of each summary, their orders' indexes, in both tables, kept again for every collection. */
export const SUMMARY_ORDERS_MIGRATION = `${[CLEAN_SUMMARIES, WASH_SUMMARIES].map((t) => `
  ALTER TABLE ${t} ADD COLUMN market_cap numeric, ADD COLUMN market_cap_key text COLLATE "C" NOT NULL DEFAULT '${marketCapKey(undefined)}',
    ADD COLUMN volume_all numeric NOT NULL DEFAULT 0, ADD COLUMN volume_all_key text COLLATE "C" NOT NULL DEFAULT '${descendingKey("0")}';
  CREATE INDEX ${t}_by_market_cap ON ${t} (market_cap_key, address);
  CREATE INDEX ${t}_by_volume_all ON ${t} (volume_all_key, address);`).join("\n")}
  WITH clean AS (${keepSql("true", WINDOWS_HOUR)}) ${keepSql("true", WINDOWS_HOUR, WASH_SUMMARIES)}`;

/**
 * The transaction's moves of flagged sales, read by the summaries with wash
 * (keepSql's `byMoves`): a sale of the collection that became flagged (n = 1)
 * or clean (n = -1), or, with no time, a collection whose flagged sales are
 * to be summed again (a sale changed or taken back, its aggregates rebuilt).
 * Kept by the connection once made, emptied at each commit; a rollback takes
 * its rows with it.
 */
export const WASH_MOVES_TABLE = "CREATE TEMP TABLE IF NOT EXISTS wash_moves (collection_id integer NOT NULL, timestamp bigint, price numeric, n integer) ON COMMIT DELETE ROWS";

/** Records, in the caller's transaction, the collections whose flagged sales are summed again and the flagged sales moved (wash.ts). */
export async function recordWashMoves(client: pg.ClientBase, resummed: readonly number[], moves: readonly { c: number; timestamp: number; price: bigint; n: 1 | -1 }[]): Promise<void> {
  if (resummed.length === 0 && moves.length === 0) return;
  await client.query(WASH_MOVES_TABLE);
  await client.query(`INSERT INTO wash_moves SELECT * FROM unnest($1::integer[], $2::bigint[], $3::numeric[], $4::integer[])`, [
    [...resummed, ...moves.map((m) => m.c)],
    [...resummed.map(() => null), ...moves.map((m) => m.timestamp)],
    [...resummed.map(() => null), ...moves.map((m) => m.price.toString())],
    [...resummed.map(() => null), ...moves.map((m) => m.n)],
  ]);
}

/**
 * Keeps the summaries in `table` of the collections `which` selects (a
 * condition on collections c), with windows ending at hour `hour` (an SQL
 * expression): of the hours of clean sales, plus, for the summaries with
 * wash, the flagged sales themselves (the partial index sales_washed). With
 * `byMoves` (the windows at the hour the summaries were kept at), a
 * collection's flagged sales are what they added to its kept summaries (the
 * summary with wash less the clean one, each window's difference as a row
 * at its start), moved by the transaction's wash_moves: as SQLite's keeper,
 * two rows read where summing the 30 days' flagged sales cost a live feed's
 * commit 14 ms (15.5 against 1.2 ms: a collection with 19,000 of them, the
 * bench:ingest store).
 */
export function keepSql(which: string, hour: string, table: SummariesTable = CLEAN_SUMMARIES, usd = true, byMoves = false, schema = LATEST_SUMMARIES): string {
  // The floor leaves flagged tokens out from migration 37, the market cap and all-time volume are kept from 38 (the migrations before keep their own columns).
  const unflagged = schema >= 37;
  const marketCap = schema >= 38;
  const cap = "f.price * coalesce(h.tokens, 0)";
  const start = (days: number) => `(${hour} - ${days * 24 - 1}) * ${HOUR}`;
  const inWindow = (days: number) => `FILTER (WHERE s.bucket >= ${start(days)})`;
  // The clean sales' dollars in both tables (shared/collection-summaries.ts: the flagged ones' are added when read).
  const hours = `SELECT s.bucket, s.volume, s.num_sales, ${usd ? "s.volume_usd" : "0"} FROM sales_series s
      WHERE s.collection_id = c.id AND s.marketplace = '' AND s.span = ${HOUR} AND s.bucket >= ${start(30)}`;
  const summed = `SELECT x.timestamp, x.price, 1, 0 FROM sales x WHERE x.collection_id = c.id AND ${FLAGGED} AND x.timestamp >= ${start(30)}`;
  const resum = `(EXISTS (SELECT 1 FROM wash_moves r WHERE r.collection_id = c.id AND r.timestamp IS NULL)
      OR NOT EXISTS (SELECT 1 FROM ${WASH_SUMMARIES} o WHERE o.collection_id = c.id))`;
  const diff = (w: string) => [`(ow.volume_${w} - oc.volume_${w})`, `(ow.sales_${w} - oc.sales_${w})`];
  const [v1, n1] = diff("1d");
  const [v7, n7] = diff("7d");
  const [v30, n30] = diff("30d");
  const flagged = !byMoves ? summed : `${summed} AND ${resum}
    UNION ALL SELECT m.timestamp, m.n * m.price, m.n, 0 FROM wash_moves m WHERE m.collection_id = c.id AND m.timestamp >= ${start(30)} AND NOT ${resum}
    UNION ALL SELECT d.bucket, d.volume, d.num_sales, 0 FROM ${WASH_SUMMARIES} ow JOIN ${CLEAN_SUMMARIES} oc ON oc.collection_id = ow.collection_id
      CROSS JOIN LATERAL (VALUES (${start(1)}, ${v1}, ${n1}), (${start(7)}, ${v7} - ${v1}, ${n7} - ${n1}), (${start(30)}, ${v30} - ${v7}, ${n30} - ${n7}))
        d (bucket, volume, num_sales)
      WHERE ow.collection_id = c.id AND NOT ${resum}`;
  const dollars = usd ? ", w.u1, w.u7, w.u30" : "";
  // All time: each marketplace's running total of clean sales at the collection's last hour with sales (sales-stats.ts: a
  // seek of the key each), and with wash the flagged sales' part: kept, moved by the transaction's wash_moves (byMoves), or
  // summed again. (A sum of the series' days chose their hour index on a store without statistics: a scan per collection.)
  const days = `(SELECT coalesce(sum(x.cum_volume), 0) FROM marketplaces mk CROSS JOIN LATERAL (
      SELECT h.cum_volume FROM sales_hourly h WHERE h.collection_id = c.id AND h.marketplace = mk.name ORDER BY h.hour DESC LIMIT 1) x)`;
  const flaggedAll = `(SELECT coalesce(sum(x.price), 0) FROM sales x WHERE x.collection_id = c.id AND ${FLAGGED})`;
  const flaggedKept = `coalesce((SELECT ow.volume_all - oc.volume_all FROM ${WASH_SUMMARIES} ow JOIN ${CLEAN_SUMMARIES} oc ON oc.collection_id = ow.collection_id
      WHERE ow.collection_id = c.id), 0) + coalesce((SELECT sum(m.n * m.price) FROM wash_moves m WHERE m.collection_id = c.id AND m.timestamp IS NOT NULL), 0)`;
  const all = table === CLEAN_SUMMARIES ? days : `${days} + ${byMoves ? `CASE WHEN ${resum} THEN ${flaggedAll} ELSE ${flaggedKept} END` : flaggedAll}`;
  const capColumns = marketCap ? `, ${cap}, ${descendingKeyOf(`coalesce(${cap}, 0)`)}, a.v, ${descendingKeyOf("a.v")}` : "";
  return `
  INSERT INTO ${table}
  SELECT c.id, c.address, w.v1, w.v7, w.v30, w.n1, w.n7, w.n30,
    f.marketplace, f.marketplace_id, f.asset_id, f.price, f.created_at,
    ${descendingKeyOf("w.v1")}, ${descendingKeyOf("w.v7")},
    coalesce(lpad(length(f.price::text)::text, 2, '0') || f.price::text, '${NO_ASK}'), ${descendingKeyOf("w.n1")}${dollars}${capColumns}
  FROM collections c
  CROSS JOIN LATERAL (
    SELECT coalesce(sum(s.volume) ${inWindow(1)}, 0) AS v1, coalesce(sum(s.volume) ${inWindow(7)}, 0) AS v7, coalesce(sum(s.volume), 0) AS v30,
      coalesce(sum(s.num_sales) ${inWindow(1)}, 0) AS n1, coalesce(sum(s.num_sales) ${inWindow(7)}, 0) AS n7, coalesce(sum(s.num_sales), 0) AS n30,
      coalesce(sum(s.usd) ${inWindow(1)}, 0) AS u1, coalesce(sum(s.usd) ${inWindow(7)}, 0) AS u7, coalesce(sum(s.usd), 0) AS u30
    FROM (${table === WASH_SUMMARIES ? `${hours} UNION ALL ${flagged}` : hours}) s (bucket, volume, num_sales, usd)) w
  LEFT JOIN LATERAL (
    SELECT l.marketplace, l.marketplace_id, l.asset_id, l.price, l.created_at FROM listings l
    WHERE l.collection_id = c.id AND l.status = 'CREATED'${unflagged ? ` AND ${notFlagged("l")}` : ""} ORDER BY l.price, l.marketplace, l.marketplace_id COLLATE "C" LIMIT 1) f ON true${marketCap ? ` LEFT JOIN collection_holdings h ON h.collection_id = c.id CROSS JOIN LATERAL (SELECT ${all} AS v) a` : ""}
  WHERE ${which}
  ON CONFLICT (collection_id) DO UPDATE SET
    volume_1d = EXCLUDED.volume_1d, volume_7d = EXCLUDED.volume_7d, volume_30d = EXCLUDED.volume_30d,
    sales_1d = EXCLUDED.sales_1d, sales_7d = EXCLUDED.sales_7d, sales_30d = EXCLUDED.sales_30d,
    floor_marketplace = EXCLUDED.floor_marketplace, floor_marketplace_id = EXCLUDED.floor_marketplace_id,
    floor_asset_id = EXCLUDED.floor_asset_id, floor_price = EXCLUDED.floor_price, floor_created_at = EXCLUDED.floor_created_at,
    volume_1d_key = EXCLUDED.volume_1d_key, volume_7d_key = EXCLUDED.volume_7d_key,
    floor_key = EXCLUDED.floor_key, sales_1d_key = EXCLUDED.sales_1d_key${usd ? `,
    volume_usd_1d = EXCLUDED.volume_usd_1d, volume_usd_7d = EXCLUDED.volume_usd_7d, volume_usd_30d = EXCLUDED.volume_usd_30d` : ""}${marketCap ? `,
    market_cap = EXCLUDED.market_cap, market_cap_key = EXCLUDED.market_cap_key, volume_all = EXCLUDED.volume_all, volume_all_key = EXCLUDED.volume_all_key` : ""}`;
}

/** The hour the windows move to: the clock's. */
export const windowsHourNow = (now = Date.now() / 1000): number => hourOf(now);

/**
 * Inside a write transaction, after it stamped version `version` and moved
 * the windows to `hour` (data-versions.ts, `rolled` when they were behind):
 * keeps the summaries of the collections stamped with `version` and, when
 * the windows moved, every summary with sales in its 30-day window.
 * store_state's row, locked by the stamp until COMMIT, orders these writes
 * as it orders the stamps.
 */
export async function keepSummaries(client: pg.ClientBase, version: number, hour: number, rolled: boolean, stamped: boolean): Promise<void> {
  if (!stamped && !rolled) return;
  // The summaries with wash hold a collection whenever the clean ones do: theirs is the rolling set.
  const which = rolled
    ? `(c.data_version = ${Number(version)} OR c.id IN (SELECT collection_id FROM ${WASH_SUMMARIES} WHERE sales_30d > 0))`
    : `c.data_version = ${Number(version)}`;
  const at = `${Number(hour)}::bigint`;
  // Both tables in one statement, the clean keep as a data-modifying WITH (whose rows the other reads as they were: the
  // summaries kept before); with the moves' table made first, in the same round trip (the values are integers of ours).
  await client.query(`${WASH_MOVES_TABLE};
    WITH clean AS (${keepSql(which, at)}) ${keepSql(which, at, WASH_SUMMARIES, true, !rolled)}`);
}

export class PgCollectionList implements CollectionListRepository {
  constructor(private readonly q: PgQueries) {}

  async collectionsPage(filter: CollectionsListFilter, page: PageRequest): Promise<CollectionsPage> {
    const column = SORT_COLUMNS[filter.sort];
    const values: unknown[] = [];
    const $ = (v: unknown) => `$${values.push(v)}`;
    // The chain's rows as the sort's index walks (SQLite's collection-summaries.ts).
    const where: string[] = [`c.chain = ${$(filter.chain)}`];
    if (page.after) where.push(`(s.${column}, s.address) > (${$(page.after[0])}::text COLLATE "C", ${$(page.after[1])}::text COLLATE "C")`);
    if (!filter.includeSpam) where.push(notSpam("s"));
    if (filter.query !== undefined) {
      const q = $(filter.query);
      where.push(`(strpos(lower(c.name), ${q}) > 0 OR strpos(s.address, ${q}) > 0)`);
    }
    const limit = $(page.limit + 1);
    // The windows' hour in the page's snapshot (a statement's own); read alone for an empty page.
    const rows = await this.q.rows(
      `SELECT s.collection_id, s.address, s.volume_1d::text AS volume_1d, s.volume_7d::text AS volume_7d, s.volume_30d::text AS volume_30d,
         s.sales_1d, s.sales_7d, s.sales_30d, s.floor_marketplace, s.floor_marketplace_id, s.floor_asset_id::text AS floor_asset_id,
         s.floor_price::text AS floor_price, s.floor_created_at, s.market_cap::text AS market_cap, s.volume_all::text AS volume_all, s.${column}, c.name, ${metadataSql("c", "collections")}, ${SPAM_COLUMNS}, c.chain, c.token_standard, h.tokens, h.holders,
         s.volume_usd_1d::text AS volume_usd_1d, s.volume_usd_7d::text AS volume_usd_7d, s.volume_usd_30d::text AS volume_usd_30d,
         (SELECT windows_hour FROM store_state WHERE id = 1) AS windows_hour
       FROM ${filter.includeWash ? WASH_SUMMARIES : CLEAN_SUMMARIES} s JOIN collections c ON c.id = s.collection_id
       LEFT JOIN collection_holdings h ON h.collection_id = s.collection_id
       WHERE ${where.join(" AND ")}
       ORDER BY s.${column}, s.address LIMIT ${limit}`,
      values,
    );
    const hour = Number(rows[0]?.windows_hour ?? (await this.q.rows<{ h: string }>("SELECT windows_hour AS h FROM store_state WHERE id = 1", []))[0]?.h ?? 0);
    if (filter.includeWash && rows.length > 0) {
      // The flagged sales' dollars (the kept ones are the clean sales'): the page's only, one statement, a point seek each.
      const shown = rows.slice(0, page.limit);
      const flagged = await this.q.rows<{ c: number; t: string; price: string; currency: string; usd: string | null }>(
        `SELECT s.collection_id AS c, s.timestamp AS t, s.price::text AS price, s.currency, ${usdPointSql("s", "usd")} FROM sales s
         WHERE s.collection_id = ANY($1::integer[]) AND ${FLAGGED} AND s.timestamp >= $2`,
        [shown.map((r) => r.collection_id), windowStarts(hour).d30 * HOUR],
      );
      // Each collection's flagged sales, grouped once (not one pass over all of them per row).
      const byCollection = new Map<number, typeof flagged>();
      for (const x of flagged) {
        const of = byCollection.get(x.c);
        if (of === undefined) byCollection.set(x.c, [x]);
        else of.push(x);
      }
      for (const r of shown) {
        addFlaggedUsd(r, hour, (byCollection.get(Number(r.collection_id)) ?? []).map((x) => [Number(x.t), x.price, x.currency, x.usd] as const));
      }
    }
    return {
      windowsEnd: hour === 0 ? 0 : (hour + 1) * HOUR,
      page: toPage(rows, page.limit, (r) => toCollectionSummary(r, filter.sort), (r) => r.key),
    };
  }
}

