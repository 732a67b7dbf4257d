import type pg from "pg";
import { washFlagsOf } from "../../domain/wash.js";
import { RUN_MARGIN, type StoredWashSale, TOKEN_SEEKS_UP_TO, tokenReadSpan, tokenSalesOf, washChanges, type WashMarks, WashScope, wideReadSpan } from "../shared/wash-scope.js";

// Wash flags on PostgreSQL, as SQLite's (store/sqlite/wash.ts; what is read
// and why: shared/wash-scope.ts). A merge of sales (kind-writes.ts) marks,
// in the transaction's wash_marks table, every staged sale's time, the time
// each one it changes had, and each sale taken back (removed_sales); after
// the merge, evaluateWash reads the sales around the marks and writes the
// masks that changed, in one UPDATE per collection.

/** The transaction's marks (collection, asset, time), dropped at its end. */
export const WASH_MARKS_TABLE = "CREATE TEMP TABLE IF NOT EXISTS wash_marks (collection_id integer, asset_id numeric, timestamp bigint) ON COMMIT DROP";

/** The marks of a merge of `source` (rows with collection_id, asset_id, timestamp, hash): each row's time, and the time its key's sale has now. */
export function washMarksOf(source: string): string[] {
  return [
    WASH_MARKS_TABLE,
    `INSERT INTO wash_marks SELECT x.collection_id, x.asset_id, x.timestamp FROM (${source}) x
     UNION ALL SELECT s.collection_id, s.asset_id, s.timestamp FROM (${source}) x
       JOIN sales s ON s.hash = x.hash AND s.collection_id = x.collection_id AND s.asset_id = x.asset_id`,
  ];
}

/** The marks of sales taken back (reorgs.ts removed_sales). */
export const REMOVED_WASH_MARKS = [WASH_MARKS_TABLE, "INSERT INTO wash_marks SELECT collection_id, asset_id, timestamp FROM removed_sales"];

const COLUMNS = "encode(hash, 'hex') AS hash, asset_id::text AS \"assetId\", encode(seller, 'hex') AS seller, encode(buyer, 'hex') AS buyer, timestamp::float8 AS timestamp, block::float8 AS block, price::text AS price, wash_flags AS mask";

type Read = Omit<StoredWashSale<string>, "price" | "id"> & { price: string };
const asWashSale = (r: Read): StoredWashSale<string> => ({ ...r, id: `${r.hash}:${r.assetId}`, price: BigInt(r.price) });

/** Evaluates the rules around the transaction's marks and writes the masks that changed; the marks are emptied. */
export async function evaluateWash(client: pg.PoolClient): Promise<void> {
  const exists = await client.query("SELECT to_regclass('pg_temp.wash_marks') IS NOT NULL AS e");
  if (!exists.rows[0].e) return;
  const scope = new WashScope();
  const rows = (await client.query<{ c: number; a: string; t: string }>("DELETE FROM wash_marks RETURNING collection_id AS c, asset_id::text AS a, timestamp::text AS t")).rows;
  for (const r of rows) scope.mark(r.c, r.a, Number(r.t));
  for (const [c, m] of scope.take()) await evaluateCollection(client, c, m);
}

async function evaluateCollection(client: pg.PoolClient, c: number, m: WashMarks): Promise<void> {
  const bound = async (cmp: "<" | ">", t: number) =>
    (await client.query<{ t: string }>(`SELECT timestamp::text AS t FROM sales WHERE collection_id = $1 AND timestamp ${cmp} $2
      ORDER BY timestamp ${cmp === "<" ? "DESC" : "ASC"} LIMIT 1 OFFSET ${RUN_MARGIN - 1}`, [c, t])).rows[0]?.t;
  const lo = await bound("<", m.span.from);
  const hi = await bound(">", m.span.to);
  const runFrom = lo === undefined ? Number.MIN_SAFE_INTEGER : Number(lo);
  const runTo = hi === undefined ? Number.MAX_SAFE_INTEGER : Number(hi);
  const span = async (from: number, to: number) =>
    (await client.query<Read>(`SELECT ${COLUMNS} FROM sales WHERE collection_id = $1 AND timestamp >= $2 AND timestamp <= $3`, [c, from, to])).rows.map(asWashSale);
  let tokens = new Map<string, StoredWashSale<string>[]>();
  let run: StoredWashSale<string>[];
  if (m.tokens.size > TOKEN_SEEKS_UP_TO) {
    const wide = wideReadSpan(m, runFrom, runTo);
    const all = await span(wide.from, wide.to);
    run = all.filter((x) => x.timestamp >= runFrom && x.timestamp <= runTo);
    tokens = tokenSalesOf(m, all);
  } else {
    run = await span(runFrom, runTo);
    // Every marked token's sales in one statement: each token's own span.
    const ids = [...m.tokens.keys()];
    const reads = ids.map((a) => tokenReadSpan(m.tokens.get(a)!));
    const found = (await client.query<Read>(`SELECT ${COLUMNS} FROM sales s JOIN unnest($2::numeric[], $3::bigint[], $4::bigint[]) u(a, f, t)
        ON s.asset_id = u.a AND s.timestamp >= u.f AND s.timestamp <= u.t WHERE s.collection_id = $1`,
      [c, ids, reads.map((r) => r.from), reads.map((r) => r.to)])).rows.map(asWashSale);
    for (const a of ids) tokens.set(a, []);
    for (const x of found) tokens.get(x.assetId)!.push(x);
  }
  const changes = washChanges(m, { sales: run, complete: { first: lo === undefined, last: hi === undefined } }, tokens);
  if (changes.length === 0) return;
  await client.query(`UPDATE sales s SET wash_flags = u.m FROM unnest($2::text[], $3::numeric[], $4::int[]) u(h, a, m)
      WHERE s.collection_id = $1 AND s.hash = decode(u.h, 'hex') AND s.asset_id = u.a`,
    [c, changes.map(([id]) => id.split(":")[0]), changes.map(([id]) => id.split(":")[1]), changes.map(([, mask]) => mask)]);
}

/** Migration 29, as SQLite's 29: every sale's wash flags, and a removed sale's as it had them; the sales held evaluated a collection at a time. */
export async function washFlagsMigration(client: pg.PoolClient): Promise<void> {
  await client.query(`ALTER TABLE sales ADD COLUMN wash_flags integer NOT NULL DEFAULT 0;
    ALTER TABLE sale_removals ADD COLUMN wash_flags integer NOT NULL DEFAULT 0`);
  const collections = (await client.query<{ c: number }>("SELECT DISTINCT collection_id AS c FROM sales")).rows;
  for (const { c } of collections) {
    const sales = (await client.query<Read>(`SELECT ${COLUMNS} FROM sales WHERE collection_id = $1`, [c])).rows.map(asWashSale);
    const flagged = [...washFlagsOf(sales)].filter(([, mask]) => mask !== 0);
    if (flagged.length === 0) continue;
    await client.query(`UPDATE sales s SET wash_flags = u.m FROM unnest($2::text[], $3::numeric[], $4::int[]) u(h, a, m)
        WHERE s.collection_id = $1 AND s.hash = decode(u.h, 'hex') AND s.asset_id = u.a`,
      [c, flagged.map(([id]) => id.split(":")[0]), flagged.map(([id]) => id.split(":")[1]), flagged.map(([, mask]) => mask)]);
  }
}
