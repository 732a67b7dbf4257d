import { OPEN_END } from "../shared/listing-spans.js";
import { activeUntil, DUE_WHERE, endOfBalance, endOfOwnership, LAPSED, LISTING_ORDER_COLUMNS, listingAnswer, ownerAtCreation } from "../shared/listing-orders.js";
import { standardIs } from "../shared/token-standard.js";
import { ownerOf, ownerRecomputed } from "./ownership.js";
import { listingJsonSql } from "../shared/wire-rows.js";
import { hexExpr } from "./hex.js";

// Listings that can no longer be filled are not active (migration 9;
// decisions.md, "Fillable listings"): a listing whose token changed hands
// after it was created, by a sale or a transfer, stops being active at that
// moment. listings.moved_at holds that moment (the first sale or transfer
// of the token after created_at); record_status and record_updated_at hold
// what the listing's own records said; status and last_updated_at are what
// the API answers: CANCELLED at moved_at for a listing its record still
// calls CREATED, else the record's. Every read (pages, the status filter,
// the floor's partial index, the feed) reads them and so follows.
//
// Kept by triggers, so every writer path keeps it. A listing's history
// (listing_versions) holds its records' versions only; its spans are those
// versions' spans cut at moved_at. The triggers read a listing's current
// row, not NEW, where two of them fire for one write: SQLite does not
// promise their order.
//
// Migration 40 (shared/listing-orders.ts) made the listing an order: its
// maker's ownership at creation, its expiry and its lapse by the clock. The
// builders take `orders`: false for the statements of the migrations before
// it (its columns do not exist yet), true for every statement since; it
// makes each trigger again with them. Migration 45 judges an ERC-1155
// listing by its maker's balance (endOfBalance) instead: the builders take
// `balances` too, false for migrations 40 to 44 (the standard and the
// amounts came with 42), true since.

/**
 * The first time the token of the listing row `l` changed hands after `l`
 * was created, or NULL. With `orders` (migration 40 on), the transfers are
 * read by the token's key, the table's primary key (a WITHOUT ROWID table's
 * is named sqlite_autoindex_transfers_1): left to choose, the planner took
 * the time index for min(), which walks the collection's transfers from the
 * listing's creation on until one of its token comes, for an old listing of
 * a busy collection all of them (the plan test pins the choice).
 */
const firstMove = (l: string, orders = false) => `(SELECT min(ts) FROM (
    SELECT min(timestamp) AS ts FROM sales WHERE collection_id = ${l}.collection_id AND asset_key = ${l}.asset_key AND timestamp > ${l}.created_at
    UNION ALL
    SELECT min(timestamp) FROM transfers${orders ? " INDEXED BY sqlite_autoindex_transfers_1" : ""}
    WHERE collection_id = ${l}.collection_id AND asset_key = ${l}.asset_key AND timestamp > ${l}.created_at))`;

/**
 * The end of the listing row `l`'s fillability by ownership (migration 40 on: its maker's ownership at creation too; with
 * `balances`, 45 on, an ERC-1155 listing's by its maker's balance).
 */
const endOf = (l: string, orders: boolean, balances = false) => {
  if (!orders) return firstMove(l);
  const token = (x: string) => `${x}.collection_id = ${l}.collection_id AND ${x}.asset_key = ${l}.asset_key`;
  const owned = endOfOwnership(l, firstMove(l, true), ownerAtCreation(l, token, ownerOf));
  return balances ? `CASE WHEN ${standardIs(`${l}.collection_id`, "ERC1155")} THEN ${endOfBalance(l, token, `unhex(substr(${l}.maker, 3))`)} ELSE ${owned} END` : owned;
};

/** moved_at found again for the listings `where` selects. */
export const movedFound = (where: string, orders: boolean, balances = false) => `
  UPDATE listings SET moved_at = ${endOf("listings", orders, balances)} WHERE ${where} AND moved_at IS NOT ${endOf("listings", orders, balances)};`;

/** The token's listings created before an event at NEW.timestamp end there, unless they ended earlier (`balances`: of an ERC-721 token only). */
const movedBy = (balances: boolean) => `
  UPDATE listings SET moved_at = NEW.timestamp
  WHERE collection_id = NEW.collection_id AND asset_key = NEW.asset_key AND created_at < NEW.timestamp
    AND (moved_at IS NULL OR moved_at > NEW.timestamp)${balances ? ` AND ${standardIs("NEW.collection_id", "ERC721")}` : ""};`;

const ENDED = "record_status = 'CREATED' AND moved_at IS NOT NULL";
/** What the API answers for a listing row before migration 40: its record's status and time, or CANCELLED when it moved. */
const EFFECTIVE_BEFORE_40 = {
  status: `CASE WHEN ${ENDED} THEN 'CANCELLED' ELSE record_status END`,
  updated: `CASE WHEN ${ENDED} THEN max(record_updated_at, moved_at) ELSE record_updated_at END`,
};
const effective = (orders: boolean) => (orders ? listingAnswer("listings", "listings.moved_at", "max") : EFFECTIVE_BEFORE_40);

/**
 * The active spans of the listing `id` rebuilt from its versions, cut at
 * its moved_at: from its creation until its first version, and from each
 * version with status CREATED until the next one (migrations.ts spansOf).
 */
export const spansRebuilt = (id: string, orders: boolean) => `
  DELETE FROM listing_spans WHERE listing_id = ${id};
  INSERT INTO listing_spans (listing_id, active_from, active_until, collection_id, marketplace, marketplace_id, price)
  SELECT listing_id, active_from, min(active_until, cap), collection_id, marketplace, marketplace_id, price FROM (
    SELECT l.id AS listing_id, max(v.updated_at, l.created_at) AS active_from, coalesce(v.next, ${OPEN_END}) AS active_until,
      ${orders ? activeUntil("l", "min", String(OPEN_END)) : `coalesce(l.moved_at, ${OPEN_END})`} AS cap, l.collection_id, l.marketplace, l.marketplace_id, v.price
    FROM listings l JOIN (
      SELECT listing_id, updated_at, price, status, lead(updated_at) OVER (ORDER BY updated_at) AS next
      FROM listing_versions WHERE listing_id = ${id}) v ON v.listing_id = l.id
    WHERE l.id = ${id} AND v.status = 'CREATED'
    UNION ALL
    SELECT l.id, l.created_at, v.updated_at, ${orders ? activeUntil("l", "min", String(OPEN_END)) : `coalesce(l.moved_at, ${OPEN_END})`}, l.collection_id, l.marketplace, l.marketplace_id, v.price
    FROM listings l JOIN listing_versions v ON v.listing_id = l.id
    WHERE l.id = ${id} AND v.updated_at = (SELECT min(updated_at) FROM listing_versions WHERE listing_id = l.id))
  WHERE active_from < min(active_until, cap);`;

/** NEW's record version kept, and its spans rebuilt. */
const versionKept = (orders: boolean) => `
    INSERT INTO listing_versions VALUES (NEW.id, NEW.record_updated_at, NEW.price, NEW.record_status)
      ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = excluded.price, status = excluded.status;
    ${spansRebuilt("NEW.id", orders)}`;

/**
 * Of a transfer (its columns as `row` names them), the listings whose owner
 * at creation it may change, found again: those made from its second on,
 * or from that of the sale of its transaction when the sale came first. A
 * sale whose transfer is known stands at the transfer's place
 * (ownerAtCreation): its buyer no longer owns from the sale's second, so a
 * listing made between the two is judged again (the sale is found by its key).
 */
export const transferListingsJudged = (row: (column: string) => string, balances: boolean) => {
  const at = row("timestamp");
  const sale = `SELECT timestamp FROM sales WHERE hash = ${row("hash")} AND collection_id = ${row("collection_id")} AND asset_key = ${row("asset_key")}`;
  return movedFound(`collection_id = ${row("collection_id")} AND asset_key = ${row("asset_key")} AND created_at >= min(${at}, coalesce((${sale}), ${at}))`, true, balances);
};

/**
 * Of a transfer (its columns as `row` names them), the listings of its token
 * made by its sender or recipient, found again: an ERC-1155 listing ends by
 * its maker's balance, which the transfer moves whenever it was made.
 */
export const makersListingsJudged = (row: (column: string) => string) =>
  movedFound(`collection_id = ${row("collection_id")} AND asset_key = ${row("asset_key")} AND maker IN (${ownerOf(row("sender"))}, ${ownerOf(row("recipient"))})`, true, true);

/** Of a token event's (NEW) token, the listings it may end: those created before it; with orders, those whose owner at creation it may change too; with balances, its makers'. */
const eventMoves = (orders: boolean, balances: boolean) => {
  if (!orders) return movedBy(false);
  const row = (c: string) => `NEW.${c}`;
  return `${movedBy(balances)}
    ${transferListingsJudged(row, balances)}${balances ? `
    ${makersListingsJudged(row)}` : ""}`;
};

/** The trigger that ends the listings of a transfer's token (eventMoves). */
const transfersListingsMoved = (orders: boolean, balances: boolean) => `CREATE TRIGGER transfers_listings_moved AFTER INSERT ON transfers BEGIN
    ${eventMoves(orders, balances)}
  END;`;

/** The triggers that keep fillable listings, as migration 9 made them (`orders` false), as migration 40 makes them again, and 45 (`balances`). */
export function fillableTriggers(orders: boolean, balances = false): string {
  const answer = effective(orders);
  // With orders, a move of an event's block or recipient can change who owned a token when a listing was made.
  const eventChanged = (recipient: string) => (orders ? `timestamp, block, ${recipient}` : "timestamp");
  const changedWhen = (recipient: string) =>
    orders
      ? `OLD.timestamp IS NOT NEW.timestamp OR OLD.block IS NOT NEW.block OR OLD.${recipient} IS NOT NEW.${recipient}`
      : "OLD.timestamp IS NOT NEW.timestamp";
  return `
  CREATE TRIGGER listings_history_added AFTER INSERT ON listings BEGIN
    ${versionKept(orders)}
  END;
  CREATE TRIGGER listings_history_changed
    AFTER UPDATE OF collection_id, created_at, record_updated_at, price, record_status${orders ? ", expires_at" : ""} ON listings BEGIN
    ${versionKept(orders)}
  END;

  CREATE TRIGGER listings_moved_added AFTER INSERT ON listings BEGIN
    ${movedFound("id = NEW.id", orders, balances)}
  END;
  CREATE TRIGGER listings_moved_again AFTER UPDATE OF collection_id, asset_key, created_at${orders ? ", maker" : ""}${balances ? ", quantity" : ""} ON listings BEGIN
    ${movedFound("id = NEW.id", orders, balances)}
  END;
  CREATE TRIGGER listings_moved AFTER UPDATE OF moved_at ON listings WHEN OLD.moved_at IS NOT NEW.moved_at BEGIN
    ${spansRebuilt("NEW.id", orders)}
    INSERT OR IGNORE INTO listings_refed VALUES (NEW.id);
  END;
  -- An insert sets the answer to the record (record-writes.ts insertAlso); a
  -- move found for it is an update of moved_at, answered here${orders ? ", as is a lapse (the commit's, or an expiry changed)" : ""}.
  CREATE TRIGGER listings_answer_changed AFTER UPDATE OF record_status, record_updated_at, moved_at${orders ? `, ${LAPSED}, expires_at` : ""} ON listings BEGIN
    UPDATE listings SET status = ${answer.status}, last_updated_at = ${answer.updated}
    WHERE id = NEW.id AND (status, last_updated_at) IS NOT (${answer.status}, ${answer.updated});
  END;${orders ? `
  -- A record that changes its expiry clears the lapse; the commit marks it again if it is still due.
  CREATE TRIGGER listings_expiry_changed AFTER UPDATE OF expires_at ON listings WHEN NEW.${LAPSED} = 1 BEGIN
    UPDATE listings SET ${LAPSED} = 0 WHERE id = NEW.id;
  END;` : ""}

  -- A sale inserted ends listings through SALE_LISTINGS_MOVED, run by the
  -- writer (ownership.ts says why not a trigger).
  CREATE TRIGGER sales_listings_moved_again AFTER UPDATE OF ${eventChanged("buyer")} ON sales WHEN ${changedWhen("buyer")} BEGIN
    ${movedFound("collection_id = NEW.collection_id AND asset_key = NEW.asset_key", orders, balances)}
  END;
  ${transfersListingsMoved(orders, balances)}
  CREATE TRIGGER transfers_listings_moved_again AFTER UPDATE OF ${eventChanged("recipient")}${balances ? ", sender, amount" : ""} ON transfers
    WHEN ${changedWhen("recipient")}${balances ? " OR OLD.sender IS NOT NEW.sender OR OLD.amount IS NOT NEW.amount" : ""} BEGIN
    ${movedFound("collection_id = NEW.collection_id AND asset_key = NEW.asset_key", orders, balances)}
  END;${balances ? `
  -- A collection whose standard changes has its listings judged by the other rule.
  CREATE TRIGGER collections_listings_judged AFTER UPDATE OF token_standard ON collections WHEN OLD.token_standard IS NOT NEW.token_standard BEGIN
    ${movedFound("collection_id = NEW.id", true, true)}
  END;` : ""}
`;
}

export const FILLABLE_SCHEMA = `
  ALTER TABLE listings ADD COLUMN record_status TEXT NOT NULL DEFAULT '';
  ALTER TABLE listings ADD COLUMN record_updated_at INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE listings ADD COLUMN moved_at INTEGER;
  UPDATE listings SET record_status = status, record_updated_at = last_updated_at;
  -- Listings whose answer a sale or transfer changed: given a feed position
  -- by the writer before it commits (record-writes.ts beforeCommit).
  CREATE TABLE listings_refed (id INTEGER PRIMARY KEY);

  DROP TRIGGER listings_history_added;
  DROP TRIGGER listings_history_changed;
  ${fillableTriggers(false)}
`;

/**
 * Migration 9's backfill: each listing's moved_at from the sales and
 * transfers already held (the triggers above rebuild the spans and answers
 * of those that moved). The moved listings keep their feed positions.
 */
export const FILLABLE_BACKFILL = `
  ${movedFound("true", false)}
  DELETE FROM listings_refed;
`;

/** The triggers migration 40 makes again, and those of reorganisations (reorgs.ts) that end listings. */
export const REMADE = [
  "listings_history_added", "listings_history_changed", "listings_moved_added", "listings_moved_again", "listings_moved", "listings_answer_changed",
  "sales_listings_moved_again", "transfers_listings_moved", "transfers_listings_moved_again", "sales_removed", "transfers_removed",
];

/**
 * Migration 40: listings as orders (shared/listing-orders.ts): the columns,
 * the index of the listings coming due, and every trigger that ends a
 * listing or rebuilds its spans made again with them. No listing had a
 * maker or an expiry before, so none changes; its ready answers are
 * written again (wire-rows.ts) as they now hold both.
 */
export const LISTING_ORDERS_SCHEMA = `
  ${LISTING_ORDER_COLUMNS("TEXT", "INTEGER")}
  ${REMADE.map((t) => `DROP TRIGGER ${t};`).join("\n  ")}
  ${fillableTriggers(true)}
  ${eventRemovedTriggers(true)}
  -- The ready JSON from the row as it is now, not NEW: the answer's trigger
  -- may run before or after it for one write (migration 26's read NEW, right
  -- only while the answer's trigger was the older of the two).
  DROP TRIGGER listings_wire_changed;
  ${listingWireTrigger("")}
`;

/** The trigger that keeps a listing's whole ready JSON (wire-rows.ts), reading its columns from `row` ("NEW.", as migration 26 made it, or "" since 40). */
export function listingWireTrigger(row: string): string {
  return `
  CREATE TRIGGER listings_wire_changed AFTER UPDATE OF status, last_updated_at, wire_json_head, wire_json_middle, block, block_hash ON listings BEGIN
    UPDATE listings SET wire_json = ${listingJsonSql(row, hexExpr)} WHERE id = NEW.id;
  END;`;
}

/** What a sale or transfer taken back (deleted: a reorganisation) does to its token: owner and listings found again (reorgs.ts, migration 24; again at 40 and 45). */
export function eventRemovedTriggers(orders: boolean, balances = false): string {
  return `
  CREATE TRIGGER sales_removed AFTER DELETE ON sales BEGIN
    ${ownerRecomputed("OLD")}
    ${movedFound("collection_id = OLD.collection_id AND asset_key = OLD.asset_key", orders, balances)}
  END;
  CREATE TRIGGER transfers_removed AFTER DELETE ON transfers BEGIN
    ${ownerRecomputed("OLD")}
    ${movedFound("collection_id = OLD.collection_id AND asset_key = OLD.asset_key", orders, balances)}
  END;`;
}

/**
 * What a sale inserted does to its token's listings (NEW's columns as named parameters): those created before it end at its time
 * (of an ERC-721 token: a sale moves no ERC-1155 units, its transfer does); those made at or after it are found again (who owned
 * the token at their creation).
 */
export const SALE_LISTINGS_MOVED: readonly string[] = [
  `UPDATE listings SET moved_at = @timestamp
  WHERE collection_id = @collection_id AND asset_key = @asset_key AND created_at < @timestamp
    AND (moved_at IS NULL OR moved_at > @timestamp) AND ${standardIs("@collection_id", "ERC721")}`,
  movedFound("collection_id = @collection_id AND asset_key = @asset_key AND created_at >= @timestamp", true, true),
];

/**
 * Migration 43: the transfers' trigger made again to judge again the
 * listings made between a sale and its transaction's later transfer
 * (transferListingsJudged; migration 40's missed them), and those listings
 * found again. Each such token's listings keep their feed positions, as
 * migration 9's backfill left them.
 */
export const SALE_TRANSFER_GAP_MIGRATION = `
  DROP TRIGGER transfers_listings_moved;
  ${transfersListingsMoved(true, false)}
  ${movedFound(`(collection_id, asset_key) IN (SELECT t.collection_id, t.asset_key FROM transfers t
    JOIN sales s ON s.hash = t.hash AND s.collection_id = t.collection_id AND s.asset_key = t.asset_key WHERE s.timestamp < t.timestamp)`, true)}
  DELETE FROM listings_refed;
`;

/** The triggers migration 45 makes again (REMADE and the expiry's, 40's), and the one it adds. */
const REMADE_45 = [...REMADE, "listings_expiry_changed"];
export const BALANCE_RULE_TRIGGERS = [...REMADE_45, "collections_listings_judged"];

/**
 * Migration 45: an ERC-1155 listing judged by its maker's balance
 * (shared/listing-orders.ts endOfBalance): every trigger that ends a
 * listing made again with the rule, and the listings of ERC-1155
 * collections found again (their spans rebuilt by the triggers; they keep
 * their feed positions, as 9's and 43's left them).
 */
export const BALANCE_RULE_MIGRATION = `
  ${REMADE_45.map((t) => `DROP TRIGGER ${t};`).join("\n  ")}
  ${fillableTriggers(true, true)}
  ${eventRemovedTriggers(true, true)}
  ${movedFound(standardIs("listings.collection_id", "ERC1155"), true, true)}
  DELETE FROM listings_refed;
`;

/** The listings that came due by the clock's second `?` (shared/listing-orders.ts), marked lapsed: their ids and collections. */
export const LAPSE_DUE = `UPDATE listings INDEXED BY listings_due SET ${LAPSED} = 1 WHERE ${DUE_WHERE("?")} RETURNING id, collection_id`;
