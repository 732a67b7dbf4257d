import { type Db, refreshPlannerStats } from "./database.js";
import type { MaybePromise } from "../ports.js";
import { assetIdSql } from "./asset-key.js";
import { hexSql } from "./hex.js";
import { lowestPrices } from "../shared/listing-prices.js";
import { type UpsertResult, WriteStore } from "./write-store.js";
import type { AppraisalRow, RarityRow } from "../../domain/records.js";
import type { DerivedRows, DerivedWrite, DerivedWrites, DeriveRepository, SaleForModel, TokenRecord } from "../ports.js";

// What derive reads (a collection's tokens and sales) and how it replaces a
// collection's derived rows: old rows out, new rows in through the same
// upserts as imports, rarity and appraisals together in one transaction.

const BULK_ROWS = 20_000;

export class DeriveStore implements DeriveRepository {
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
  sales(collectionId: number, after = -1): SaleForModel[] {
    const rows = this.#db
      .prepare(
        `SELECT ${assetIdSql("")}, timestamp, price, ${hexSql("buyer", "buyer")} FROM sales INDEXED BY sales_by_time
         WHERE collection_id = ? AND timestamp > ? ORDER BY timestamp, block, hash, asset_key`,
      )
      .raw(true)
      .all(collectionId, after) as [string, number, string, string][];
    // Rows as arrays: a collection's whole history is read at once (100,000 sales: ~30% faster than objects).
    return rows.map((r) => ({ assetId: r[0], timestamp: r[1], price: BigInt(r[2]), buyer: r[3] }));
  }

  salesSince(collectionId: number, after: number): { sales: SaleForModel[]; total: number } {
    // One read transaction: no commit lands between the two reads.
    return this.#db.transaction(() => ({
      sales: this.sales(collectionId, after),
      total: this.#db.prepare("SELECT count(*) FROM sales INDEXED BY sales_by_time WHERE collection_id = ?").pluck().get(collectionId) as number,
    }))();
  }

  openListingPrices(collectionId: number): Map<string, bigint> {
    const rows = this.#db
      .prepare(`SELECT ${assetIdSql("")}, price FROM listings INDEXED BY listings_by_status WHERE collection_id = ? AND status = 'CREATED'`)
      .all(collectionId) as { asset_id: string; price: string }[];
    return lowestPrices(rows);
  }

  refreshPlannerStats(): void {
    refreshPlannerStats(this.#db);
  }

  replaceDerived(collectionId: number, rows: DerivedRows, replaceImported = false): DerivedWrites {
    const { rarity, appraisals } = rows;
    // One transaction; each data set's own (nested) is a savepoint inside it.
    return this.#writer.transaction(() => ({
      ...(rarity === undefined
        ? {}
        : { rarity: this.#replace("rarity", collectionId, rarity, replaceImported, (r, keep) => this.#writer.upsertRarity(r, "derived", keep)) }),
      ...(appraisals === undefined
        ? {}
        : {
            appraisals: this.#replace("appraisal", collectionId, appraisals, replaceImported, (r, keep) =>
              this.#writer.upsertAppraisal(r, "derived", keep),
            ),
          }),
    }));
  }

  /**
   * A collection's derived rows are replaced by `rows`. Imported rows are an
   * operator's data: never deleted, and kept over a computed row for the
   * same asset unless `replaceImported` (derive --replace-imported).
   */
  #replace<T>(
    kind: "rarity" | "appraisal",
    collectionId: number,
    rows: readonly T[],
    replaceImported: boolean,
    upsert: (r: T, keepExisting: boolean) => UpsertResult,
  ): DerivedWrite {
    const table = kind === "rarity" ? "rarity" : "appraisals";
    const counts: DerivedWrite = { written: 0, keptImported: 0, replacedImported: 0, imported: 0 };
    this.#writer.transaction(() => {
      this.#db.prepare(`DELETE FROM ${table} WHERE collection_id = ? AND source = 'derived'`).run(collectionId);
      this.#writer.touch(collectionId);
      // Large collections: build the secondary indexes once, after the rows.
      const restore = rows.length >= BULK_ROWS ? this.#writer.deferIndexes(kind) : undefined;
      // Only imported rows are left: an insert that does not happen meets one.
      for (const r of rows) {
        if (upsert(r, !replaceImported) === "inserted") counts.written++;
        else if (replaceImported) counts.replacedImported++;
        else counts.keptImported++;
      }
      restore?.();
      counts.imported = this.#db
        .prepare(`SELECT count(*) FROM ${table} WHERE collection_id = ? AND source = 'imported'`)
        .pluck()
        .get(collectionId) as number;
    });
    counts.written += counts.replacedImported;
    return counts;
  }
}
