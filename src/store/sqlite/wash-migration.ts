import { washFlagsOf } from "../../domain/wash.js";
import { keepEverySummary } from "./collection-summaries.js";
import type { Db } from "./db.js";
import { SalesAggregates } from "./sales-stats.js";
import { asWashSale, WASH_ORDER, washColumns, type WashRead } from "./wash.js";

/**
 * Migration 29: every sale's wash flags, and a removed sale's as it had them
 * (a removal keeps what its feed answers). The backfill reads one
 * collection's sales at a time and writes the masks the rules give the whole
 * of it (domain/wash.ts washFlagsOf): the same answer as the writes'.
 */
export function washFlagsMigration(db: Db): void {
  db.exec(`
    ALTER TABLE sales ADD COLUMN wash_flags INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sale_removals ADD COLUMN wash_flags INTEGER NOT NULL DEFAULT 0;
  `);
  // Each collection's sales read whole, in the rules' order, flagged as the writes would flag them.
  // Every sale in ETH: the payment token came later (migration 31).
  const read = db.prepare(`SELECT ${washColumns("'ETH'")} FROM sales WHERE collection_id = ? ${WASH_ORDER}`).raw();
  const set = db.prepare("UPDATE sales SET wash_flags = ? WHERE id = ?");
  const aggregates = new SalesAggregates(db);
  for (const c of db.prepare("SELECT DISTINCT collection_id FROM sales").pluck().all() as number[]) {
    const sales = (read.all(c) as WashRead[]).map(asWashSale);
    const masks = washFlagsOf(sales, { sorted: true });
    for (const sale of sales) {
      const mask = masks.get(sale.id)!;
      if (mask === 0) continue;
      set.run(mask, sale.id);
      aggregates.touch(c, sale.marketplace, sale.timestamp);
    }
  }
  db.exec(WASH_INDEXES);
  // The flagged sales' hours and intervals summed again without them, and the summaries kept from those.
  if (aggregates.pending) {
    aggregates.flush();
    keepEverySummary(db);
  }
}

/**
 * Migration 29's indexes: the flagged sales by time (partial: the few), and
 * sales_by_marketplace with the flags at its end, so that an hour's clean
 * sales are still summed from the index alone.
 */
const WASH_INDEXES = `
  CREATE INDEX sales_washed ON sales (collection_id, timestamp) WHERE wash_flags <> 0;
  DROP INDEX sales_by_marketplace;
  CREATE INDEX sales_by_marketplace ON sales (
    collection_id, marketplace, timestamp DESC, block DESC, hash, asset_key, price_hi, price_lo, wash_flags);
`;
