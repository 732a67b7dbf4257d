import { OPEN_END } from "../shared/listing-spans.js";

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

/** The first time the token of the listing row `l` changed hands after `l` was created, or NULL. */
const firstMove = (l: string) => `(SELECT min(ts) FROM (
    SELECT min(timestamp) AS ts FROM sales WHERE collection_id = ${l}.collection_id AND asset_key = ${l}.asset_key AND timestamp > ${l}.created_at
    UNION ALL
    SELECT min(timestamp) FROM transfers WHERE collection_id = ${l}.collection_id AND asset_key = ${l}.asset_key AND timestamp > ${l}.created_at))`;

/** moved_at found again for the listings `where` selects. */
export const movedFound = (where: string) => `
  UPDATE listings SET moved_at = ${firstMove("listings")} WHERE ${where} AND moved_at IS NOT ${firstMove("listings")};`;

/** The token's listings created before an event at NEW.timestamp end there, unless they ended earlier. */
const movedBy = `
  UPDATE listings SET moved_at = NEW.timestamp
  WHERE collection_id = NEW.collection_id AND asset_key = NEW.asset_key AND created_at < NEW.timestamp
    AND (moved_at IS NULL OR moved_at > NEW.timestamp);`;

const ENDED = "record_status = 'CREATED' AND moved_at IS NOT NULL";
/** What the API answers for a listing row: its record's status and time, or CANCELLED when it moved. */
const EFFECTIVE_STATUS = `CASE WHEN ${ENDED} THEN 'CANCELLED' ELSE record_status END`;
const EFFECTIVE_UPDATED = `CASE WHEN ${ENDED} THEN max(record_updated_at, moved_at) ELSE record_updated_at END`;

/**
 * The active spans of the listing `id` rebuilt from its versions, cut at
 * its moved_at: from its creation until its first version, and from each
 * version with status CREATED until the next one (migrations.ts spansOf).
 */
export const spansRebuilt = (id: string) => `
  DELETE FROM listing_spans WHERE listing_id = ${id};
  INSERT INTO listing_spans (listing_id, active_from, active_until, collection_id, marketplace, marketplace_id, price)
  SELECT listing_id, active_from, min(active_until, cap), collection_id, marketplace, marketplace_id, price FROM (
    SELECT l.id AS listing_id, max(v.updated_at, l.created_at) AS active_from, coalesce(v.next, ${OPEN_END}) AS active_until,
      coalesce(l.moved_at, ${OPEN_END}) AS cap, l.collection_id, l.marketplace, l.marketplace_id, v.price
    FROM listings l JOIN (
      SELECT listing_id, updated_at, price, status, lead(updated_at) OVER (ORDER BY updated_at) AS next
      FROM listing_versions WHERE listing_id = ${id}) v ON v.listing_id = l.id
    WHERE l.id = ${id} AND v.status = 'CREATED'
    UNION ALL
    SELECT l.id, l.created_at, v.updated_at, coalesce(l.moved_at, ${OPEN_END}), l.collection_id, l.marketplace, l.marketplace_id, v.price
    FROM listings l JOIN listing_versions v ON v.listing_id = l.id
    WHERE l.id = ${id} AND v.updated_at = (SELECT min(updated_at) FROM listing_versions WHERE listing_id = l.id))
  WHERE active_from < min(active_until, cap);`;

/** NEW's record version kept, and its spans rebuilt. */
const VERSION_KEPT = `
    INSERT INTO listing_versions VALUES (NEW.id, NEW.record_updated_at, NEW.price, NEW.record_status)
      ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = excluded.price, status = excluded.status;
    ${spansRebuilt("NEW.id")}`;

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
  CREATE TRIGGER listings_history_added AFTER INSERT ON listings BEGIN
    ${VERSION_KEPT}
  END;
  CREATE TRIGGER listings_history_changed
    AFTER UPDATE OF collection_id, created_at, record_updated_at, price, record_status ON listings BEGIN
    ${VERSION_KEPT}
  END;

  CREATE TRIGGER listings_moved_added AFTER INSERT ON listings BEGIN
    ${movedFound("id = NEW.id")}
  END;
  CREATE TRIGGER listings_moved_again AFTER UPDATE OF collection_id, asset_key, created_at ON listings BEGIN
    ${movedFound("id = NEW.id")}
  END;
  CREATE TRIGGER listings_moved AFTER UPDATE OF moved_at ON listings WHEN OLD.moved_at IS NOT NEW.moved_at BEGIN
    ${spansRebuilt("NEW.id")}
    INSERT OR IGNORE INTO listings_refed VALUES (NEW.id);
  END;
  -- An insert sets the answer to the record (record-writes.ts insertAlso); a
  -- move found for it is an update of moved_at, answered here.
  CREATE TRIGGER listings_answer_changed AFTER UPDATE OF record_status, record_updated_at, moved_at ON listings BEGIN
    UPDATE listings SET status = ${EFFECTIVE_STATUS}, last_updated_at = ${EFFECTIVE_UPDATED}
    WHERE id = NEW.id AND (status, last_updated_at) IS NOT (${EFFECTIVE_STATUS}, ${EFFECTIVE_UPDATED});
  END;

  -- A sale inserted ends listings through SALE_LISTINGS_MOVED, run by the
  -- writer (ownership.ts says why not a trigger).
  CREATE TRIGGER sales_listings_moved_again AFTER UPDATE OF timestamp ON sales WHEN OLD.timestamp IS NOT NEW.timestamp BEGIN
    ${movedFound("collection_id = NEW.collection_id AND asset_key = NEW.asset_key")}
  END;
  CREATE TRIGGER transfers_listings_moved AFTER INSERT ON transfers BEGIN
    ${movedBy}
  END;
  CREATE TRIGGER transfers_listings_moved_again AFTER UPDATE OF timestamp ON transfers WHEN OLD.timestamp IS NOT NEW.timestamp BEGIN
    ${movedFound("collection_id = NEW.collection_id AND asset_key = NEW.asset_key")}
  END;
`;

/**
 * Migration 9's backfill: each listing's moved_at from the sales and
 * transfers already held (the triggers above rebuild the spans and answers
 * of those that moved). The moved listings keep their feed positions.
 */
export const FILLABLE_BACKFILL = `
  ${movedFound("true")}
  DELETE FROM listings_refed;
`;

/** What a sale inserted does to its token's listings (NEW's columns as named parameters): those created before it end at its time. */
export const SALE_LISTINGS_MOVED = `
  UPDATE listings SET moved_at = @timestamp
  WHERE collection_id = @collection_id AND asset_key = @asset_key AND created_at < @timestamp
    AND (moved_at IS NULL OR moved_at > @timestamp)`;
