// The listings' history on PostgreSQL (store/sqlite/migrations.ts explains
// it): every version a write names, the last line of a (listing,
// lastUpdatedAt) winning, and the spans each listing was active at a price,
// rebuilt from its versions. Set-based, after the merge of listings: every
// line of a file is a version, not only the last line of each listing that
// the merge writes (as SQLite's triggers see each line's write).

/** The end of a listing's span still active. */
export const OPEN_END = Number.MAX_SAFE_INTEGER;

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
  "DELETE FROM listing_spans WHERE listing_id IN (SELECT id FROM staged_listings)",
  spansOf("SELECT * FROM staged_listings", "(SELECT v.* FROM listing_versions v JOIN staged_listings s ON s.id = v.listing_id)"),
];

/**
 * The active spans of the listings `listings` selects, from their versions
 * (store/sqlite/migrations.ts spansOf: the same rules).
 */
export function spansOf(listings: string, versions: string): string {
  return `
  INSERT INTO listing_spans (listing_id, active_from, active_until, collection_id, marketplace, marketplace_id, price)
  SELECT l.id, greatest(v.updated_at, l.created_at), coalesce(v.next, ${OPEN_END}), l.collection_id, l.marketplace, l.marketplace_id, v.price
  FROM (${listings}) l JOIN (
    SELECT listing_id, updated_at, price, status, lead(updated_at) OVER (PARTITION BY listing_id ORDER BY updated_at) AS next
    FROM ${versions} x) v ON v.listing_id = l.id
  WHERE v.status = 'CREATED' AND greatest(v.updated_at, l.created_at) < coalesce(v.next, ${OPEN_END})
  UNION ALL
  SELECT l.id, l.created_at, v.updated_at, l.collection_id, l.marketplace, l.marketplace_id, v.price
  FROM (${listings}) l CROSS JOIN LATERAL (
    SELECT updated_at, price FROM listing_versions WHERE listing_id = l.id ORDER BY updated_at LIMIT 1) v
  WHERE l.created_at < v.updated_at;`;
}
