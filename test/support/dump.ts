import { openReadOnly } from "../../src/store/sqlite/database.js";
import { FED_AT } from "../../src/store/shared/token-feed.js";

const TABLES = ["collections", "tokens", "appraisals", "rarity", "sales", "listings", "transfers", "offers", "social_users", "influencers", "tweets", "scores", "sales_hourly"];

/** Columns holding the writer's clock (when a token's record was written: shared/token-feed.ts), not the data's. */
const CLOCK_COLUMNS = new Set([FED_AT]);

/**
 * Every data table's rows in a stable order (API keys left out); with
 * `clock: false`, without the columns that hold the writer's clock (two
 * builds of the same data at two times differ there only).
 */
export function dumpStore(path: string, options: { clock?: boolean } = {}): Record<string, unknown[]> {
  const db = openReadOnly(path);
  try {
    return Object.fromEntries(
      TABLES.map((t) => {
        const names = (db.prepare(`SELECT name FROM pragma_table_info('${t}')`).pluck().all() as string[]).filter((c) => options.clock !== false || !CLOCK_COLUMNS.has(c));
        return [t, db.prepare(`SELECT ${names.join(", ")} FROM ${t} ORDER BY ${names.join(", ")}`).all()];
      }),
    );
  } finally {
    db.close();
  }
}

export function rowCounts(path: string): Record<string, number> {
  return Object.fromEntries(Object.entries(dumpStore(path)).map(([t, rows]) => [t, rows.length]));
}
