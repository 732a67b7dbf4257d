import type pg from "pg";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { finalizedRemoval } from "../shared/conflicts.js";
import { BATCH_LINES } from "./record-writes.js";
import { SERIES_MARKS_TABLE } from "./sales-series.js";
import { HOUR_DELTAS_TABLE } from "./sales-stats.js";

// Reorganisations on PostgreSQL, as SQLite's reorgs.ts (docs/chains.md): a
// sale or transfer taken back is deleted, set-based, with the stage line
// that took it back; what it counted in is found again from the records
// left, as if it had never come: its hours by negative deltas and its
// series' intervals recomputed (the merge's APPLY_HOUR_DELTAS and
// APPLY_SERIES_MARKS), its token's owner and listings by the merge's moves
// of the tokens it names. A removal by blocks finds its rows by block
// (migration 22's indexes): its cost is that of the blocks taken back.

/** Migration 22. */
export const REORGS_MIGRATION = `
  CREATE INDEX sales_by_block ON sales (block);
  CREATE INDEX transfers_by_block ON transfers (block);
  CREATE TABLE reorgs (
    chain text NOT NULL,
    from_block bigint NOT NULL,
    block_hashes text NOT NULL,
    at bigint NOT NULL DEFAULT extract(epoch FROM now())::bigint,
    PRIMARY KEY (chain, from_block)
  );
`;

/** The temporary tables of a transaction's removals (exported for the query-plan test). */
export const REMOVED_TABLES = [
  HOUR_DELTAS_TABLE,
  SERIES_MARKS_TABLE,
  "CREATE TEMP TABLE IF NOT EXISTS removed_sales (line bigint, collection_id integer, asset_id numeric, marketplace text, timestamp bigint, price numeric) ON COMMIT DROP",
  "CREATE TEMP TABLE IF NOT EXISTS removed_transfers (line bigint, collection_id integer, asset_id numeric) ON COMMIT DROP",
];

/** What a removal of sales marks: their hours (negative deltas) and series' intervals, found again by the merge's APPLY_* statements. */
export const SALES_REMOVED_MARKS = [
  `INSERT INTO hour_deltas SELECT collection_id, marketplace, timestamp / ${BUCKET_SECONDS}, -count(*), -sum(price) FROM removed_sales GROUP BY 1, 2, 3`,
  "INSERT INTO series_marks SELECT collection_id, marketplace, timestamp, NULL, NULL, NULL, NULL, false FROM removed_sales",
];

/**
 * Deletes the sales `keys` selects (line, hash, collection_id, asset_id: a
 * stage line and the natural key it takes back), keeping what they were in
 * removed_sales, and marks their hours and series to be found again.
 */
export function salesRemoved(keys: string): string[] {
  return [
    ...REMOVED_TABLES,
    `WITH d AS (
       DELETE FROM sales s USING (${keys}) k WHERE s.hash = k.hash AND s.collection_id = k.collection_id AND s.asset_id = k.asset_id
       RETURNING k.line, s.collection_id, s.asset_id, s.marketplace, s.timestamp, s.price)
     INSERT INTO removed_sales SELECT * FROM d`,
    ...SALES_REMOVED_MARKS,
  ];
}

/** Deletes the transfers `keys` selects (line, hash, log_index, collection_id, asset_id), keeping them in removed_transfers. */
export function transfersRemoved(keys: string): string[] {
  return [
    ...REMOVED_TABLES,
    `WITH d AS (
       DELETE FROM transfers t USING (${keys}) k
       WHERE t.hash = k.hash AND t.log_index = k.log_index AND t.collection_id = k.collection_id AND t.asset_id = k.asset_id
       RETURNING k.line, t.collection_id, t.asset_id)
     INSERT INTO removed_transfers SELECT * FROM d`,
  ];
}

/**
 * The deletion of `table`'s rows in one reorganisation's blocks, its values
 * bound ($1 the first block, $2 the chain, $3 the hashes as a JSON array,
 * [] for every block): a range of the table's block index, each row's chain
 * by its collection's key (never a list of the chain's collections). Run
 * once per staged reorganisation with its values (removeStagedBlocks), so
 * that the planner sees the block: a bound taken from the stage is no value
 * it knows, and with its general guess of a third of the table it scanned
 * the table whole. Exported for the query-plan test.
 */
export function removedByBlocks(table: "sales" | "transfers"): string {
  const kept = table === "sales" ? "removed_sales" : "removed_transfers";
  const columns = table === "sales" ? "r.collection_id, r.asset_id, r.marketplace, r.timestamp, r.price" : "r.collection_id, r.asset_id";
  return `WITH d AS (
      DELETE FROM ${table} r WHERE r.block >= $1
        AND (SELECT c.chain FROM collections c WHERE c.id = r.collection_id) = $2
        AND ($3 = '[]' OR '0x' || encode(r.block_hash, 'hex') IN (SELECT jsonb_array_elements_text($3::jsonb)))
      RETURNING 0::bigint, ${columns})
    INSERT INTO ${kept} SELECT * FROM d`;
}

/** Takes back the sales and transfers of every staged reorganisation's blocks (the reorgs kind's first step), keeping them in removed_*. */
export async function removeStagedBlocks(client: pg.PoolClient): Promise<void> {
  await client.query(REMOVED_TABLES.join(";\n"));
  const staged = await client.query<{ chain: string; from_block: string; block_hashes: string }>("SELECT chain, from_block, block_hashes FROM stage ORDER BY line");
  for (const r of staged.rows) {
    for (const table of ["sales", "transfers"] as const) await client.query(removedByBlocks(table), [r.from_block, r.chain, r.block_hashes]);
  }
}

/** The rows each batch of a shared stage took back (importer.ts adds them to its updated). */
export const removedPerBatch = (table: "removed_sales" | "removed_transfers") =>
  `SELECT (line / ${BATCH_LINES})::int AS batch, count(*)::int AS removed FROM ${table} GROUP BY 1`;

/** The tokens and collections of the rows taken back. */
export const REMOVED_TOKENS = "SELECT collection_id, asset_id FROM removed_sales UNION SELECT collection_id, asset_id FROM removed_transfers";
export const REMOVED_COLLECTIONS = "SELECT collection_id FROM removed_sales UNION SELECT collection_id FROM removed_transfers";

/** Migration 23: each chain's finalized block, as SQLite's 23. */
export const FINALITY_MIGRATION = "CREATE TABLE finality (chain text PRIMARY KEY, block bigint NOT NULL)";

/**
 * Refuses a stage that takes back a record (or, `reorg`, blocks) at or below
 * its chain's finalized block (docs/chains.md, "Finality"), before anything
 * is merged: the first such line, worded as SQLite words it.
 */
export const refuseFinal = (what: "sale" | "transfer" | "reorg") => async (client: pg.PoolClient): Promise<void> => {
  const block = what === "reorg" ? "st.from_block" : "st.block";
  const r = await client.query<{ chain: string; block: string; finalized: string; hash: string | null; log_index: string | null; asset_id: string | null }>(
    `SELECT st.chain, ${block} AS block, f.block AS finalized,
       ${what === "reorg" ? "NULL AS hash, NULL AS log_index, NULL AS asset_id" : `st.hash, ${what === "transfer" ? "st.log_index" : "NULL AS log_index"}, st.asset_id::text AS asset_id`}
     FROM stage st JOIN finality f ON f.chain = st.chain
     WHERE ${what === "reorg" ? "" : "st.removed AND "}${block} <= f.block ORDER BY st.line LIMIT 1`,
  );
  const x = r.rows[0];
  if (x === undefined) return;
  const named = what === "reorg" ? `the reorganisation from block ${x.block}` : what === "sale" ? `sale ${x.hash} of token ${x.asset_id}` : `transfer ${x.hash} (log ${x.log_index}) of token ${x.asset_id}`;
  throw finalizedRemoval(x.chain, Number(x.block), Number(x.finalized), named);
};
