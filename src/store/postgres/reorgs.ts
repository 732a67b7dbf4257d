import type pg from "pg";
import { BUCKET_SECONDS } from "../shared/sales-buckets.js";
import { finalizedRemoval } from "../shared/conflicts.js";
import { BATCH_LINES } from "./record-writes.js";
import { REMOVAL_TABLES } from "../shared/removals.js";
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

/**
 * Migration 24, as SQLite's: the records taken back, each at its removal's
 * feed position (feed_seq, taken under the lock its kind's positions are:
 * sales' WRITE_LOCK, transfers' TOKENS_LOCK) with the position it had, so
 * that the live feeds send it (docs/chains.md, "Removals in the feeds").
 */
export const REMOVALS_MIGRATION = `
  CREATE TABLE sale_removals (
    feed_seq bigint PRIMARY KEY,
    original_seq bigint NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    hash bytea NOT NULL,
    seller bytea NOT NULL,
    buyer bytea NOT NULL,
    timestamp bigint NOT NULL,
    block bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    amount_received numeric(78,0) NOT NULL,
    marketplace text NOT NULL,
    block_hash bytea
  );
  CREATE INDEX sale_removals_by_feed ON sale_removals (collection_id, feed_seq);
  CREATE TABLE transfer_removals (
    feed_seq bigint PRIMARY KEY,
    original_seq bigint NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    hash bytea NOT NULL,
    log_index bigint NOT NULL,
    sender bytea NOT NULL,
    recipient bytea NOT NULL,
    timestamp bigint NOT NULL,
    block bigint NOT NULL,
    block_hash bytea
  );
  CREATE INDEX transfer_removals_by_feed ON transfer_removals (collection_id, feed_seq);
`;

/** Migration 25, as SQLite's: the records taken back by time, as the activity list reads them (includeRemoved; removals.ts). */
export const REMOVALS_BY_TIME_MIGRATION = `
  CREATE INDEX sale_removals_by_time ON sale_removals (collection_id, timestamp DESC, block DESC, feed_seq DESC);
  CREATE INDEX transfer_removals_by_time ON transfer_removals (collection_id, timestamp DESC, block DESC, feed_seq DESC);
`;

/** What a removal keeps of each table's rows (REMOVALS_MIGRATION's columns after the positions). */
const KEPT = {
  sales: ["collection_id", "asset_id", "hash", "seller", "buyer", "timestamp", "block", "price", "amount_received", "marketplace", "block_hash", "wash_flags", "currency", "marketplace_fee", "royalty_fee", "quantity"],
  transfers: ["collection_id", "asset_id", "hash", "log_index", "sender", "recipient", "timestamp", "block", "block_hash", "amount"],
};

/**
 * A deletion of `table`'s rows (`deletion`: DELETE … RETURNING line, then
 * the columns `columns` names, as `r.`), kept twice: in the removal table
 * at new feed positions, in stage order, and in the transaction's
 * removed_* table the merge's recomputations read.
 */
function removedRows(table: "sales" | "transfers", deletion: string, columns: readonly string[]): string {
  const removals = REMOVAL_TABLES[table];
  const temp = table === "sales" ? "removed_sales" : "removed_transfers";
  const kept = KEPT[table];
  return `WITH d AS (${deletion}, ${[...new Set([...kept, ...columns, "feed_seq"])].map((c) => `r.${c}`).join(", ")}),
      kept AS (INSERT INTO ${removals} (feed_seq, original_seq, ${kept.join(", ")})
        SELECT nextval('feed_seq'), o.feed_seq, ${kept.map((c) => `o.${c}`).join(", ")} FROM (SELECT * FROM d ORDER BY line, feed_seq) o)
    INSERT INTO ${temp} SELECT line, ${columns.join(", ")} FROM d`;
}

/** The temporary tables of a transaction's removals (exported for the query-plan test). */
export const REMOVED_TABLES = [
  HOUR_DELTAS_TABLE,
  SERIES_MARKS_TABLE,
  "CREATE TEMP TABLE IF NOT EXISTS removed_sales (line bigint, collection_id integer, asset_id numeric, marketplace text, timestamp bigint, price numeric, wash_flags integer) ON COMMIT DROP",
  "CREATE TEMP TABLE IF NOT EXISTS removed_transfers (line bigint, collection_id integer, asset_id numeric) ON COMMIT DROP",
];

/** The columns of removed_sales and removed_transfers after the line. */
const REMOVED_COLUMNS = { sales: ["collection_id", "asset_id", "marketplace", "timestamp", "price", "wash_flags"], transfers: ["collection_id", "asset_id"] };

/** What a removal of sales marks: their hours (negative deltas) and series' intervals, found again by the merge's APPLY_* statements. */
export const SALES_REMOVED_MARKS = [
  // The hours hold clean sales only (docs/wash-trades.md): a flagged one taken back was never in them.
  `INSERT INTO hour_deltas SELECT collection_id, marketplace, timestamp / ${BUCKET_SECONDS}, -count(*), -sum(price) FROM removed_sales WHERE wash_flags = 0 GROUP BY 1, 2, 3`,
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
    removedRows("sales", `DELETE FROM sales r USING (${keys}) k WHERE r.hash = k.hash AND r.collection_id = k.collection_id AND r.asset_id = k.asset_id
       RETURNING k.line`, REMOVED_COLUMNS.sales),
    ...SALES_REMOVED_MARKS,
  ];
}

/** Deletes the transfers `keys` selects (line, hash, log_index, collection_id, asset_id), keeping them in removed_transfers. */
export function transfersRemoved(keys: string): string[] {
  return [
    ...REMOVED_TABLES,
    removedRows("transfers", `DELETE FROM transfers r USING (${keys}) k
       WHERE r.hash = k.hash AND r.log_index = k.log_index AND r.collection_id = k.collection_id AND r.asset_id = k.asset_id
       RETURNING k.line`, REMOVED_COLUMNS.transfers),
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
  return removedRows(table, `DELETE FROM ${table} r WHERE r.block >= $1
        AND (SELECT c.chain FROM collections c WHERE c.id = r.collection_id) = $2
        AND ($3 = '[]' OR '0x' || encode(r.block_hash, 'hex') IN (SELECT jsonb_array_elements_text($3::jsonb)))
      RETURNING 0::bigint AS line`, REMOVED_COLUMNS[table]);
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
