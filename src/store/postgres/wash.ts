import type pg from "pg";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { recordWashMoves } from "./collection-summaries.js";
import { APPLY_HOUR_DELTAS, freshHourlySql, HOUR_DELTAS_TABLE } from "./sales-stats.js";
import { APPLY_SERIES_MARKS, applySeriesMarks, freshSeriesSql, SERIES_MARKS_TABLE } from "./sales-series.js";
import { OTHER_UNIT_SYMBOLS } from "../../domain/currencies.js";
import {
  insertedOnly, movesFlaggedInWei, newSalesAlone, PRICED_IN_WEI, RUN_MARGIN, type StoredWashSale, readsWide, tokenReadSpan, tokenSalesOf, washChanges, type WashMarks, WashScope, wideReadSpan,
  windowBefore,
} from "../shared/wash-scope.js";

// Wash flags on PostgreSQL, as SQLite's (store/sqlite/wash.ts; what is read
// and why: shared/wash-scope.ts). A merge of sales (kind-writes.ts) marks,
// in the transaction's wash_marks table, every staged sale's time, the time
// each one it changes had, and each sale taken back (removed_sales); after
// the merge, evaluateWash reads the sales around the marks and writes the
// masks that changed, in one UPDATE per collection.

/** The transaction's marks (collection, asset, time, and a sale new to the store's hash), dropped at its end. */
export const WASH_MARKS_TABLE = "CREATE TEMP TABLE IF NOT EXISTS wash_marks (collection_id integer, asset_id numeric, timestamp bigint, new_hash bytea) ON COMMIT DROP";

/**
 * The marks of a merge of `source` (rows with the sale's key and values):
 * each row new or changed in what the rules read, at its time and at the
 * time its key's sale has now. A line sent again unchanged marks nothing.
 */
export function washMarksOf(source: string): string[] {
  return [
    WASH_MARKS_TABLE,
    `WITH o AS (SELECT x.collection_id, x.asset_id, x.timestamp, x.hash, s.timestamp AS old_t FROM (${source}) x
       LEFT JOIN sales s ON s.hash = x.hash AND s.collection_id = x.collection_id AND s.asset_id = x.asset_id
       WHERE s.hash IS NULL OR (s.seller, s.buyer, s.timestamp, s.block, s.price) IS DISTINCT FROM (x.seller, x.buyer, x.timestamp, x.block, x.price))
     INSERT INTO wash_marks SELECT collection_id, asset_id, timestamp, CASE WHEN old_t IS NULL THEN hash END FROM o
     UNION ALL SELECT collection_id, asset_id, old_t, NULL FROM o WHERE old_t IS NOT NULL`,
  ];
}

/** The marks of sales taken back (reorgs.ts removed_sales). */
export const REMOVED_WASH_MARKS = [WASH_MARKS_TABLE, "INSERT INTO wash_marks SELECT collection_id, asset_id, timestamp, NULL FROM removed_sales"];

// In the rules' order, the sales list's index (sales_by_time) read backwards:
// no sort, here or in shared/wash-scope.ts washChanges.
export const washColumns = (currency = "s.currency") => `encode(s.hash, 'hex'), s.asset_id::text, encode(s.seller, 'hex'), encode(s.buyer, 'hex'),
  s.timestamp::float8, s.block::float8, s.price::text, s.wash_flags, s.marketplace, ${currency}`;
export const WASH_COLUMNS = washColumns();
// By the stored columns (alias s), not the answer's: ordered by the hex text and the doubles, every read was sorted,
// on disk past work_mem (bench:ingest: a live commit's tokens, 160,000 sales, 1.5 s).
export const WASH_ORDER = "ORDER BY s.timestamp, s.block, s.hash DESC, s.asset_id DESC";
/** Each token's sales in WASH_ORDER, the tokens one after another (washChanges takes each token's list alone). */
const TOKEN_ORDER = "ORDER BY s.asset_id, s.timestamp, s.block, s.hash DESC";

/** A row of WASH_COLUMNS, read as an array (a live commit's run is thousands of rows: no object per row made and spread again). */
export type WashRead = [string, string, string, string, number, number, string, number, string, string];
export const asWashSale = (r: WashRead): StoredWashSale<string> => ({
  id: `${r[0]}:${r[1]}`, hash: r[0], assetId: r[1], seller: r[2], buyer: r[3], timestamp: r[4], block: r[5], price: BigInt(r[6]), mask: r[7], marketplace: r[8],
  otherUnit: OTHER_UNIT_SYMBOLS.has(r[9]),
});

/** A wash read (WASH_COLUMNS) of `text`, as sales. */
export async function washSales(client: pg.PoolClient, text: string, values: unknown[]): Promise<StoredWashSale<string>[]> {
  return (await client.query<WashRead>({ text, values, rowMode: "array" })).rows.map(asWashSale);
}

/**
 * Evaluates the rules around the transaction's marks and writes the masks
 * that changed; the marks are emptied. A sale flagged or cleared moves out
 * of or into the aggregates (they hold clean sales): its hour's delta and
 * its intervals' marks are applied as a merge's are.
 */
export async function evaluateWash(client: pg.PoolClient): Promise<void> {
  const flips = await evaluated(client);
  if (flips.length > 0) await moveAggregates(client, flips);
}

/**
 * A merge of sales' last step: the rules evaluated before its hour deltas and
 * interval marks are applied (salesSpec leaves them pending), so that a sale
 * it added and a rule flags is simply not added (its mark dropped, its delta
 * taken back), rather than added and then found again; the other flips join
 * the pending deltas and marks, applied once.
 */
export async function evaluateWashThenApply(client: pg.PoolClient): Promise<void> {
  const flips = await evaluated(client, true);
  if (flips.length > 0) {
    await addFlips(client, flips, (f) => !f.fresh);
    // One row per hour again (a flip's delta may share one with the merge's).
    await client.query(`WITH d AS (DELETE FROM hour_deltas RETURNING *)
      INSERT INTO hour_deltas SELECT c, m, h, sum(n), sum(v) FROM d GROUP BY c, m, h HAVING sum(n) <> 0 OR sum(v) <> 0`);
  }
  await client.query(["ANALYZE hour_deltas", ...APPLY_HOUR_DELTAS, ...APPLY_SERIES_MARKS].join(";\n"));
}

/**
 * The masks evaluated around the transaction's marks and written; the flips,
 * but for those of collections rebuilt whole (after a merge, `merged`, its
 * added sales flagged are told fresh: markFresh). The kinds that call it made
 * wash_marks in their statements (washMarksOf, REMOVED_WASH_MARKS).
 */
async function evaluated(client: pg.PoolClient, merged = false): Promise<Flip[]> {
  const scope = new WashScope();
  const rows = (await client.query<{ c: number; a: string; t: string; h: string | null }>(
    "DELETE FROM wash_marks RETURNING collection_id AS c, asset_id::text AS a, timestamp::text AS t, encode(new_hash, 'hex') AS h",
  )).rows;
  // The sales new to the store, by the id a read gives them (asWashSale).
  const inserted = new Set<string>();
  for (const r of rows) {
    scope.mark(r.c, r.a, Number(r.t), r.h !== null);
    if (r.h !== null) inserted.add(`${r.h}:${r.a}`);
  }
  const flips: Flip[] = [];
  // The summaries with wash sum again the flagged sales of a collection with a sale changed or taken back, or rebuilt;
  // the others' move by the flips (collection-summaries.ts keepSql).
  const resummed = new Set(scope.changedCollections());
  for (const [c, m] of scope.take()) {
    const own: Flip[] = [];
    await evaluateCollection(client, c, m, own, inserted);
    if (merged) await markFresh(client, own);
    // Many flips for the collection's size (a backfill's): its aggregates summed afresh in two set-based statements,
    // rather than each flip's hour and intervals found again (22 s for 19,000 flips of 100,000 sales, against under
    // one). A rebuild costs the collection's sales: a live feed's flips, a few hundred a commit into a large
    // collection, move by their deltas (bench:ingest: 4.6 s a commit rebuilding 100,000 sales).
    // A sale the merge added and a rule flags is no move (its mark is dropped): a live feed's commit of 30,000 sales, a fifth
    // of them flagged as they came, rebuilt its collection (bench:ingest, 10 s).
    const moves = own.filter((f) => !f.fresh).length;
    if (moves > REBUILD_FLIPS && moves * REBUILD_SHARE > (await keptSales(client, c))) {
      await rebuildAggregates(client, c);
      resummed.add(c);
    } else {
      // One by one: a bulk import's flips can be hundreds of thousands, past the arguments a spread takes (a RangeError:
      // bench:analytics' 1M-sale import into PostgreSQL).
      for (const f of own) flips.push(f);
    }
  }
  const moved = flips.filter((f) => !resummed.has(f.c) && movesFlaggedInWei(f.sale.mask, f.mask));
  await recordWashMoves(client, [...resummed], moved.map((f) => ({ c: f.c, timestamp: f.sale.timestamp, price: f.sale.price, n: f.sign === -1 ? 1 : -1 })));
  return flips;
}

/** The flagged flips of sales this merge added, told `fresh`: their pending "added" series marks go, so that they are never added. */
async function markFresh(client: pg.PoolClient, flips: Flip[]): Promise<void> {
  const flagged = flips.filter((f) => f.sign === -1);
  if (flagged.length === 0) return;
  const added = new Set((await client.query<{ id: string }>(
    `DELETE FROM series_marks k USING unnest($1::int[], $2::text[], $3::numeric[]) u(c, h, a)
     WHERE k.added AND k.collection_id = u.c AND k.hash = decode(u.h, 'hex') AND k.asset_id = u.a
     RETURNING encode(k.hash, 'hex') || ':' || k.asset_id::text AS id`,
    [flagged.map((f) => f.c), flagged.map((f) => f.sale.hash), flagged.map((f) => f.sale.assetId)],
  )).rows.map((r) => r.id));
  for (const f of flagged) if (added.has(f.sale.id)) f.fresh = true;
}

/** Past this many flips in one transaction, and a 1/REBUILD_SHARE of the collection's kept sales, its aggregates are rebuilt rather than moved (bench:import). */
const REBUILD_FLIPS = 500;
const REBUILD_SHARE = 20;

/** The clean sales the collection's aggregates hold: each marketplace's latest running count, a seek each. */
async function keptSales(client: pg.PoolClient, c: number): Promise<number> {
  const r = await client.query<{ n: string }>(`SELECT coalesce(sum(h.cum_num_sales), 0)::text AS n FROM marketplaces mk
    CROSS JOIN LATERAL (SELECT cum_num_sales FROM sales_hourly WHERE collection_id = $1 AND marketplace = mk.name ORDER BY hour DESC LIMIT 1) h`, [c]);
  return Number(r.rows[0]!.n);
}

/** A collection's hour rows and series summed afresh from its clean sales (as stats rebuild does). */
async function rebuildAggregates(client: pg.PoolClient, c: number): Promise<void> {
  const scope = `collection_id = ${Number(c)}`;
  // A merge's pending deltas and marks of it are in what is summed.
  await client.query(`${HOUR_DELTAS_TABLE}; ${SERIES_MARKS_TABLE}; DELETE FROM hour_deltas WHERE c = ${Number(c)}; DELETE FROM series_marks WHERE ${scope}`);
  await client.query(`DELETE FROM sales_hourly WHERE ${scope};
    INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume) ${freshHourlySql(`${scope} AND wash_flags = 0`)};
    DELETE FROM sales_series WHERE ${scope};
    INSERT INTO sales_series ${freshSeriesSql(`${scope} AND wash_flags = 0`)}`);
}

/** A sale that became flagged (-1: out of the aggregates) or clean (+1: in). */
export interface Flip {
  c: number;
  sale: StoredWashSale<string>;
  sign: 1 | -1;
  /** Its new mask. */
  mask: number;
  /** Flagged, and added by this transaction's merge: its hour's delta taken back, its series never given it. */
  fresh?: boolean;
}

async function evaluateCollection(client: pg.PoolClient, c: number, m: WashMarks, flips: Flip[], inserted: ReadonlySet<string>): Promise<void> {
  const bound = async (cmp: "<" | ">", t: number) =>
    // Sales in wei, by their currency (a sale changed into another unit is not yet marked): the outlier rule's neighbours.
    (await client.query<{ t: string }>(`SELECT timestamp::text AS t FROM sales WHERE collection_id = $1 AND timestamp ${cmp} $2 AND ${PRICED_IN_WEI}
      ORDER BY timestamp ${cmp === "<" ? "DESC" : "ASC"} LIMIT 1 OFFSET ${RUN_MARGIN - 1}`, [c, t])).rows[0]?.t;
  const lo = await bound("<", m.span.from);
  const hi = await bound(">", m.span.to);
  const runFrom = lo === undefined ? Number.MIN_SAFE_INTEGER : Number(lo);
  const runTo = hi === undefined ? Number.MAX_SAFE_INTEGER : Number(hi);
  const span = async (from: number, to: number) =>
    await washSales(client, `SELECT ${WASH_COLUMNS} FROM sales s WHERE s.collection_id = $1 AND s.timestamp >= $2 AND s.timestamp <= $3 ${WASH_ORDER}`, [c, from, to]);
  let tokens = new Map<string, StoredWashSale<string>[]>();
  let run: StoredWashSale<string>[];
  if (readsWide(m)) {
    const wide = wideReadSpan(m, runFrom, runTo);
    const all = await span(wide.from, wide.to);
    run = all.filter((x) => x.timestamp >= runFrom && x.timestamp <= runTo);
    tokens = tokenSalesOf(m, all);
  } else {
    run = await span(runFrom, runTo);
    // A live feed's tokens whose marks are all new sales: two questions of the index for all of them, rather than their
    // months of sales read (shared/wash-scope.ts newSalesAlone).
    for (const [assetId, sales] of await newAlone(client, c, insertedOnly(m, run, (x) => inserted.has(x.id)))) tokens.set(assetId, sales);
    // Every other marked token's sales in one statement: each token's own span.
    const ids = [...m.tokens.keys()].filter((a) => !tokens.has(a));
    const reads = ids.map((a) => tokenReadSpan(m.tokens.get(a)!));
    const found = await washSales(client, `SELECT ${WASH_COLUMNS} FROM sales s JOIN unnest($2::numeric[], $3::bigint[], $4::bigint[]) u(a, f, t)
        ON s.asset_id = u.a AND s.timestamp >= u.f AND s.timestamp <= u.t WHERE s.collection_id = $1 ${TOKEN_ORDER}`,
      [c, ids, reads.map((r) => r.from), reads.map((r) => r.to)]);
    for (const a of ids) tokens.set(a, []);
    for (const x of found) tokens.get(x.assetId)!.push(x);
  }
  const changes = washChanges(m, { sales: run, complete: { first: lo === undefined, last: hi === undefined } }, tokens);
  await setMasks(client, c, changes.map(([sale, mask]) => [sale, mask]));
  for (const [sale, mask] of changes) if ((sale.mask === 0) !== (mask === 0)) flips.push({ c, sale, sign: mask === 0 ? 1 : -1, mask });
}

/** What newSalesAlone asks, for every token at once (exported for the query-plan test): each token's sales from a time on, and the new sales whose window before them holds one their buyer sold. */
export const ALONE_SQL = {
  heldFrom: `SELECT u.a::text AS a, (SELECT count(*) FROM sales s WHERE s.collection_id = $1 AND s.asset_id = u.a AND s.timestamp >= u.f)::int AS n
    FROM unnest($2::numeric[], $3::bigint[]) u(a, f)`,
  soldBy: `SELECT u.h || ':' || u.a::text AS id FROM unnest($2::numeric[], $3::bigint[], $4::bigint[], $5::text[], $6::text[]) u(a, f, t, b, h)
    WHERE EXISTS (SELECT 1 FROM sales s WHERE s.collection_id = $1 AND s.asset_id = u.a AND s.timestamp >= u.f AND s.timestamp <= u.t
      AND s.seller = decode(u.b, 'hex') AND s.hash <> decode(u.h, 'hex'))`,
} as const;

/** The tokens of `found` (insertedOnly) whose new sales are alone (newSalesAlone), with those sales. */
async function newAlone(client: pg.PoolClient, c: number, found: Map<string, StoredWashSale<string>[]>): Promise<Map<string, StoredWashSale<string>[]>> {
  if (found.size === 0) return found;
  const tokens = [...found];
  const held = new Map((await client.query<{ a: string; n: number }>(ALONE_SQL.heldFrom,
    [c, tokens.map(([a]) => a), tokens.map(([, sales]) => sales[0]!.timestamp)])).rows.map((r) => [r.a, r.n]));
  const sales = tokens.flatMap(([, list]) => list);
  const windows = sales.map(windowBefore);
  const sold = new Set((await client.query<{ id: string }>(ALONE_SQL.soldBy,
    [c, sales.map((x) => x.assetId), windows.map((w) => w.from), windows.map((w) => w.to), sales.map((x) => x.buyer), sales.map((x) => x.hash)])).rows.map((r) => r.id));
  return new Map(tokens.filter(([a, list]) => newSalesAlone(list, () => held.get(a) ?? 0, (x) => sold.has(x.id))));
}

/** Writes each sale's new mask: one statement. */
export async function setMasks(client: pg.PoolClient, c: number, masks: [StoredWashSale<string>, number][]): Promise<void> {
  if (masks.length === 0) return;
  await client.query(`UPDATE sales s SET wash_flags = u.m FROM unnest($2::text[], $3::numeric[], $4::int[]) u(h, a, m)
      WHERE s.collection_id = $1 AND s.hash = decode(u.h, 'hex') AND s.asset_id = u.a`,
    [c, masks.map(([s]) => s.hash), masks.map(([s]) => s.assetId), masks.map(([, mask]) => mask)]);
}

/**
 * The flips' hour deltas and interval marks, applied: the merge's own were
 * applied already, so the transaction's tables are emptied first.
 */
export async function moveAggregates(client: pg.PoolClient, flips: Flip[], usd = true): Promise<void> {
  await client.query(`${HOUR_DELTAS_TABLE}; ${SERIES_MARKS_TABLE}; DELETE FROM hour_deltas; DELETE FROM series_marks; DROP TABLE IF EXISTS series_redo`);
  await addFlips(client, flips, () => true);
  await client.query(["ANALYZE hour_deltas", ...APPLY_HOUR_DELTAS, ...applySeriesMarks(usd)].join(";\n"));
}

/**
 * The flips' hour deltas (one row per hour), and the series marks of those
 * `moves` names: a sale flagged leaves its intervals, by its delta where it is
 * none of their edges (sales-series.ts APPLY_SERIES_MARKS); one cleared enters
 * them as a new sale does. Summing its intervals again instead cost a live
 * feed the day's sales per commit (bench:ingest).
 */
async function addFlips(client: pg.PoolClient, flips: Flip[], moves: (f: Flip) => boolean): Promise<void> {
  const column = <T>(list: Flip[], f: (x: Flip) => T) => list.map(f);
  await client.query(
    `INSERT INTO hour_deltas SELECT c, m, t / ${BUCKET_SECONDS}, sum(n), sum(v)
     FROM unnest($1::int[], $2::text[], $3::bigint[], $4::int[], $5::numeric[]) u(c, m, t, n, v) GROUP BY 1, 2, 3`,
    [column(flips, (x) => x.c), column(flips, (x) => x.sale.marketplace), column(flips, (x) => x.sale.timestamp), column(flips, (x) => x.sign),
      column(flips, (x) => (x.sign === 1 ? x.sale.price : -x.sale.price).toString())],
  );
  const marked = flips.filter(moves);
  await client.query(
    `INSERT INTO series_marks SELECT c, m, t, b, decode(h, 'hex'), a, p, sign = 1, sign = -1
     FROM unnest($1::int[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::numeric[], $7::numeric[], $8::int[]) u(c, m, t, b, h, a, p, sign)`,
    [column(marked, (x) => x.c), column(marked, (x) => x.sale.marketplace), column(marked, (x) => x.sale.timestamp), column(marked, (x) => x.sale.block),
      column(marked, (x) => x.sale.hash), column(marked, (x) => x.sale.assetId), column(marked, (x) => x.sale.price.toString()), column(marked, (x) => x.sign)],
  );
}
