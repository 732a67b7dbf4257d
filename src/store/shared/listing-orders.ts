import { ORDER_LOGS } from "./order-log.js";
import { REMOVAL_TABLES } from "./removals.js";
import { SALE_LOG_INDEX } from "./ownership.js";

// Migration 40: listings as orders (decisions.md, "Listings as orders"),
// the parts both engines share. A listing's record carries its maker (the
// seller; "" when its indexer sent none) and its expiry (0: none), in its
// table, its log and its removal table, as every other record column.
//
// - Not fillable from its creation: a listing whose maker did not own the
//   token when it was created (another address held it, or it was burned),
//   and any listing of a token burned by then (maker told or not), ends at
//   its createdAt, the way a later move ends it (fillable.ts on
//   each engine: moved_at). The owner at a time is the ownership rule's
//   (decisions.md, "Ownership") over the token's sales and transfers at or
//   before that second; a token none of which is known has no known owner,
//   and its listing stands.
// - Its expiry cuts its spans of activity (the floor at any time leaves it
//   out from expiresAt on, whenever that is read), and lapses it by the
//   clock: `lapsed` marks a CREATED listing past its expiresAt, answered
//   EXPIRED from then (lastUpdatedAt: its expiresAt, or its record's time if
//   later). Every write transaction marks the listings that came due
//   before it commits (one range of the index listings_due, empty almost
//   always), so each lapse is a change like any other: the floor, the
//   token's ask, the collections list's summary, the caches, the listings
//   feed (at a new position) and the webhooks follow it. The server's
//   listing clock (service/listing-clock.ts) commits an empty batch each
//   second so that a lapse needs no other write.
// - A record that changes its expiry clears the mark; the commit marks it
//   again if it is still due.

export const LAPSED = "lapsed";

/** The listings that will lapse, unmarked ones with an expiry whose record says CREATED (a move ending one later than its expiry does not keep it from lapsing): what the partial index listings_due holds, by expiry. */
const LAPSING = `record_status = 'CREATED' AND ${LAPSED} = 0 AND expires_at > 0`;
/** Of those, the ones past their expiry (`now`: the engine's placeholder for the clock's second). */
export const DUE_WHERE = (now: string) => `${LAPSING} AND expires_at <= ${now}`;

/** The migration's columns on either engine (`text`, `int`: its types; the mark is 0 or 1). */
export const LISTING_ORDER_COLUMNS = (text: string, int: string): string =>
  [
    ...["listings", ORDER_LOGS.listings, REMOVAL_TABLES.listings].map(
      (t) => `ALTER TABLE ${t} ADD COLUMN maker ${text} NOT NULL DEFAULT '';
  ALTER TABLE ${t} ADD COLUMN expires_at ${int} NOT NULL DEFAULT 0;`,
    ),
    `ALTER TABLE listings ADD COLUMN ${LAPSED} ${int} NOT NULL DEFAULT 0;
  CREATE INDEX listings_due ON listings (expires_at) WHERE ${LAPSING};`,
  ].join("\n  ");

/**
 * The owner of the listing `l`'s token at its creation, as an engine's SQL
 * (`token(x)`: the token's condition on alias x; `ownerOf(bytes)`: the
 * engine's address text of 20 bytes, '' for the zero address): the
 * recipient of its latest transfer or sale at or before createdAt by (block,
 * log index, hash), a sale at the end of its block unless its transaction's
 * transfer is known. NULL when none is known.
 */
export function ownerAtCreation(l: string, token: (x: string) => string, ownerOf: (bytes: string) => string): string {
  return `(SELECT owner FROM (
      SELECT * FROM (SELECT ${ownerOf("t.recipient")} AS owner, t.block, t.log_index, t.hash FROM transfers t
        WHERE ${token("t")} AND t.timestamp <= ${l}.created_at ORDER BY t.block DESC, t.log_index DESC, t.hash DESC LIMIT 1) t1
      UNION ALL
      SELECT * FROM (SELECT ${ownerOf("s.buyer")} AS owner, s.block, ${SALE_LOG_INDEX} AS log_index, s.hash FROM sales s
        WHERE ${token("s")} AND s.timestamp <= ${l}.created_at
          AND NOT EXISTS (SELECT 1 FROM transfers x WHERE x.hash = s.hash AND ${token("x")})
        ORDER BY s.block DESC, s.hash DESC LIMIT 1) s1
      ORDER BY block DESC, log_index DESC, hash DESC LIMIT 1) o)`;
}

/**
 * The time the listing `l` stops being fillable by ownership: its createdAt
 * when its token had been burned by then (owned by nobody: whoever made the
 * listing, maker told or not) or when its maker did not own it then, else
 * `firstMove` (the first move after it).
 */
export function endOfOwnership(l: string, firstMove: string, ownerAt: string): string {
  // The owner at creation is read once in either branch; unknown (NULL) ends nothing.
  const ended = `coalesce(CASE WHEN ${l}.maker = '' THEN ${ownerAt} = '' ELSE ${ownerAt} <> ${l}.maker END, false)`;
  return `CASE WHEN ${ended} THEN ${l}.created_at ELSE ${firstMove} END`;
}

/**
 * The time the listing `l` of an ERC-1155 token stops being fillable
 * (migration 45; decisions.md, "ERC-1155"): its maker's balance of the
 * token, summed from the token's transfers to and from the maker in chain
 * order, falls below its quantity. Its createdAt when the balance after the
 * last such transfer at or before it is below (the maker did not hold the
 * units), else the first later transfer that takes it below; a maker none
 * of whose transfers is known by then holds an unknown balance there, so
 * the listing stands until one takes it below. Sales move no units (their
 * transfers do), and an untold maker ("") no balance: NULL. (`token(x)`:
 * the token's condition on alias x; `maker`: the maker as the engine's
 * bytes, as transfers hold addresses.)
 */
export function endOfBalance(l: string, token: (x: string) => string, maker: string): string {
  const units = `CASE WHEN x.recipient = ${maker} THEN x.amount ELSE 0 END - CASE WHEN x.sender = ${maker} THEN x.amount ELSE 0 END`;
  const order = "ORDER BY x.block, x.log_index, x.hash";
  return `CASE WHEN ${l}.maker = '' THEN NULL ELSE (SELECT min(CASE WHEN b.ts > ${l}.created_at THEN b.ts ELSE ${l}.created_at END) FROM (
      SELECT x.timestamp AS ts, sum(${units}) OVER (${order} ROWS UNBOUNDED PRECEDING) AS held, lead(x.timestamp) OVER (${order}) AS next
      FROM transfers x WHERE ${token("x")} AND (x.sender = ${maker} OR x.recipient = ${maker})) b
    WHERE b.held < ${l}.quantity AND (b.ts > ${l}.created_at OR b.next IS NULL OR b.next > ${l}.created_at)) END`;
}

/** The end of the listing `l`'s activity (its spans' cap): the first of its moved_at and its expiry (`least`: the engine's two-argument minimum, `open`: the open end). */
export function activeUntil(l: string, least: string, open: string): string {
  return `${least}(coalesce(${l}.moved_at, ${open}), CASE WHEN ${l}.expires_at > 0 THEN ${l}.expires_at ELSE ${open} END)`;
}

/**
 * A listing's answer (status, last_updated_at) from its row `l` and its
 * moved_at `moved`: CANCELLED at moved when its record says CREATED and the
 * move came first, EXPIRED at its expiry once lapsed, else the record's
 * (`greatest`: the engine's two-argument maximum).
 */
export function listingAnswer(l: string, moved: string, greatest: string): { status: string; updated: string } {
  const endedByMove = `${l}.record_status = 'CREATED' AND ${moved} IS NOT NULL AND (${l}.${LAPSED} = 0 OR ${moved} < ${l}.expires_at)`;
  const endedByExpiry = `${l}.record_status = 'CREATED' AND ${l}.${LAPSED} = 1`;
  return {
    status: `CASE WHEN ${endedByMove} THEN 'CANCELLED' WHEN ${endedByExpiry} THEN 'EXPIRED' ELSE ${l}.record_status END`,
    updated: `CASE WHEN ${endedByMove} THEN ${greatest}(${l}.record_updated_at, ${moved}) WHEN ${endedByExpiry} THEN ${greatest}(${l}.record_updated_at, ${l}.expires_at) ELSE ${l}.record_updated_at END`,
  };
}
