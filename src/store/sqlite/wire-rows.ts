import type { Db } from "./db.js";
import { influencerFragments, listingFragments, saleJson, socialUserFragments, tweetFragments } from "../../domain/wire/fragments.js";
import { type Row, toListing, toSale, toTweet, toUser, USER_COLUMNS } from "../shared/rows.js";
import { assetIdSql } from "./asset-key.js";
import { hexExpr, hexSql } from "./hex.js";
import { LISTING_BLOCK_COLUMNS, listingJsonSql, listingJsonSqlBefore26 } from "../shared/wire-rows.js";


// Migration 15: each row of sales, listings, social users, tweets and
// influencers keeps its ready answer (domain/wire/fragments.ts), written by
// the upserts (record-writes.ts) from then on; the rows already here get
// theirs now, a batch at a time in key order (better-sqlite3 cannot write
// while a read is still stepping).

export const WIRE_ROWS_SCHEMA = `
  ALTER TABLE sales ADD COLUMN wire_json TEXT;
  ALTER TABLE sales ADD COLUMN wire_pb BLOB;
  ALTER TABLE listings ADD COLUMN wire_json_head TEXT;
  ALTER TABLE listings ADD COLUMN wire_json_middle TEXT;
  ALTER TABLE listings ADD COLUMN wire_pb BLOB;
  ALTER TABLE social_users ADD COLUMN wire_json TEXT;
  ALTER TABLE social_users ADD COLUMN wire_pb BLOB;
  ALTER TABLE tweets ADD COLUMN wire_json_head TEXT;
  ALTER TABLE tweets ADD COLUMN wire_json_tail TEXT;
  ALTER TABLE tweets ADD COLUMN wire_pb BLOB;
  ALTER TABLE influencers ADD COLUMN wire_json_head TEXT;
  ALTER TABLE influencers ADD COLUMN wire_json_tail TEXT;
  ALTER TABLE influencers ADD COLUMN wire_pb BLOB;
`;

/**
 * Migration 17: a listing's whole /v1 JSON kept in wire_json, rewritten by
 * every write that changes its parts, its status or lastUpdatedAt (the
 * triggers of fillable.ts that follow sales and transfers included): an
 * insert writes it (record-writes.ts), this trigger every change after.
 */
export const LISTING_WIRE_JSON_SCHEMA = `
  ALTER TABLE listings ADD COLUMN wire_json TEXT;
  CREATE TRIGGER listings_wire_changed AFTER UPDATE OF status, last_updated_at, wire_json_head, wire_json_middle ON listings BEGIN
    UPDATE listings SET wire_json = ${listingJsonSqlBefore26("NEW.")} WHERE id = NEW.id;
  END;
  UPDATE listings SET wire_json = ${listingJsonSqlBefore26("")};
`;

/**
 * Migration 26: a listing's and an offer's on-chain block and block hash
 * (docs/chains.md, "Listings and offers"), and a listing's whole JSON
 * answering them after its status, from its columns: the trigger made again
 * with them, and every listing's JSON written once.
 */
export const LISTING_BLOCK_SCHEMA = `${LISTING_BLOCK_COLUMNS({ block: "INTEGER", hash: "BLOB" })}
  DROP TRIGGER listings_wire_changed;
  CREATE TRIGGER listings_wire_changed AFTER UPDATE OF status, last_updated_at, wire_json_head, wire_json_middle, block, block_hash ON listings BEGIN
    UPDATE listings SET wire_json = ${listingJsonSql("NEW.", hexExpr)} WHERE id = NEW.id;
  END;
  UPDATE listings SET wire_json = ${listingJsonSql("", hexExpr)};
`;

const BATCH = 5_000;

interface Backfill {
  /** The table's key (its alias x), the batches' order. */
  key: string[];
  /** The columns values() reads, from x and its joins. */
  columns: string;
  from: string;
  update: string;
  values(r: Row): unknown[];
}

const BACKFILLS: Backfill[] = [
  {
    key: ["rowid"],
    columns: `c.address, ${hexSql("x.hash", "hash")}, ${hexSql("x.seller", "seller")}, ${hexSql("x.buyer", "buyer")},
      ${assetIdSql("x.")}, x.timestamp, x.block, x.price, x.amount_received, x.marketplace`,
    from: `FROM sales x JOIN collections c ON c.id = x.collection_id`,
    // JSON only: migration 19 drops wire_pb again (a binary page is encoded from the columns).
    update: "UPDATE sales SET wire_json = ? WHERE rowid = ?",
    values: (r) => [saleJson(toSale(r))],
  },
  {
    key: ["rowid"],
    columns: `c.address, x.marketplace_id, x.marketplace, ${assetIdSql("x.")}, x.created_at, x.price`,
    from: `FROM listings x JOIN collections c ON c.id = x.collection_id`,
    update: "UPDATE listings SET wire_json_head = ?, wire_json_middle = ?, wire_pb = ? WHERE rowid = ?",
    values: (r) => {
      const f = listingFragments(toListing(r));
      return [f.jsonHead, f.jsonMiddle, f.binary];
    },
  },
  {
    key: ["id"],
    columns: `${USER_COLUMNS}`,
    from: `FROM social_users x JOIN social_users u ON u.id = x.id`,
    update: "UPDATE social_users SET wire_json = ?, wire_pb = ? WHERE id = ?",
    values: (r) => {
      const f = socialUserFragments(toUser(r));
      return [f.json, f.binary];
    },
  },
  {
    key: ["collection_id", "id"],
    columns: `x.id, x.source, x.text, x.retweet_count, x.favorite_count, x.possibly_sensitive, x.lang,
      x.retweeted_status, x.created_at, x.date, x.original_id, x.original_text, x.original_tweet, x.interaction, ${USER_COLUMNS}`,
    from: `FROM tweets x JOIN social_users u ON u.id = x.user_id`,
    update: "UPDATE tweets SET wire_json_head = ?, wire_json_tail = ?, wire_pb = ? WHERE collection_id = ? AND id = ?",
    values: (r) => {
      const f = tweetFragments(toTweet(r));
      return [f.jsonHead, f.jsonTail, f.binary];
    },
  },
  {
    key: ["collection_id", "user_id"],
    columns: "x.score",
    from: "FROM influencers x",
    update: "UPDATE influencers SET wire_json_head = ?, wire_json_tail = ?, wire_pb = ? WHERE collection_id = ? AND user_id = ?",
    values: (r) => {
      const f = influencerFragments({ score: r.score as number });
      return [f.jsonHead, f.jsonTail, f.binary];
    },
  },
];

/**
 * Migration 40: every listing's ready answer written again, as it now holds
 * its maker and expiry (and its own currency: migration 15 wrote ETH, every
 * listing's then); and 44's, as it holds its quantity (every listing's 1
 * then, the default the columns leave it).
 */
const LISTINGS_AGAIN: Backfill = {
  ...BACKFILLS[1]!,
  columns: `c.address, x.marketplace_id, x.marketplace, ${assetIdSql("x.")}, x.created_at, x.price, x.currency, x.maker, x.expires_at`,
};

/** Writes every row's ready answer (inside the migration's transaction): every kept kind's (migration 15), or the listings' alone (migration 40). */
export function backfillWireRows(db: Db, listingsOnly = false): void {
  for (const b of listingsOnly ? [LISTINGS_AGAIN] : BACKFILLS) {
    // The key's columns come first (k0, k1, ...), then what values() reads.
    const keyCols = b.key.map((k, i) => `x.${k} AS k${i}`).join(", ");
    const keyList = b.key.map((k) => `x.${k}`).join(", ");
    const keyTuple = `(${keyList})`;
    const marks = `(${b.key.map(() => "?").join(", ")})`;
    const page = (after: boolean) =>
      db.prepare(`SELECT ${keyCols}, ${b.columns} ${b.from} ${after ? `WHERE ${keyTuple} > ${marks}` : ""} ORDER BY ${keyList} LIMIT ${BATCH}`);
    const first = page(false);
    const next = page(true);
    const update = db.prepare(b.update);
    let rows = first.all() as Row[];
    for (;;) {
      for (const r of rows) update.run(...b.values(r), ...b.key.map((_, i) => r[`k${i}`]));
      if (rows.length < BATCH) break;
      const last = rows[rows.length - 1]!;
      rows = next.all(...b.key.map((_, i) => last[`k${i}`])) as Row[];
    }
  }
}
