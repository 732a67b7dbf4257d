import { DEFAULT_CHAIN, refParts } from "../../domain/chains.js";
import { refSql } from "../shared/collection-ref.js";
import Database from "better-sqlite3";
import { type Db, refreshPlannerStats, sqliteErrorLine } from "./database.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import { hexSql } from "./hex.js";
import { lowestPrices } from "../shared/listing-prices.js";
import { type UpsertResult, WriteStore } from "./record-writes.js";
import type { DerivedRows, DerivedWrite, DerivedWrites, DeriveRepository, SaleForModel, TokenRecord } from "../ports/derive.js";
import { StoreUnavailableError } from "../ports/errors.js";
import { CLEAN } from "./wash.js";

// What derive reads (a collection's tokens and sales) and how it replaces a
// collection's derived rows: old rows out, new rows in through the same
// upserts as imports, rarity and appraisals together in one transaction.

const BULK_ROWS = 20_000;

/** The value columns #rewrite writes, in the order of its `values`. */
const REWRITTEN = {
  rarity: ["current_owner", "rarity_score", "statistical_rarity", "rarity_rank"],
  appraisals: ["fair_market_value", "confidence"],
} as const;

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
        `SELECT ${refSql()} FROM collections c
         WHERE EXISTS (SELECT 1 FROM tokens t WHERE t.collection_id = c.id AND t.recorded = 1)
            OR EXISTS (SELECT 1 FROM sales s WHERE s.collection_id = c.id)
         ORDER BY chain <> '${DEFAULT_CHAIN}', chain, address`,
      )
      .pluck()
      .all() as string[];
  }

  collectionId(ref: string): number | undefined {
    const { chain, address } = refParts(ref);
    return this.#db.prepare("SELECT id FROM collections WHERE chain = ? AND address = ?").pluck().get(chain, address) as number | undefined;
  }

  tokens(collectionId: number): TokenRecord[] {
    const rows = this.#db
      .prepare(`SELECT ${assetIdSql("")}, current_owner, attributes FROM tokens WHERE collection_id = ? AND recorded = 1 ORDER BY asset_key`)
      .all(collectionId) as { asset_id: string; current_owner: string; attributes: string }[];
    return rows.map((r) => ({ assetId: r.asset_id, currentOwner: r.current_owner, attributes: JSON.parse(r.attributes) }));
  }

  /** A collection's sales, oldest first; wash trades left out (docs/wash-trades.md: the model learns from the market's own). */
  sales(collectionId: number, after: number, until: number): SaleForModel[] {
    const rows = this.#db
      .prepare(
        `SELECT ${assetIdSql("")}, timestamp, price, ${hexSql("buyer", "buyer")} FROM sales INDEXED BY sales_by_time
         WHERE collection_id = ? AND timestamp > ? AND timestamp <= ? AND ${CLEAN} ORDER BY timestamp, block, hash, asset_key`,
      )
      .raw(true)
      .all(collectionId, after, until) as [string, number, string, string][];
    // Rows as arrays: a collection's whole history is read at once (faster than objects at that size: bench:derive).
    return rows.map((r) => ({ assetId: r[0], timestamp: r[1], price: BigInt(r[2]), buyer: r[3] }));
  }

  salesSince(collectionId: number, after: number, until: number): { sales: SaleForModel[]; total: number } {
    // One read transaction: no commit lands between the two reads.
    return this.#db.transaction(() => ({
      sales: this.sales(collectionId, after, until),
      total: this.#db.prepare(`SELECT count(*) FROM sales INDEXED BY sales_by_time WHERE collection_id = ? AND timestamp <= ? AND ${CLEAN}`).pluck().get(collectionId, until) as number,
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
    // One transaction; each data set's own (nested) is a savepoint inside it.
    // Collections below BULK_ROWS are rewritten in place (#rewrite); larger ones, or over imported rows, replaced (#replace).
    const inPlace = (n: number) => !replaceImported && n < BULK_ROWS;
    try {
      return this.#replaceDerived(collectionId, rows, inPlace, replaceImported);
    } catch (err) {
      // Another connection held the write lock past the busy timeout (an
      // import): nothing was written; the background derive tries again later.
      if (err instanceof Database.SqliteError && (err.code === "SQLITE_BUSY" || err.code === "SQLITE_BUSY_SNAPSHOT")) {
        throw new StoreUnavailableError(sqliteErrorLine(err)!, { cause: err });
      }
      throw err;
    }
  }

  #replaceDerived(collectionId: number, rows: DerivedRows, inPlace: (n: number) => boolean, replaceImported: boolean): DerivedWrites {
    const { rarity, appraisals } = rows;
    return this.#writer.transaction(() => ({
      ...(rarity === undefined
        ? {}
        : {
            rarity: inPlace(rarity.length)
              ? this.#rewrite("rarity", collectionId, rarity, (r) => [r.currentOwner, r.rarityScore, r.statisticalRarity, r.rarityRank])
              : this.#replace("rarity", collectionId, rarity, replaceImported, (r, keep) => this.#writer.upsertRarity(r, "derived", keep)),
          }),
      ...(appraisals === undefined
        ? {}
        : {
            appraisals: inPlace(appraisals.length)
              ? this.#rewrite("appraisals", collectionId, appraisals, (r) => [r.fairMarketValue, r.confidence])
              : this.#replace("appraisal", collectionId, appraisals, replaceImported, (r, keep) => this.#writer.upsertAppraisal(r, "derived", keep)),
          }),
    }));
  }

  /**
   * A collection's derived rows become `rows`, each written only where it
   * changed, rather than all deleted and inserted again (#replace): the
   * background derive rewrites a collection every few hundred ms, and most
   * rarity rows, and the pages of both tables, need not be touched again.
   * Imported rows are kept; derived rows of assets not in `rows` removed.
   */
  #rewrite<T extends { assetId: string }>(table: "rarity" | "appraisals", collectionId: number, rows: readonly T[], values: (r: T) => unknown[]): DerivedWrite {
    const columns = REWRITTEN[table];
    const keysOf = (source: string) =>
      new Set(this.#db.prepare(`SELECT asset_key FROM ${table} WHERE collection_id = ? AND source = ?`).pluck().all(collectionId, source) as string[]);
    const imported = keysOf("imported");
    const stale = keysOf("derived");
    const write = this.#db.prepare(
      `INSERT INTO ${table} (collection_id, asset_key, ${columns.join(", ")}, source) VALUES (?, ?, ${columns.map(() => "?").join(", ")}, 'derived')
       ON CONFLICT (collection_id, asset_key) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(", ")}
       WHERE (${columns.join(", ")}) IS NOT (${columns.map((c) => `excluded.${c}`).join(", ")})`,
    );
    let written = 0;
    let keptImported = 0;
    for (const r of rows) {
      const key = assetKey(r.assetId);
      if (imported.has(key)) keptImported++;
      else {
        write.run(collectionId, key, ...values(r));
        stale.delete(key);
        written++;
      }
    }
    const remove = this.#db.prepare(`DELETE FROM ${table} WHERE collection_id = ? AND asset_key = ?`);
    for (const key of stale) remove.run(collectionId, key);
    this.#writer.touch(collectionId);
    return { written, keptImported, replacedImported: 0, imported: imported.size };
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
      const restore = rows.length >= BULK_ROWS ? this.#writer.deferIndexes(table) : undefined;
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
