import { DUE_WHERE, endOfBalance, endOfOwnership, LAPSED, listingAnswer, ownerAtCreation } from "../shared/listing-orders.js";
import { standardIs } from "../shared/token-standard.js";
import { ownerOf } from "./ownership.js";

// Listings that can no longer be filled are not active, as in SQLite
// (store/sqlite/fillable.ts explains the columns; decisions.md, "Fillable
// listings"): a listing whose token changed hands after it was created, by
// a sale or a transfer, answers CANCELLED from that moment (moved_at), and
// its spans end there. Here set-based: after a merge of listings, for the
// listings it staged (MOVED_OF_STAGED_LISTINGS), and after a merge of sales
// or transfers, for the listings of the tokens it staged
// (listing-history.ts listingsMovedBy).

/** The clock's second, as the merge's statements read it (floor: a cast alone rounds up half the time). */
const NOW = "floor(extract(epoch FROM statement_timestamp()))::bigint";

/** The first time the token of listing row `l` changed hands after `l` was created (NULL: never). */
export const firstMove = (l: string) => `(SELECT min(ts) FROM (
    (SELECT s.timestamp AS ts FROM sales s WHERE s.collection_id = ${l}.collection_id AND s.asset_id = ${l}.asset_id
       AND s.timestamp > ${l}.created_at ORDER BY s.timestamp LIMIT 1)
    UNION ALL
    (SELECT t.timestamp FROM transfers t WHERE t.collection_id = ${l}.collection_id AND t.asset_id = ${l}.asset_id
       AND t.timestamp > ${l}.created_at ORDER BY t.timestamp LIMIT 1)) x)`;

/**
 * A listing's answer (status, last_updated_at) for its row `l` and its
 * moved_at `moved`: CANCELLED at moved when its record says CREATED; with
 * `orders` (migration 40 on), EXPIRED at its expiry once lapsed, unless the
 * move came first (shared/listing-orders.ts).
 */
export const answerOf = (l: string, moved: string, orders: boolean) =>
  orders
    ? listingAnswer(l, moved, "greatest")
    : {
        status: `CASE WHEN ${l}.record_status = 'CREATED' AND ${moved} IS NOT NULL THEN 'CANCELLED' ELSE ${l}.record_status END`,
        updated: `CASE WHEN ${l}.record_status = 'CREATED' AND ${moved} IS NOT NULL THEN greatest(${l}.record_updated_at, ${moved}) ELSE ${l}.record_updated_at END`,
      };

/**
 * The end of the listing row `l`'s fillability by ownership; with `orders`, its maker's ownership at creation too, and an
 * ERC-1155 listing's by its maker's balance (SQLite's migration 45: these statements run at the schema's latest).
 */
const endOf = (l: string, orders: boolean) => {
  if (!orders) return firstMove(l);
  const token = (x: string) => `${x}.collection_id = ${l}.collection_id AND ${x}.asset_id = ${l}.asset_id`;
  return `CASE WHEN ${standardIs(`${l}.collection_id`, "ERC1155")} THEN ${endOfBalance(l, token, `decode(substr(${l}.maker, 3), 'hex')`)}
    ELSE ${endOfOwnership(l, firstMove(l), ownerAtCreation(l, token, ownerOf))} END`;
};

/**
 * The listings `listings` selects (their ids) given their moved_at found
 * again and their answers. With `into`, those it changed take new feed
 * positions and their ids go into that table (their spans to be rebuilt).
 * `orders`: false for migration 8's backfill only (before migration 40's columns).
 */
export function movedFound(listings: string, into: string | undefined, orders: boolean): string {
  const a = answerOf("l", "m.ts", orders);
  const update = `UPDATE listings l SET moved_at = m.ts, status = ${a.status}, last_updated_at = ${a.updated}${into === undefined ? "" : ", feed_seq = nextval('feed_seq')"}
    FROM m WHERE l.id = m.id AND (l.moved_at, l.status, l.last_updated_at) IS DISTINCT FROM (m.ts, ${a.status}, ${a.updated})`;
  // Materialized: the update names m.ts several times, and an inlined m would find each listing's end once per mention.
  return `WITH m AS MATERIALIZED (SELECT l.id, ${endOf("l", orders)} AS ts FROM listings l WHERE l.id IN (${listings}))${
    into === undefined ? ` ${update}` : `, changed AS (${update} RETURNING l.id) INSERT INTO ${into} SELECT id FROM changed`
  }`;
}

/** Each staged listing (listing-history.ts staged_listings) with its moved_at found and its answer set; its feed position is the merge's. */
export const MOVED_OF_STAGED_LISTINGS = movedFound("SELECT id FROM staged_listings", undefined, true);

/**
 * The lapse of the listings `ids` selects as their records leave it
 * (staged, or replayed after a reorganisation): cleared where the expiry
 * a record set is not due (LAPSE_DUE marks again what is), before their
 * answers are set.
 */
export const lapseCleared = (ids: string) => `UPDATE listings SET ${LAPSED} = 0
  WHERE id IN (${ids}) AND ${LAPSED} = 1 AND NOT (expires_at > 0 AND expires_at <= ${NOW})`;
export const LAPSE_OF_STAGED_LISTINGS = lapseCleared("SELECT id FROM staged_listings");

/**
 * The listings that came due by the clock (shared/listing-orders.ts) marked
 * lapsed, answered and given new feed positions, in one statement (the
 * answer of the row as marked: a SET sees the row as it was): rows `id`,
 * the collections changed. Run under the listings' lock.
 */
export const LAPSE_DUE = (() => {
  const a = listingAnswer("n", "n.moved_at", "greatest");
  return `WITH lapsed AS (
    UPDATE listings l SET ${LAPSED} = 1, status = ${a.status}, last_updated_at = ${a.updated}, feed_seq = nextval('feed_seq')
    FROM (SELECT id, collection_id, record_status, record_updated_at, expires_at, moved_at, 1 AS ${LAPSED} FROM listings
          WHERE ${DUE_WHERE(NOW)}) n
    WHERE l.id = n.id RETURNING l.collection_id)
  SELECT DISTINCT collection_id AS id FROM lapsed`;
})();

/** Migration 8's columns: what the records said, apart from the answer (status, last_updated_at) that follows moved_at. */
export const FILLABLE_COLUMNS = `
  ALTER TABLE listings ADD COLUMN record_status text CHECK (record_status IN ('CREATED', 'FULFILLED', 'CANCELLED', 'EXPIRED')),
    ADD COLUMN record_updated_at bigint, ADD COLUMN moved_at bigint;
  UPDATE listings SET record_status = status, record_updated_at = last_updated_at;
  -- A merge inserts the record's columns; the answer is set right after it
  -- (MOVED_OF_STAGED_LISTINGS), in the same transaction.
  ALTER TABLE listings ALTER COLUMN record_status SET NOT NULL, ALTER COLUMN record_updated_at SET NOT NULL,
    ALTER COLUMN status SET DEFAULT 'CREATED', ALTER COLUMN last_updated_at SET DEFAULT 0;
`;
