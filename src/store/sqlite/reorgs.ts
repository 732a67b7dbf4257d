import type { Statement } from "better-sqlite3";
import type { Db } from "./db.js";
import { movedFound } from "./fillable.js";
import { ownerRecomputed } from "./ownership.js";

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
  CREATE TRIGGER sales_removed AFTER DELETE ON sales BEGIN
    ${ownerRecomputed("OLD")}
    ${movedFound("collection_id = OLD.collection_id AND asset_key = OLD.asset_key")}
  END;
  CREATE TRIGGER transfers_removed AFTER DELETE ON transfers BEGIN
    ${ownerRecomputed("OLD")}
    ${movedFound("collection_id = OLD.collection_id AND asset_key = OLD.asset_key")}
  END;
`;

/** Migration 23: each chain's finalized block (docs/chains.md, "Finality"). */
export const FINALITY_SCHEMA = `
  CREATE TABLE finality (chain TEXT PRIMARY KEY, block INTEGER NOT NULL) WITHOUT ROWID;
`;

/** A sale taken back: what its hours and series are found again by. */
export interface RemovedSale {
  collectionId: number;
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
    ? `DELETE FROM sales WHERE id IN (SELECT x.id FROM sales x INDEXED BY sales_by_block WHERE ${where})
       RETURNING collection_id, marketplace, timestamp`
    : `DELETE FROM transfers WHERE (collection_id, asset_key, block, log_index, hash) IN (
         SELECT x.collection_id, x.asset_key, x.block, x.log_index, x.hash FROM transfers x INDEXED BY transfers_by_block WHERE ${where})
       RETURNING collection_id`;
}

export class SqliteRemovals {
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
    const row = this.#prepare("DELETE FROM sales WHERE hash = ? AND collection_id = ? AND asset_key = ? RETURNING collection_id, marketplace, timestamp")
      .get(hash, collectionId, assetKey) as { collection_id: number; marketplace: string; timestamp: number } | undefined;
    return row === undefined ? undefined : { collectionId: row.collection_id, marketplace: row.marketplace, timestamp: row.timestamp };
  }

  /** Deletes the transfer of this natural key, if held: its collection, or undefined. */
  transfer(hash: Uint8Array, logIndex: number, collectionId: number, assetKey: string): number | undefined {
    return this.#prepare("DELETE FROM transfers WHERE hash = ? AND log_index = ? AND collection_id = ? AND asset_key = ? RETURNING collection_id")
      .pluck()
      .get(hash, logIndex, collectionId, assetKey) as number | undefined;
  }

  /** Deletes every sale and transfer of `chain` from block `fromBlock` on (of the named blocks only, when `hashes` names any). */
  blocks(chain: string, fromBlock: number, hashes: readonly string[]): { sales: RemovedSale[]; transfers: number[] } {
    const named = hashes.length > 0;
    const params = named ? [fromBlock, chain, JSON.stringify(hashes)] : [fromBlock, chain];
    const sales = this.#prepare(removedByBlocks("sales", named)).all(...params) as { collection_id: number; marketplace: string; timestamp: number }[];
    const transfers = this.#prepare(removedByBlocks("transfers", named)).pluck().all(...params) as number[];
    return { sales: sales.map((r) => ({ collectionId: r.collection_id, marketplace: r.marketplace, timestamp: r.timestamp })), transfers };
  }
}
