import { openReadOnly } from "../../src/store/sqlite/database.js";

const TABLES = ["collections", "tokens", "appraisals", "rarity", "sales", "listings", "transfers", "offers", "social_users", "influencers", "tweets", "scores", "sales_hourly"];

/** Every data table's rows in a stable order (API keys left out). */
export function dumpStore(path: string): Record<string, unknown[]> {
  const db = openReadOnly(path);
  try {
    return Object.fromEntries(
      TABLES.map((t) => {
        const columns = (db.prepare(`SELECT name FROM pragma_table_info('${t}')`).pluck().all() as string[]).join(", ");
        return [t, db.prepare(`SELECT * FROM ${t} ORDER BY ${columns}`).all()];
      }),
    );
  } finally {
    db.close();
  }
}

export function rowCounts(path: string): Record<string, number> {
  return Object.fromEntries(Object.entries(dumpStore(path)).map(([t, rows]) => [t, rows.length]));
}
