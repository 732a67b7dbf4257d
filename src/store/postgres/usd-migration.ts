import { USD_SUMMARIES_MIGRATION } from "./collection-summaries.js";
import { freshSeriesSql } from "./sales-series.js";

/**
 * Migration 34 (docs/money.md, "USD kept with the series"), as SQLite's:
 * each series interval keeps its sales' US dollars (volume_usd, exact;
 * unpriced, the sales with no point in force), found for a price point by
 * an index of the every-marketplace hours; each summary its windows'. With
 * no price point stored every sale is unpriced, else the series are summed
 * again, each sale at its point.
 */
export const USD_SERIES_MIGRATION = `
  ALTER TABLE sales_series ADD COLUMN volume_usd numeric NOT NULL DEFAULT 0, ADD COLUMN unpriced bigint NOT NULL DEFAULT 0;
  CREATE INDEX sales_series_by_hour ON sales_series (span, bucket) WHERE marketplace = '';
  UPDATE sales_series SET unpriced = num_sales WHERE NOT EXISTS (SELECT 1 FROM price_points);
  DELETE FROM sales_series WHERE EXISTS (SELECT 1 FROM price_points);
  INSERT INTO sales_series SELECT * FROM (${freshSeriesSql("wash_flags = 0")}) f WHERE EXISTS (SELECT 1 FROM price_points);
  ${USD_SUMMARIES_MIGRATION}`;
