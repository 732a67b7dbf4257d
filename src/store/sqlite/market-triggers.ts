import { BALANCE_TRIGGERS, BALANCES_RECOMPUTED } from "./balances.js";
import type { Db } from "./db.js";
import { movedFound } from "./fillable.js";
import { ownerRecomputed } from "./ownership.js";
import { askFound } from "./token-market.js";

// A bulk import of sales, transfers or listings (importer.ts bulk mode)
// writes its rows without the triggers that move owners, end listings and
// keep tokens' asks and balances row by row (ownership.ts, fillable.ts,
// token-market.ts, balances.ts):
// they are dropped with the table's indexes (which they would read) and,
// once the indexes are back, what they keep is found again set-based
// for every collection the import wrote, a statement per collection whose
// cost follows its tokens and listings, not the rows imported.

/** The triggers of each table that keep owners and fillable listings (a sale inserted: the writer's own statements, skipped in bulk mode). */
const MARKET_TRIGGERS: Readonly<Record<string, readonly string[]>> = {
  sales: ["sales_owner_changed", "sales_listings_moved_again"],
  transfers: ["transfers_owner_added", "transfers_owner_changed", "transfers_listings_moved", "transfers_listings_moved_again", ...BALANCE_TRIGGERS],
  listings: ["listings_ask_added", "listings_ask_changed"],
};

/** Each collection's tokens (a row for every token an event names), owners and ended listings, found again. */
const RECOMPUTE = [
  "INSERT INTO tokens (collection_id, asset_key, recorded) SELECT DISTINCT collection_id, asset_key, 0 FROM sales WHERE collection_id = ? ON CONFLICT DO NOTHING",
  "INSERT INTO tokens (collection_id, asset_key, recorded) SELECT DISTINCT collection_id, asset_key, 0 FROM transfers WHERE collection_id = ? ON CONFLICT DO NOTHING",
  ownerRecomputed("tokens", "tokens.collection_id = ?"),
  movedFound("collection_id = ?", true, true),
  askFound("tokens", "tokens.collection_id = ?"),
];

/** What a table's own triggers kept beyond RECOMPUTE's, found again: the transfers' balances (balances.ts). */
const RECOMPUTE_OF: Readonly<Record<string, readonly string[]>> = { transfers: BALANCES_RECOMPUTED };

/**
 * Drops `table`'s market triggers (none for other tables); the function it
 * returns puts them back and recomputes what they keep for `collections`.
 */
export function deferMarketTriggers(db: Db, table: string): ((collections: Iterable<number>) => void) | undefined {
  const names = MARKET_TRIGGERS[table] ?? [];
  if (names.length === 0) return undefined;
  const triggers = db
    .prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (${names.map(() => "?").join(", ")})`)
    .all(...names) as { name: string; sql: string }[];
  for (const { name } of triggers) db.exec(`DROP TRIGGER ${name}`);
  return (collections) => {
    for (const { sql } of triggers) db.exec(sql);
    const statements = [...RECOMPUTE, ...(RECOMPUTE_OF[table] ?? [])].map((sql) => db.prepare(sql));
    for (const id of collections) for (const s of statements) s.run(id);
  };
}
