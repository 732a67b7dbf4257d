import { OPEN_END } from "../shared/listing-spans.js";
import { LAPSE_OF_STAGED_LISTINGS, MOVED_OF_STAGED_LISTINGS, movedFound } from "./fillable.js";
import { activeUntil } from "../shared/listing-orders.js";

// The listings' history on PostgreSQL (store/sqlite/migrations.ts explains
// it): every version a write names, the last line of a (listing,
// lastUpdatedAt) winning, and the spans each listing was active at a price,
// rebuilt from its versions. Set-based, after the merge of listings: every
// line of a file is a version, not only the last line of each listing that
// the merge writes (as SQLite's triggers see each line's write).

/** Run after the merge of the staged listings. */
export const KEEP_LISTING_HISTORY: readonly string[] = [
  `CREATE TEMP TABLE staged_listings ON COMMIT DROP AS
   SELECT DISTINCT l.id, l.collection_id, l.marketplace, l.marketplace_id, l.created_at
   FROM listings l JOIN stage st ON st.marketplace = l.marketplace AND st.marketplace_id = l.marketplace_id`,
  `INSERT INTO listing_versions (listing_id, updated_at, price, status)
   SELECT DISTINCT ON (l.id, st.last_updated_at) l.id, st.last_updated_at, st.price, st.status
   FROM stage st JOIN staged_listings l ON l.marketplace = st.marketplace AND l.marketplace_id = st.marketplace_id
   ORDER BY l.id, st.last_updated_at, st.line DESC
   ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = EXCLUDED.price, status = EXCLUDED.status`,
  // Each staged listing's lapse, moved_at and answer (fillable.ts): its record may have changed its creation time, maker or expiry.
  LAPSE_OF_STAGED_LISTINGS,
  MOVED_OF_STAGED_LISTINGS,
  "DELETE FROM listing_spans WHERE listing_id IN (SELECT id FROM staged_listings)",
  spansOf(
    "SELECT s.*, l.moved_at, l.expires_at FROM staged_listings s JOIN listings l ON l.id = s.id",
    "(SELECT v.* FROM listing_versions v JOIN staged_listings s ON s.id = v.listing_id)",
    "orders",
  ),
];

/**
 * The active spans of the listings `listings` selects, from their versions
 * (store/sqlite/migrations.ts spansOf: the same rules); when `capped`, cut
 * at each listing's moved_at (fillable.ts), and with "orders" (migration 40
 * on) at its expiry too, which `listings` then selects as well.
 */
export function spansOf(listings: string, versions: string, capped: false | "moved" | "orders" = false): string {
  const cap = capped === "orders" ? activeUntil("l", "least", String(OPEN_END)) : `coalesce(l.moved_at, ${OPEN_END})`;
  const spans = `
  SELECT l.id AS listing_id, greatest(v.updated_at, l.created_at) AS active_from, coalesce(v.next, ${OPEN_END}) AS active_until,
    l.collection_id, l.marketplace, l.marketplace_id, v.price${capped ? `, ${cap} AS cap` : ""}
  FROM (${listings}) l JOIN (
    SELECT listing_id, updated_at, price, status, lead(updated_at) OVER (PARTITION BY listing_id ORDER BY updated_at) AS next
    FROM ${versions} x) v ON v.listing_id = l.id
  WHERE v.status = 'CREATED' AND greatest(v.updated_at, l.created_at) < coalesce(v.next, ${OPEN_END})
  UNION ALL
  SELECT l.id, l.created_at, v.updated_at, l.collection_id, l.marketplace, l.marketplace_id, v.price${capped ? `, ${cap}` : ""}
  FROM (${listings}) l CROSS JOIN LATERAL (
    SELECT updated_at, price FROM listing_versions WHERE listing_id = l.id ORDER BY updated_at LIMIT 1) v
  WHERE l.created_at < v.updated_at`;
  const columns = "listing_id, active_from, active_until, collection_id, marketplace, marketplace_id, price";
  return capped
    ? `INSERT INTO listing_spans (${columns})
  SELECT listing_id, active_from, least(active_until, cap), collection_id, marketplace, marketplace_id, price FROM (${spans}) s
  WHERE active_from < least(active_until, cap);`
    : `INSERT INTO listing_spans (${columns})${spans};`;
}

/**
 * After a merge of sales or transfers, under the listings' lock (`lock`:
 * their feed positions in commit order): the listings of the tokens
 * `tokens` names (collection_id, asset_id) whose token moved since they
 * were created end there (fillable.ts), at new feed positions, their spans
 * rebuilt.
 */
export function listingsMovedBy(tokens: string, lock: string): string[] {
  return [
    lock,
    "CREATE TEMP TABLE IF NOT EXISTS moved_listings (id bigint PRIMARY KEY) ON COMMIT DELETE ROWS",
    "TRUNCATE moved_listings",
    movedFound(`SELECT l.id FROM listings l JOIN (${tokens}) a ON l.collection_id = a.collection_id AND l.asset_id = a.asset_id`, "moved_listings", true),
    "DELETE FROM listing_spans WHERE listing_id IN (SELECT id FROM moved_listings)",
    spansOf(
      "SELECT l.id, l.collection_id, l.marketplace, l.marketplace_id, l.created_at, l.moved_at, l.expires_at FROM listings l JOIN moved_listings m ON m.id = l.id",
      "(SELECT v.* FROM listing_versions v JOIN moved_listings m ON m.id = v.listing_id)",
      "orders",
    ),
  ];
}

/** Migration 8's backfill: every listing's moved_at from the sales and transfers held; the moved keep their feed positions. */
export const FILLABLE_BACKFILL: readonly string[] = [
  "CREATE TEMP TABLE moved_listings (id bigint PRIMARY KEY) ON COMMIT DROP",
  movedFound("SELECT id FROM listings", "moved_listings", false),
  "DELETE FROM listing_spans WHERE listing_id IN (SELECT id FROM moved_listings)",
  spansOf(
    "SELECT l.id, l.collection_id, l.marketplace, l.marketplace_id, l.created_at, l.moved_at FROM listings l JOIN moved_listings m ON m.id = l.id",
    "(SELECT v.* FROM listing_versions v JOIN moved_listings m ON m.id = v.listing_id)",
    "moved",
  ),
];
