import type { Db } from "./database.js";
import { assetIdSql } from "./asset-key.js";
import { hexSql } from "./hex.js";
import { WriteStore } from "./write-store.js";
import type { AppraisalRow, RarityRow } from "./read-store.js";

// What derive reads (a collection's tokens and sales) and how it replaces a
// collection's derived rows: old rows out, new rows in through the same
// upserts as imports, in one transaction.

const BULK_ROWS = 20_000;

export interface TokenRecord {
  assetId: string;
  currentOwner: string;
  attributes: { trait_type: string; value: unknown }[];
}

export interface SaleForModel {
  assetId: string;
  timestamp: number;
  price: bigint;
  buyer: string;
}

export class DeriveStore {
  readonly #db: Db;
  readonly #writer: WriteStore;

  constructor(db: Db) {
    this.#db = db;
    this.#writer = new WriteStore(db);
  }

  /** Collections with tokens (rarity) or sales (appraisals). */
  collectionsToDerive(): string[] {
    return this.#db
      .prepare(
        `SELECT address FROM collections c
         WHERE EXISTS (SELECT 1 FROM tokens t WHERE t.collection_id = c.id)
            OR EXISTS (SELECT 1 FROM sales s WHERE s.collection_id = c.id)
         ORDER BY address`,
      )
      .pluck()
      .all() as string[];
  }

  collectionId(address: string): number | undefined {
    return this.#db.prepare("SELECT id FROM collections WHERE address = ?").pluck().get(address) as number | undefined;
  }

  tokens(collectionId: number): TokenRecord[] {
    const rows = this.#db
      .prepare(`SELECT ${assetIdSql("")}, current_owner, attributes FROM tokens WHERE collection_id = ? ORDER BY asset_key`)
      .all(collectionId) as { asset_id: string; current_owner: string; attributes: string }[];
    return rows.map((r) => ({ assetId: r.asset_id, currentOwner: r.current_owner, attributes: JSON.parse(r.attributes) }));
  }

  /** A collection's sales, oldest first. */
  sales(collectionId: number): SaleForModel[] {
    const rows = this.#db
      .prepare(
        `SELECT ${assetIdSql("")}, timestamp, price, ${hexSql("buyer", "buyer")} FROM sales INDEXED BY sales_by_time
         WHERE collection_id = ? ORDER BY timestamp, block, hash, asset_key`,
      )
      .all(collectionId) as { asset_id: string; timestamp: number; price: string; buyer: string }[];
    return rows.map((r) => ({ assetId: r.asset_id, timestamp: r.timestamp, price: BigInt(r.price), buyer: r.buyer }));
  }

  replaceRarity(collectionId: number, rows: readonly RarityRow[]): void {
    this.#replace("rarity", collectionId, rows, (r) => this.#writer.upsertRarity(r));
  }

  replaceAppraisals(collectionId: number, rows: readonly AppraisalRow[]): void {
    this.#replace("appraisal", collectionId, rows, (r) => this.#writer.upsertAppraisal(r));
  }

  #replace<T>(kind: "rarity" | "appraisal", collectionId: number, rows: readonly T[], upsert: (r: T) => void): void {
    const table = kind === "rarity" ? "rarity" : "appraisals";
    this.#writer.transaction(() => {
      this.#db.prepare(`DELETE FROM ${table} WHERE collection_id = ?`).run(collectionId);
      // Large collections: build the secondary indexes once, after the rows.
      const restore = rows.length >= BULK_ROWS ? this.#writer.deferIndexes(kind) : undefined;
      for (const r of rows) upsert(r);
      restore?.();
    });
  }
}
