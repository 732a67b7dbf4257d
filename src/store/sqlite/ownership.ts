import { SALE_LOG_INDEX } from "../shared/ownership.js";

// Ownership that follows the market (migration 8): a token's owner is the
// recipient of its latest transfer by (block, log index), a sale being a
// transfer too; its token record's owner only until a transfer or sale is
// known (decisions.md, "Ownership"). tokens.current_owner holds the owner so
// found, so that the holders' triggers (migrations.ts) and every read of an
// owner follow it; record_owner holds what the token record said, and
// owner_block/owner_log/owner_hash the position of the event that set it.
//
// Kept by triggers, so every writer path (upserts, imports, group commit)
// keeps it: a new event moves the owner only when it is later than the one
// that set it (a max, so arrival order does not matter), with no read of
// the sales or transfers. Only what can take the owning event away reads
// them again, for that one token (ownerRecomputed): a transfer arriving for
// the sale that set the owner (one event, now known at its log index), and
// a sale or transfer whose block or recipient changed.


/** An owner from 20 address bytes: the zero address (a burn) is no owner. */
export const ownerOf = (bytes: string) => `CASE WHEN ${bytes} = zeroblob(20) THEN '' ELSE '0x' || lower(hex(${bytes})) END`;

/** `tokens` row of the (collection, asset) in `at` (NEW or OLD). */
const tokenOf = (at: string) => `collection_id = ${at}.collection_id AND asset_key = ${at}.asset_key`;

/** The token row of an event, for a token no record named yet (recorded = 0: no attributes, no rarity). */
const ensureToken = (at: string) =>
  `INSERT INTO tokens (collection_id, asset_key, recorded) VALUES (${at}.collection_id, ${at}.asset_key, 0) ON CONFLICT DO NOTHING;`;

/** The token's owner and owning position found again from its sales and transfers (the record's owner without either), where `when` holds. */
export const ownerRecomputed = (at: string, when = "true") => `
  UPDATE tokens SET (current_owner, owner_block, owner_log, owner_hash) = (
    SELECT coalesce(e.owner, tokens.record_owner), e.block, e.log_index, e.hash FROM (SELECT 1) LEFT JOIN (
      SELECT * FROM (
        SELECT ${ownerOf("recipient")} AS owner, block, log_index, hash FROM transfers
        WHERE ${tokenOf(at)} ORDER BY block DESC, log_index DESC, hash DESC LIMIT 1)
      UNION ALL
      SELECT * FROM (
        SELECT ${ownerOf("buyer")}, block, ${SALE_LOG_INDEX}, hash FROM sales s
        WHERE ${tokenOf(at)}
          AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.hash = s.hash AND t.collection_id = s.collection_id AND t.asset_key = s.asset_key)
        ORDER BY block DESC, hash DESC LIMIT 1)
      ORDER BY block DESC, log_index DESC, hash DESC LIMIT 1) e)
  WHERE ${tokenOf(at)} AND ${when};`;

/** The event NEW (block, log index, hash) takes the owner when it is later than the one holding it, and `when` holds. */
const ownerIfLater = (owner: string, log: string, when = "true") => `
  UPDATE tokens SET current_owner = ${owner}, owner_block = NEW.block, owner_log = ${log}, owner_hash = NEW.hash
  WHERE ${tokenOf("NEW")} AND (owner_block IS NULL OR (owner_block, owner_log, owner_hash) < (NEW.block, ${log}, NEW.hash))
    AND ${when};`;

export const OWNERSHIP_SCHEMA = `
  ALTER TABLE tokens ADD COLUMN record_owner TEXT NOT NULL DEFAULT '';
  -- 0: a token known only from its sales or transfers (no record yet)
  ALTER TABLE tokens ADD COLUMN recorded INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE tokens ADD COLUMN owner_block INTEGER;
  ALTER TABLE tokens ADD COLUMN owner_log INTEGER;
  ALTER TABLE tokens ADD COLUMN owner_hash BLOB;
  UPDATE tokens SET record_owner = current_owner;

  -- Keyed for the reads of one token's transfers (ownerRecomputed), which
  -- a bulk import's dropped indexes (importer.ts) never slow down; the
  -- natural key is the unique index it keeps.
  CREATE TABLE transfers (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    block INTEGER NOT NULL,
    log_index INTEGER NOT NULL,
    hash BLOB NOT NULL,
    sender BLOB NOT NULL,
    recipient BLOB NOT NULL,
    timestamp INTEGER NOT NULL,
    PRIMARY KEY (collection_id, asset_key, block, log_index, hash)
  ) WITHOUT ROWID;
  CREATE UNIQUE INDEX transfers_natural_key ON transfers (hash, log_index, collection_id, asset_key);

  CREATE TRIGGER tokens_record_owner AFTER UPDATE OF record_owner ON tokens
    WHEN NEW.owner_block IS NULL AND NEW.current_owner IS NOT NEW.record_owner BEGIN
    UPDATE tokens SET current_owner = NEW.record_owner WHERE ${tokenOf("NEW")};
  END;

  -- A sale inserted moves its token's owner through SALE_OWNER_ADDED, run
  -- by the writer (record-writes.ts), not by a trigger: any AFTER INSERT
  -- trigger on sales, even one that does nothing, made each insert three
  -- times as costly (1,000-sale batches from 50 writers: 10,000 sales/s
  -- against 30,000 without).
  CREATE TRIGGER sales_owner_changed AFTER UPDATE OF block, buyer ON sales
    WHEN OLD.block IS NOT NEW.block OR OLD.buyer IS NOT NEW.buyer BEGIN
    ${ownerRecomputed("NEW")}
  END;

  CREATE TRIGGER transfers_owner_added AFTER INSERT ON transfers BEGIN
    ${ensureToken("NEW")}
    -- The sale of this transaction was this transfer: the owner it set is found again.
    ${ownerRecomputed("NEW", `owner_hash = NEW.hash AND owner_log = ${SALE_LOG_INDEX}`)}
    ${ownerIfLater(ownerOf("NEW.recipient"), "NEW.log_index")}
  END;
  CREATE TRIGGER transfers_owner_changed AFTER UPDATE OF block, recipient ON transfers
    WHEN OLD.block IS NOT NEW.block OR OLD.recipient IS NOT NEW.recipient BEGIN
    ${ownerRecomputed("NEW")}
  END;
`;

/**
 * Migration 8's backfill: every sold token gets its row (unrecorded when no
 * token record named it) and the owner its latest sale gives.
 */
export const OWNERSHIP_BACKFILL = `
  INSERT INTO tokens (collection_id, asset_key, recorded) SELECT DISTINCT collection_id, asset_key, 0 FROM sales WHERE true
    ON CONFLICT DO NOTHING;
  UPDATE tokens SET (current_owner, owner_block, owner_log, owner_hash) = (
    SELECT ${ownerOf("buyer")}, block, ${SALE_LOG_INDEX}, hash FROM sales s
    WHERE s.collection_id = tokens.collection_id AND s.asset_key = tokens.asset_key ORDER BY block DESC, hash DESC LIMIT 1)
  WHERE EXISTS (SELECT 1 FROM sales s WHERE s.collection_id = tokens.collection_id AND s.asset_key = tokens.asset_key);
`;

/**
 * What a sale inserted does to its token's owner (the sales_owner_added
 * trigger this would be), with NEW's columns as named parameters: its row
 * ensured, and the owner moved when the sale is later than the event that
 * set it, unless its transaction's transfer is known (that transfer is the
 * event).
 */
export const SALE_OWNER_ADDED: readonly string[] = [
  "INSERT INTO tokens (collection_id, asset_key, recorded) VALUES (@collection_id, @asset_key, 0) ON CONFLICT DO NOTHING",
  `UPDATE tokens SET current_owner = ${ownerOf("@buyer")}, owner_block = @block, owner_log = ${SALE_LOG_INDEX}, owner_hash = @hash
   WHERE collection_id = @collection_id AND asset_key = @asset_key
     AND (owner_block IS NULL OR (owner_block, owner_log, owner_hash) < (@block, ${SALE_LOG_INDEX}, @hash))
     AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.hash = @hash AND t.collection_id = @collection_id AND t.asset_key = @asset_key)`,
];
