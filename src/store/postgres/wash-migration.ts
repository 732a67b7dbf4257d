import type pg from "pg";
import { washFlagsOf } from "../../domain/wash.js";
import { type Flip, moveAggregates, setMasks, WASH_ORDER, washColumns, washSales } from "./wash.js";

/**
 * Migration 29, as SQLite's 29: every sale's wash flags, and a removed
 * sale's as it had them; the sales held evaluated a collection at a time,
 * and the flagged ones taken out of the aggregates; the indexes the reads
 * of flagged sales and of clean sums use.
 */
export async function washFlagsMigration(client: pg.PoolClient): Promise<void> {
  await client.query(`ALTER TABLE sales ADD COLUMN wash_flags integer NOT NULL DEFAULT 0;
    ALTER TABLE sale_removals ADD COLUMN wash_flags integer NOT NULL DEFAULT 0`);
  const collections = (await client.query<{ c: number }>("SELECT DISTINCT collection_id AS c FROM sales")).rows;
  const flips: Flip[] = [];
  for (const { c } of collections) {
    // Every sale in ETH: the payment token came later (migration 31).
    const sales = await washSales(client, `SELECT ${washColumns("'ETH'")} FROM sales s WHERE s.collection_id = $1 ${WASH_ORDER}`, [c]);
    const masks = washFlagsOf(sales, { sorted: true });
    const flagged = sales.filter((s) => masks.get(s.id) !== 0);
    await setMasks(client, c, flagged.map((s) => [s, masks.get(s.id)!]));
    for (const sale of flagged) flips.push({ c, sale, sign: -1, mask: masks.get(sale.id)! });
  }
  await client.query(WASH_INDEXES);
  // The series as this migration finds them: without the dollars (migration 34).
  if (flips.length > 0) await moveAggregates(client, flips, false);
}

/** Migration 29's indexes: the flagged sales by time (partial: the few), and the marketplace index carrying the flags for its clean sums. */
const WASH_INDEXES = `
  CREATE INDEX sales_washed ON sales (collection_id, timestamp) WHERE wash_flags <> 0;
  DROP INDEX sales_by_marketplace;
  CREATE INDEX sales_by_marketplace ON sales (collection_id, marketplace, timestamp DESC, block DESC, hash, asset_id) INCLUDE (price, wash_flags)`;
