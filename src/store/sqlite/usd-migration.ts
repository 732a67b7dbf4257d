import { CLEAN_SUMMARIES, WASH_SUMMARIES } from "../shared/collection-summaries.js";
import { keepEverySummary } from "./collection-summaries.js";
import type { Db } from "./db.js";
import { SalesAggregates } from "./sales-stats.js";

/**
 * Migration 34 (docs/money.md, "USD kept with the series"): each series
 * interval keeps its sales' US dollars (volume_usd, exact; unpriced, the
 * sales with no point in force), found for a price point by an index of the
 * intervals by span, marketplace and time (not a partial index of the
 * every-marketplace hours: with STAT4, SQLite weighed that one for every
 * statement binding a marketplace and prepared each again at every run,
 * 16 µs a seek of the series' key against 6); each summary its windows'. With no price point
 * stored, every sale is unpriced and no dollar is summed; else the series
 * are summed again, each sale at its point (`stats rebuild`'s work).
 */
export function usdSeriesMigration(db: Db): void {
  db.exec(`
    ALTER TABLE sales_series ADD COLUMN volume_usd TEXT NOT NULL DEFAULT '0';
    ALTER TABLE sales_series ADD COLUMN unpriced INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX sales_series_by_hour ON sales_series (span, marketplace, bucket);
    ${[CLEAN_SUMMARIES, WASH_SUMMARIES].map((t) => ["1d", "7d", "30d"].map((w) => `ALTER TABLE ${t} ADD COLUMN volume_usd_${w} TEXT NOT NULL DEFAULT '0';`).join("\n")).join("\n")}
  `);
  if (db.prepare("SELECT 1 FROM price_points LIMIT 1").get() === undefined) {
    db.exec("UPDATE sales_series SET unpriced = num_sales");
    return;
  }
  new SalesAggregates(db).rebuild();
  keepEverySummary(db);
}
