import { DEFAULT_CHAIN, refParts } from "../../domain/chains.js";
import { refSql } from "../shared/collection-ref.js";
import type pg from "pg";
import type { AppraisalRow, RarityRow } from "../../domain/rows.js";
import type { DerivedRows, DerivedWrite, DerivedWrites, DeriveRepository, SaleForModel, TokenRecord } from "../ports/derive.js";
import { lowestPrices } from "../shared/listing-prices.js";
import { kindWrites } from "./kind-writes.js";
import { PG_SALES_SINCE_SQL, salesSinceValues } from "./sales.js";
import { openStage, writeTransaction } from "./copy.js";

// derive on PostgreSQL: the same reads and the same replacement rules as
// SQLite's DeriveStore (imported rows are an operator's data: never deleted,
// kept over computed ones unless --replace-imported), with the computed rows
// staged by COPY and merged in one statement per data set, both data sets
// in one transaction.

const TABLE = { rarity: "rarity", appraisal: "appraisals" } as const;
const VALUES = {
  rarity: ["current_owner", "rarity_score", "statistical_rarity", "rarity_rank"],
  appraisal: ["fair_market_value", "confidence"],
} as const;

export class PgDeriveStore implements DeriveRepository {
  constructor(private readonly pool: pg.Pool) {}

  async collectionsToDerive(): Promise<string[]> {
    const r = await this.pool.query<{ address: string }>(
      `SELECT ${refSql()} AS address FROM collections c
       WHERE EXISTS (SELECT 1 FROM tokens t WHERE t.collection_id = c.id AND t.recorded)
          OR EXISTS (SELECT 1 FROM sales s WHERE s.collection_id = c.id)
       ORDER BY chain <> '${DEFAULT_CHAIN}', chain, address`,
    );
    return r.rows.map((x) => x.address);
  }

  async collectionId(ref: string): Promise<number | undefined> {
    const { chain, address } = refParts(ref);
    return (await this.pool.query<{ id: number }>("SELECT id FROM collections WHERE chain = $1 AND address = $2", [chain, address])).rows[0]?.id;
  }

  async tokens(collectionId: number): Promise<TokenRecord[]> {
    const r = await this.pool.query<{ asset_id: string; current_owner: string; attributes: TokenRecord["attributes"] }>(
      // Ordered by the numeric column, not by the text alias of the same name.
      "SELECT t.asset_id::text AS asset_id, t.current_owner, t.attributes FROM tokens t WHERE t.collection_id = $1 AND t.recorded ORDER BY t.asset_id",
      [collectionId],
    );
    return r.rows.map((t) => ({ assetId: t.asset_id, currentOwner: t.current_owner, attributes: t.attributes }));
  }

  /** A collection's sales, oldest first; wash trades (and sales in another unit) left out, as SQLite's. */
  async sales(collectionId: number, after: number, until: number): Promise<SaleForModel[]> {
    const r = await this.pool.query<{ asset_id: string; timestamp: number; price: string; buyer: string }>(
      `SELECT s.asset_id::text AS asset_id, s.timestamp, s.price::text AS price, '0x' || encode(s.buyer, 'hex') AS buyer
       FROM sales s WHERE s.collection_id = $1 AND s.timestamp > $2 AND s.timestamp <= $3 AND s.wash_flags = 0 ORDER BY s.timestamp, s.block, s.hash, s.asset_id`,
      [collectionId, after, until],
    );
    return r.rows.map((s) => ({ assetId: s.asset_id, timestamp: s.timestamp, price: BigInt(s.price), buyer: s.buyer }));
  }

  async salesSince(collectionId: number, after: number, until: number): Promise<{ sales: SaleForModel[]; total: number }> {
    // One statement, one snapshot: no commit lands between the count and the rows.
    const r = await this.pool.query<{ total: number; asset_id: string | null; timestamp: number; price: string; buyer: string }>(
      PG_SALES_SINCE_SQL,
      salesSinceValues(collectionId, after, until),
    );
    const sales = r.rows.filter((s) => s.asset_id !== null).map((s) => ({ assetId: s.asset_id!, timestamp: s.timestamp, price: BigInt(s.price), buyer: s.buyer }));
    return { sales, total: r.rows[0]?.total ?? 0 };
  }

  async openListingPrices(collectionId: number): Promise<Map<string, bigint>> {
    const r = await this.pool.query<{ asset_id: string; price: string }>(
      `SELECT l.asset_id::text AS asset_id, l.price::text AS price FROM listings l WHERE l.collection_id = $1 AND l.status = 'CREATED'`,
      [collectionId],
    );
    return lowestPrices(r.rows);
  }

  /** Both data sets in one transaction: readers see the old rows of both or the new rows of both. */
  replaceDerived(collectionId: number, rows: DerivedRows, replaceImported = false): Promise<DerivedWrites> {
    return writeTransaction(this.pool, async (client, touched) => {
      touched.ids = [collectionId];
      const writes: DerivedWrites = {};
      if (rows.rarity !== undefined) writes.rarity = await this.#replace(client, "rarity", collectionId, rows.rarity, replaceImported);
      if (rows.appraisals !== undefined) writes.appraisals = await this.#replace(client, "appraisal", collectionId, rows.appraisals, replaceImported);
      return writes;
    });
  }

  async refreshPlannerStats(): Promise<void> {
    // VACUUM too: the visibility map for index-only scans (ingest/pg-importer.ts).
    await this.pool.query("VACUUM (ANALYZE) rarity, appraisals");
  }

  /**
   * The staged rows become the collection's derived rows, each written only
   * where it changed, rather than all deleted and inserted again: the
   * background derive rewrites a collection every second or so, and most
   * rarity rows do not change. Imported rows are kept; derived rows of
   * assets not staged are removed.
   */
  async #rewrite(client: pg.PoolClient, table: string, values: readonly string[], collectionId: number): Promise<DerivedWrite> {
    // NOT IN over the staged ids, a hashed subplan: NOT EXISTS took a
    // nested loop over every pair of rows on the temporary table.
    await client.query(
      `DELETE FROM ${table} WHERE collection_id = $1 AND source = 'derived' AND asset_id NOT IN (SELECT asset_id FROM stage)`,
      [collectionId],
    );
    await client.query(
      `INSERT INTO ${table} AS t (collection_id, asset_id, ${values.join(", ")}, source)
       SELECT $1, asset_id, ${values.join(", ")}, 'derived' FROM stage
       ON CONFLICT (collection_id, asset_id) DO UPDATE SET ${values.map((v) => `${v} = EXCLUDED.${v}`).join(", ")}
       WHERE t.source = 'derived' AND (${values.map((v) => `t.${v}`).join(", ")}) IS DISTINCT FROM (${values.map((v) => `EXCLUDED.${v}`).join(", ")})`,
      [collectionId],
    );
    const counts = await client.query<{ staged: number; kept: number; imported: number }>(
      `SELECT (SELECT count(*)::int FROM stage) AS staged,
         (SELECT count(*)::int FROM stage s JOIN ${table} t ON t.collection_id = $1 AND t.asset_id = s.asset_id AND t.source = 'imported') AS kept,
         (SELECT count(*)::int FROM ${table} WHERE collection_id = $1 AND source = 'imported') AS imported`,
      [collectionId],
    );
    // The next data set of this transaction stages its own rows.
    await client.query("DROP TABLE stage");
    const { staged, kept, imported } = counts.rows[0]!;
    return { written: staged - kept, keptImported: kept, replacedImported: 0, imported };
  }

  async #replace(
    client: pg.PoolClient,
    kind: "rarity" | "appraisal",
    collectionId: number,
    rows: readonly (RarityRow | AppraisalRow)[],
    replaceImported: boolean,
  ): Promise<DerivedWrite> {
    const table = TABLE[kind];
    const values = VALUES[kind];
    {
      const stage = await openStage(client, kindWrites(kind === "rarity" ? "rarity" : "appraisals"));
      for (const r of rows) {
        const pending = stage.write(r as unknown as Record<string, unknown>);
        if (pending !== undefined) await pending;
      }
      await stage.finish();
      if (!replaceImported) return this.#rewrite(client, table, values, collectionId);
      // derive --replace-imported: every row derived, over imported ones too.
      await client.query(`DELETE FROM ${table} WHERE collection_id = $1 AND source = 'derived'`, [collectionId]);
      // Only imported rows are left: a conflict meets one.
      const onConflict = `DO UPDATE SET ${values.map((v) => `${v} = EXCLUDED.${v}`).join(", ")}, source = 'derived'`;
      const merged = await client.query<{ inserted: number; replaced: number }>(
        `WITH up AS (
           INSERT INTO ${table} (collection_id, asset_id, ${values.join(", ")}, source)
           SELECT $1, asset_id, ${values.join(", ")}, 'derived' FROM stage
           ON CONFLICT (collection_id, asset_id) ${onConflict}
           RETURNING (xmax = 0) AS inserted)
         SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS replaced FROM up`,
        [collectionId],
      );
      const { inserted, replaced } = merged.rows[0]!;
      // The next data set of this transaction stages its own rows.
      await client.query("DROP TABLE stage");
      const imported = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${table} WHERE collection_id = $1 AND source = 'imported'`,
        [collectionId],
      );
      return {
        written: inserted + replaced,
        keptImported: 0,
        replacedImported: replaced,
        imported: imported.rows[0]!.n,
      };
    }
  }
}
