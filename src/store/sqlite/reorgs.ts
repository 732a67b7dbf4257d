import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { eventRemovedTriggers } from "./fillable.js";
import { REMOVAL_TABLES } from "../shared/removals.js";

// Reorganisations on SQLite (docs/chains.md): a sale or transfer taken back
// is deleted, and what it moved is found again from the records left, as if
// it had never come: its token's owner (ownership.ts ownerRecomputed) and
// its token's listings' end (fillable.ts movedFound), by the triggers
// below; its hours and series by the writer (record-writes.ts, through
// SalesAggregates.touch). A removal by blocks finds its rows by block
// (migration 22's indexes), so its cost is that of the blocks taken back,
// not of the chain's history.

/** Migration 22. */
export const REORGS_SCHEMA = `
  CREATE INDEX sales_by_block ON sales (block);
  CREATE INDEX transfers_by_block ON transfers (block);
  -- Every reorganisation taken, by chain and first block (its natural key): the hashes it named (a JSON array), and when.
  CREATE TABLE reorgs (
    chain TEXT NOT NULL,
    from_block INTEGER NOT NULL,
    block_hashes TEXT NOT NULL,
    at INTEGER NOT NULL DEFAULT (CAST(strftime('%s', 'now') AS INTEGER)),
    PRIMARY KEY (chain, from_block)
  ) WITHOUT ROWID;
  ${eventRemovedTriggers(false)}
`;

/** Migration 23: each chain's finalized block (docs/chains.md, "Finality"). */
export const FINALITY_SCHEMA = `
  CREATE TABLE finality (chain TEXT PRIMARY KEY, block INTEGER NOT NULL) WITHOUT ROWID;
`;

/**
 * What a removal keeps of a sale, of a transfer (migration 24): the columns
 * its feed answers (feed.ts), so that the live feeds send the record taken
 * back at its removal's position (docs/chains.md, "Removals in the feeds").
 */
export const SALE_KEPT = ["collection_id", "asset_key", "hash", "seller", "buyer", "timestamp", "block", "price", "amount_received", "marketplace", "block_hash", "wash_flags", "currency", "marketplace_fee", "royalty_fee", "quantity"];
export const TRANSFER_KEPT = ["collection_id", "asset_key", "hash", "log_index", "sender", "recipient", "timestamp", "block", "block_hash", "amount"];

/** Migration 24: the records taken back, each at its removal's feed position (feed_seq) with the position it had (original_seq). */
export const REMOVALS_SCHEMA = `
  CREATE TABLE sale_removals (
    feed_seq INTEGER PRIMARY KEY,
    original_seq INTEGER NOT NULL,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    hash BLOB NOT NULL,
    seller BLOB NOT NULL,
    buyer BLOB NOT NULL,
    timestamp INTEGER NOT NULL,
    block INTEGER NOT NULL,
    price TEXT NOT NULL,
    amount_received TEXT NOT NULL,
    marketplace TEXT NOT NULL,
    block_hash BLOB
  );
  CREATE INDEX sale_removals_by_feed ON sale_removals (collection_id, feed_seq);
  CREATE TABLE transfer_removals (
    feed_seq INTEGER PRIMARY KEY,
    original_seq INTEGER NOT NULL,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    hash BLOB NOT NULL,
    log_index INTEGER NOT NULL,
    sender BLOB NOT NULL,
    recipient BLOB NOT NULL,
    timestamp INTEGER NOT NULL,
    block INTEGER NOT NULL,
    block_hash BLOB
  );
  CREATE INDEX transfer_removals_by_feed ON transfer_removals (collection_id, feed_seq);
`;

/** Migration 25: the records taken back by time, as the activity list reads them (includeRemoved; removals.ts). */
export const REMOVALS_BY_TIME_SCHEMA = `
  CREATE INDEX sale_removals_by_time ON sale_removals (collection_id, timestamp DESC, block DESC, feed_seq DESC);
  CREATE INDEX transfer_removals_by_time ON transfer_removals (collection_id, timestamp DESC, block DESC, feed_seq DESC);
`;

/** A sale taken back: what its hours and series are found again by. */
export interface RemovedSale {
  collectionId: number;
  /** Its asset id (canonical decimal). */
  assetId: string;
  marketplace: string;
  timestamp: number;
}

/** The hashes' test of a removal by blocks: every block (none named), or the named ones (hex, in a JSON array). */
const NAMED = "hex(x.block_hash) IN (SELECT upper(substr(value, 3)) FROM json_each(?))";

/**
 * The deletion of a table's rows in a chain's blocks from a first one on
 * (parameters: the block, the chain, and with `named` the hashes as a JSON
 * array), returning what the writer needs of each (exported for the
 * query-plan test: a seek of the table's block index, each row's collection
 * by its key).
 */
export function removedByBlocks(table: "sales" | "transfers", named: boolean): string {
  // Each row's collection by its key: never a list of the chain's collections (a chain holds hundreds of thousands).
  const where = `x.block >= ? AND EXISTS (SELECT 1 FROM collections c WHERE c.id = x.collection_id AND c.chain = ?)${named ? ` AND ${NAMED}` : ""}`;
  return table === "sales"
    ? `DELETE FROM sales WHERE id IN (SELECT x.id FROM sales x INDEXED BY sales_by_block WHERE ${where}) ${KEPT_OF.sales}`
    : `DELETE FROM transfers WHERE (collection_id, asset_key, block, log_index, hash) IN (
         SELECT x.collection_id, x.asset_key, x.block, x.log_index, x.hash FROM transfers x INDEXED BY transfers_by_block WHERE ${where})
       ${KEPT_OF.transfers}`;
}

/** What a deletion returns of each row: its position and what a removal keeps. */
const KEPT_OF = {
  sales: `RETURNING feed_seq, ${SALE_KEPT.join(", ")}`,
  transfers: `RETURNING feed_seq, ${TRANSFER_KEPT.join(", ")}`,
};

/** The insertion of a row a deletion returned (KEPT_OF) into its removal table, at a new position. */
const keep = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (feed_seq, original_seq, ${columns.join(", ")}) VALUES (?, ?, ${columns.map(() => "?").join(", ")})`;
const KEEP = { sales: keep(REMOVAL_TABLES.sales, SALE_KEPT), transfers: keep(REMOVAL_TABLES.transfers, TRANSFER_KEPT) };

type Deleted = Record<string, unknown> & { feed_seq: number; collection_id: number };
type DeletedSale = Deleted & { marketplace: string; timestamp: number; asset_key: string };
const removedSale = (r: DeletedSale): RemovedSale => ({ collectionId: r.collection_id, assetId: r.asset_key.slice(2), marketplace: r.marketplace, timestamp: r.timestamp });

export class SqliteRemovals {
  readonly #db: Db;
  readonly #statements = new Map<string, Statement>();

  /** `nextSeq`: the writer's next feed position (record-writes.ts), the one sequence every feed row takes. */
  constructor(db: Db, private readonly nextSeq: () => number) {
    this.#db = db;
  }

  /** Keeps the rows a deletion of `table` returned, each at the next feed position. */
  #kept<R extends Deleted>(table: "sales" | "transfers", rows: R[]): R[] {
    const insert = this.#prepare(KEEP[table]);
    const columns = table === "sales" ? SALE_KEPT : TRANSFER_KEPT;
    for (const r of rows) insert.run(this.nextSeq(), r.feed_seq, ...columns.map((c) => r[c]));
    return rows;
  }

  #prepare(sql: string): Statement {
    let s = this.#statements.get(sql);
    if (s === undefined) this.#statements.set(sql, (s = this.#db.prepare(sql)));
    return s;
  }

  /** The chain's finalized block, or -1. */
  finalized(chain: string): number {
    return (this.#prepare("SELECT block FROM finality WHERE chain = ?").pluck().get(chain) as number | undefined) ?? -1;
  }

  /** Moves the chain's finalized block forward to `block`: whether it moved (a finality never goes back). */
  finalize(chain: string, block: number): "inserted" | "updated" | "unchanged" {
    const was = this.finalized(chain);
    if (block <= was) return "unchanged";
    this.#prepare("INSERT INTO finality (chain, block) VALUES (?, ?) ON CONFLICT (chain) DO UPDATE SET block = excluded.block").run(chain, block);
    return was < 0 ? "inserted" : "updated";
  }

  /** Deletes the sale of this natural key, if held. */
  sale(hash: Uint8Array, collectionId: number, assetKey: string): RemovedSale | undefined {
    const rows = this.#prepare(`DELETE FROM sales WHERE hash = ? AND collection_id = ? AND asset_key = ? ${KEPT_OF.sales}`)
      .all(hash, collectionId, assetKey) as DeletedSale[];
    return this.#kept("sales", rows).map(removedSale)[0];
  }

  /** Deletes the transfer of this natural key, if held: its collection, or undefined. */
  transfer(hash: Uint8Array, logIndex: number, collectionId: number, assetKey: string): number | undefined {
    const rows = this.#prepare(`DELETE FROM transfers WHERE hash = ? AND log_index = ? AND collection_id = ? AND asset_key = ? ${KEPT_OF.transfers}`)
      .all(hash, logIndex, collectionId, assetKey) as Deleted[];
    return this.#kept("transfers", rows)[0]?.collection_id;
  }

  /** Deletes every sale and transfer of `chain` from block `fromBlock` on (of the named blocks only, when `hashes` names any). */
  blocks(chain: string, fromBlock: number, hashes: readonly string[]): { sales: RemovedSale[]; transfers: number[] } {
    const named = hashes.length > 0;
    const params = named ? [fromBlock, chain, JSON.stringify(hashes)] : [fromBlock, chain];
    const sales = this.#kept("sales", this.#prepare(removedByBlocks("sales", named)).all(...params) as DeletedSale[]);
    const transfers = this.#kept("transfers", this.#prepare(removedByBlocks("transfers", named)).all(...params) as Deleted[]);
    return { sales: sales.map(removedSale), transfers: transfers.map((r) => r.collection_id) };
  }
}
