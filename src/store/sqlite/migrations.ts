import { FLAGS_SCHEMA } from "./flags.js";
import { BALANCES_SCHEMA } from "./balances.js";
import { QUANTITY_COLUMNS } from "../shared/quantities.js";
import { HOLDERS_BY_STANDARD_SCHEMA, tokenHolderTriggers } from "./holders.js";
import { METADATA_MIGRATION } from "../shared/metadata.js";
import { TOKEN_FEED_MIGRATION } from "../shared/token-feed.js";
import { PRICE_POINTS_SCHEMA } from "./prices.js";
// Versioned schema. PRAGMA user_version holds the number of migrations
// applied; each migration runs once, in its own transaction.
//
// Asset ids are uint256 decimal strings ordered numerically. They are stored
// as asset_key: the id prefixed with its two-digit length ("04" + "7495"),
// whose text order is the numeric order, so one plain column serves both
// lookups and keyset ranges (see store/asset-key.ts).

import { SALE_JSON_BLOCK_HASH } from "../shared/wire-rows.js";
import { FINALITY_SCHEMA, REMOVALS_BY_TIME_SCHEMA, REMOVALS_SCHEMA, REORGS_SCHEMA } from "./reorgs.js";
import { ORDER_LOG_SCHEMA } from "./order-reorgs.js";
import { ORDER_CURRENCY_MIGRATION } from "../shared/order-log.js";
import { usdSeriesMigration } from "./usd-migration.js";
import { washFlagsMigration } from "./wash-migration.js";
import type { Db } from "./db.js";
import { DEFAULT_CHAIN } from "../../domain/chains.js";
import { StoreError } from "../ports/errors.js";
import { SalesAggregates } from "./sales-stats.js";
import { OWNERSHIP_BACKFILL, OWNERSHIP_SCHEMA } from "./ownership.js";
import { FLOOR_HISTORY_SCHEMA, SqliteFloorHistory } from "./floor-history.js";
import { BALANCE_RULE_MIGRATION, FILLABLE_BACKFILL, FILLABLE_SCHEMA, LISTING_ORDERS_SCHEMA, SALE_TRANSFER_GAP_MIGRATION } from "./fillable.js";
import { OPEN_END } from "../shared/listing-spans.js";
import { TOKEN_MARKET_BACKFILL, TOKEN_MARKET_SCHEMA } from "./token-market.js";
import { OFFERS_SCHEMA } from "./offers.js";
import { COLLECTION_SUMMARIES_SCHEMA, keepEverySummary, summaryOrdersMigration, washSummariesMigration } from "./collection-summaries.js";
import { TRANSFERS_FEED_SCHEMA } from "./transfers.js";
import { backfillWireRows, LISTING_BLOCK_SCHEMA, LISTING_WIRE_JSON_SCHEMA, WIRE_ROWS_SCHEMA } from "./wire-rows.js";

/** What a migration step may open besides the store. */
export interface MigrationContext {
  /** The store's key file (database.ts openKeys), created if absent; the step closes it. */
  openKeys(): Db;
}

/** SQL, or a function for a step that needs code (a backfill). */
export type Migration = string | ((db: Db, context: MigrationContext) => void);

export const MIGRATIONS: readonly Migration[] = [
  `
  CREATE TABLE collections (
    id INTEGER PRIMARY KEY,
    address TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL DEFAULT ''
  );

  CREATE TABLE tokens (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    current_owner TEXT NOT NULL DEFAULT '',
    attributes TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (collection_id, asset_key)
  ) WITHOUT ROWID;

  CREATE TABLE appraisals (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    fair_market_value TEXT NOT NULL,
    confidence TEXT NOT NULL,
    PRIMARY KEY (collection_id, asset_key)
  ) WITHOUT ROWID;

  CREATE TABLE rarity (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    current_owner TEXT NOT NULL,
    rarity_score REAL NOT NULL,
    statistical_rarity REAL NOT NULL,
    rarity_rank INTEGER NOT NULL,
    PRIMARY KEY (collection_id, asset_key)
  ) WITHOUT ROWID;
  CREATE INDEX rarity_by_rank ON rarity (collection_id, rarity_rank, asset_key);

  -- A rowid table: rows append cheaply, and the secondary indexes point at
  -- an 8-byte rowid rather than at the wide natural key.
  CREATE TABLE sales (
    id INTEGER PRIMARY KEY,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    -- 32 and 20 raw bytes (store/hex.ts).
    hash BLOB NOT NULL,
    seller BLOB NOT NULL,
    buyer BLOB NOT NULL,
    timestamp INTEGER NOT NULL,
    block INTEGER NOT NULL,
    price TEXT NOT NULL,
    amount_received TEXT NOT NULL,
    price_hi INTEGER,
    price_lo INTEGER,
    marketplace TEXT NOT NULL
  );
  CREATE UNIQUE INDEX sales_natural_key ON sales (hash, collection_id, asset_key);
  CREATE INDEX sales_by_time ON sales (
    collection_id, timestamp DESC, block DESC, hash, asset_key);
  -- Stats sums are covered by the asset and marketplace indexes.
  CREATE INDEX sales_by_asset ON sales (
    collection_id, asset_key, timestamp DESC, block DESC, hash, marketplace, price_hi, price_lo);
  CREATE INDEX sales_by_marketplace ON sales (
    collection_id, marketplace, timestamp DESC, block DESC, hash, asset_key, price_hi, price_lo);

  CREATE TABLE listings (
    id INTEGER PRIMARY KEY,
    marketplace TEXT NOT NULL,
    marketplace_id TEXT NOT NULL,
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    asset_key TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_updated_at INTEGER NOT NULL,
    price TEXT NOT NULL,
    status TEXT NOT NULL
  );
  CREATE UNIQUE INDEX listings_natural_key ON listings (marketplace, marketplace_id);
  CREATE INDEX listings_by_time ON listings (collection_id, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX listings_by_asset ON listings (collection_id, asset_key, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX listings_by_marketplace ON listings (collection_id, marketplace, created_at DESC, marketplace_id);
  CREATE INDEX listings_by_status ON listings (collection_id, status, created_at DESC, marketplace, marketplace_id);

  CREATE TABLE social_users (
    id TEXT PRIMARY KEY,
    screen_name TEXT NOT NULL,
    profile_image_url TEXT NOT NULL,
    description TEXT NOT NULL,
    name TEXT NOT NULL,
    location TEXT NOT NULL,
    followers_count INTEGER NOT NULL,
    verified INTEGER NOT NULL,
    statuses_count INTEGER NOT NULL,
    favourites_count INTEGER NOT NULL,
    protected INTEGER NOT NULL
  ) WITHOUT ROWID;

  CREATE TABLE influencers (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    user_id TEXT NOT NULL REFERENCES social_users(id),
    score REAL NOT NULL,
    PRIMARY KEY (collection_id, user_id)
  ) WITHOUT ROWID;
  CREATE INDEX influencers_by_score ON influencers (collection_id, score DESC, user_id);

  CREATE TABLE tweets (
    collection_id INTEGER NOT NULL REFERENCES collections(id),
    id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES social_users(id),
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    retweet_count INTEGER NOT NULL,
    favorite_count INTEGER NOT NULL,
    possibly_sensitive INTEGER NOT NULL,
    lang TEXT NOT NULL,
    -- Canonical protobuf JSON of the retweeted post, or NULL.
    retweeted_status TEXT,
    created_at TEXT NOT NULL,
    date TEXT NOT NULL,
    original_id TEXT NOT NULL,
    original_text TEXT NOT NULL,
    original_tweet INTEGER NOT NULL,
    interaction INTEGER NOT NULL,
    PRIMARY KEY (collection_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX tweets_by_interaction ON tweets (collection_id, interaction DESC, id);

  CREATE TABLE scores (
    collection_id INTEGER PRIMARY KEY REFERENCES collections(id),
    hype REAL NOT NULL,
    gains REAL NOT NULL,
    community REAL NOT NULL,
    total REAL NOT NULL
  );

  CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key_hash BLOB NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
  );
  `,
  // 2: collection stats from aggregates kept at write time (sales-stats.ts),
  // backfilled from the sales already in the store (backfillSalesHourly).
  (db) => {
    db.exec(`
      CREATE TABLE sales_hourly (
        collection_id INTEGER NOT NULL REFERENCES collections(id),
        marketplace TEXT NOT NULL,
        -- floor(timestamp / 3600)
        hour INTEGER NOT NULL,
        -- every sale up to the end of this hour (exact wei as decimal text)
        cum_num_sales INTEGER NOT NULL,
        cum_volume TEXT NOT NULL,
        PRIMARY KEY (collection_id, marketplace, hour)
      ) WITHOUT ROWID;
    `);
    backfillSalesHourly(db);
  },
  // 3: per-key rate limits (NULL: the server's default) and the provenance of
  // appraisals and rarity: an operator's imported rows win over derived ones
  // (derive never overwrites or deletes them unless told to). Rows written
  // before this version count as imported: the safe reading, since a derive
  // could otherwise destroy an operator's data.
  `
  ALTER TABLE api_keys ADD COLUMN rate_limit INTEGER;
  ALTER TABLE appraisals ADD COLUMN source TEXT NOT NULL DEFAULT 'imported' CHECK (source IN ('imported', 'derived'));
  ALTER TABLE rarity ADD COLUMN source TEXT NOT NULL DEFAULT 'imported' CHECK (source IN ('imported', 'derived'));
  `,
  // 4: API keys move to a file of their own (database.ts keysFileOf), so that
  // a key can be revoked while an import holds the store's write lock. The
  // copy is idempotent: if this step rolls back, the next run copies again.
  (db, context) => {
    const keys = context.openKeys();
    try {
      const rows = db.prepare("SELECT id, name, key_hash, created_at, revoked_at, rate_limit FROM api_keys").all();
      const insert = keys.prepare(
        "INSERT OR IGNORE INTO api_keys (id, name, key_hash, created_at, revoked_at, rate_limit) VALUES (@id, @name, @key_hash, @created_at, @revoked_at, @rate_limit)",
      );
      keys.transaction(() => {
        for (const r of rows) insert.run(r);
      })();
    } finally {
      keys.close();
    }
    db.exec("DROP TABLE api_keys");
  },
  // 5: data versions (data-versions.ts): every write transaction takes the
  // next store version and stamps the collections it changed with it, so a
  // server forgets what it cached of those collections alone. all_version:
  // the last version whose change may reach every collection.
  `
  CREATE TABLE store_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL,
    all_version INTEGER NOT NULL
  );
  INSERT INTO store_state VALUES (1, 0, 0);
  ALTER TABLE collections ADD COLUMN data_version INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX collections_by_data_version ON collections (data_version);
  `,
  // 6: live feeds (feed.ts): each sale and listing holds the position of the
  // write that last inserted or changed it, from one sequence in commit
  // order (store_state.feed_seq); the rows already here take their rowid
  // order. feed_epoch names this store's sequence in resume tokens.
  `
  ALTER TABLE store_state ADD COLUMN feed_seq INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE store_state ADD COLUMN feed_epoch TEXT NOT NULL DEFAULT '';
  ALTER TABLE sales ADD COLUMN feed_seq INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE listings ADD COLUMN feed_seq INTEGER NOT NULL DEFAULT 0;
  UPDATE sales SET feed_seq = id;
  UPDATE listings SET feed_seq = id + (SELECT coalesce(max(id), 0) FROM sales);
  UPDATE store_state SET feed_epoch = lower(hex(randomblob(8))),
    feed_seq = (SELECT coalesce(max(id), 0) FROM sales) + (SELECT coalesce(max(id), 0) FROM listings);
  CREATE INDEX sales_by_feed ON sales (collection_id, feed_seq);
  CREATE INDEX listings_by_feed ON listings (collection_id, feed_seq);
  `,
  // 7: analytics (analytics.ts) from aggregates kept at write time.
  (db) => {
    db.exec(ANALYTICS_SCHEMA);
    // The series of the sales already here: summed by the same code that
    // keeps them (sales-stats.ts), since `stats rebuild --check` compares the
    // two anyway.
    new SalesAggregates(db).rebuild();
  },
  // 8: ownership that follows sales and transfers (ownership.ts); the
  // owners of tokens already sold are their latest buyers.
  `${OWNERSHIP_SCHEMA}${OWNERSHIP_BACKFILL}`,
  // 9: listings that can no longer be filled are not active (fillable.ts).
  `${FILLABLE_SCHEMA}${FILLABLE_BACKFILL}`,
  // 10: tokens' asks and traits kept for the tokens and traits lists (token-market.ts).
  `${TOKEN_MARKET_SCHEMA}${TOKEN_MARKET_BACKFILL}`,
  // 11: offers (offers.ts).
  OFFERS_SCHEMA,
  // 12: the collections list's summaries (collection-summaries.ts), kept as of the clock's hour.
  (db) => {
    db.exec(COLLECTION_SUMMARIES_SCHEMA);
    keepEverySummary(db);
  },
  // 13: transfers as a list and a live feed, for the activity feed (transfers.ts).
  TRANSFERS_FEED_SCHEMA,
  // 14: every marketplace's running totals in one row per hour (sales-stats.ts),
  // so that a window's stats seek once per bound instead of once per marketplace.
  (db) => {
    db.exec(`
      CREATE TABLE stats_hours (
        collection_id INTEGER NOT NULL,
        -- floor(timestamp / 3600), an hour with sales
        hour INTEGER NOT NULL,
        -- every marketplace's running totals through this hour: [[marketplace, count, "volume"], ...]
        running TEXT NOT NULL,
        PRIMARY KEY (collection_id, hour)
      ) WITHOUT ROWID;
    `);
    new SalesAggregates(db).keepEveryRunning();
  },
  // 15: list rows keep their ready answers (wire-rows.ts, domain/wire/fragments.ts).
  (db) => {
    db.exec(WIRE_ROWS_SCHEMA);
    backfillWireRows(db);
  },
  // 16: a marketplace's listings of one status, in the lists' order: the
  // status is read from the index, not from each (now wider) row (listings.ts).
  "CREATE INDEX listings_by_marketplace_status ON listings (collection_id, marketplace, status, created_at DESC, marketplace_id);",
  // 17: a listing's whole answer kept as it moves (wire-rows.ts).
  LISTING_WIRE_JSON_SCHEMA,
  // 18: every marketplace the store's sales, listings and offers name, kept by
  // triggers (a key lookup in a table of a few rows per write), so that a
  // filter naming none of them is told so (service/params.ts) rather than
  // answered an empty list. A sale inserted is known by the writer's own
  // statement (record-writes.ts upsertSale), not a trigger: an AFTER INSERT
  // trigger on sales made every insert several times as costly, more as the
  // table grew (issue 50, bench:ingest-scale).
  `
  CREATE TABLE marketplaces (name TEXT PRIMARY KEY) WITHOUT ROWID;
  INSERT OR IGNORE INTO marketplaces SELECT marketplace FROM sales UNION SELECT marketplace FROM listings UNION SELECT marketplace FROM offers;
  ${["listings", "offers"]
    .map((t) => `CREATE TRIGGER ${t}_marketplace_added AFTER INSERT ON ${t} BEGIN INSERT OR IGNORE INTO marketplaces VALUES (NEW.marketplace); END;`)
    .join("\n  ")}
  ${["sales", "listings", "offers"]
    .map((t) => `CREATE TRIGGER ${t}_marketplace_changed AFTER UPDATE OF marketplace ON ${t} BEGIN INSERT OR IGNORE INTO marketplaces VALUES (NEW.marketplace); END;`)
    .join("\n  ")}
  `,
  // 19: a sale keeps its /v1 JSON only (migration 15's wire_pb dropped): a
  // binary page is encoded from the columns (sales.ts), and the binary was
  // 272 of a sale's ~1,500 bytes on disk (decisions.md, "A sale keeps its
  // JSON only"). DROP COLUMN rewrites the table's rows; the file's freed
  // pages are reused, or returned by VACUUM.
  "ALTER TABLE sales DROP COLUMN wire_pb;",
  // 20: a collection is (chain, address) (docs/chains.md): the table made
  // again, since SQLite cannot drop the UNIQUE of its address column; ids
  // kept, so no row of another table changes. Run with foreign keys off
  // (migrate()), then checked as they would have been.
  (db) => {
    db.exec(`
      CREATE TABLE collections_on_chains (
        id INTEGER PRIMARY KEY,
        chain TEXT NOT NULL DEFAULT '${DEFAULT_CHAIN}',
        address TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        data_version INTEGER NOT NULL DEFAULT 0,
        UNIQUE (chain, address)
      );
      INSERT INTO collections_on_chains (id, address, name, data_version) SELECT id, address, name, data_version FROM collections;
      DROP TABLE collections;
      ALTER TABLE collections_on_chains RENAME TO collections;
      CREATE INDEX collections_by_data_version ON collections (data_version);
    `);
    const broken = db.pragma("foreign_key_check") as unknown[];
    if (broken.length > 0) throw new StoreError(`moving collections onto chains left ${broken.length} rows without their collection`);
  },
  // 21: a sale's and a transfer's block hash (docs/chains.md), NULL when
  // their indexer sent none; a sale's kept JSON answers it, "" for none (a
  // JSON made by an older migration's backfill from this build has it).
  `ALTER TABLE sales ADD COLUMN block_hash BLOB;
  ALTER TABLE transfers ADD COLUMN block_hash BLOB;
  ${SALE_JSON_BLOCK_HASH("substr(wire_json, 1, length(wire_json) - 1)")}`,
  // 22: reorganisations (reorgs.ts): sales and transfers found by block, a
  // removal's triggers, and the log of what each reorganisation removed.
  REORGS_SCHEMA,
  // 23: each chain's finalized block (reorgs.ts).
  FINALITY_SCHEMA,
  // 24: the records taken back, kept at their removal's feed position (reorgs.ts).
  REMOVALS_SCHEMA,
  // 25: the records taken back by time (reorgs.ts), for the activity list's includeRemoved.
  REMOVALS_BY_TIME_SCHEMA,
  // 26: a listing's and an offer's on-chain block and block hash (docs/chains.md, "Listings and offers").
  LISTING_BLOCK_SCHEMA,
  // 27: kept by the webhooks file (webhooks.ts adds final_only); a step here so that both engines count alike.
  "",
  // 28: the orders' logs and the orders taken back whole (order-reorgs.ts; docs/chains.md, "Orders taken back").
  ORDER_LOG_SCHEMA,
  // 29: every sale's wash flags, evaluated for the sales already held (wash.ts; docs/wash-trades.md).
  washFlagsMigration,
  // 30: the collections list's summaries of every sale, for includeWash (collection-summaries.ts).
  washSummariesMigration,
  // 31: a sale's payment token and fees (docs/money.md): every sale before was ETH, its fees untold ("");
  // its kept JSON answers them "" at read (fragments.ts saleJsonWithFinality), and a sale taken back keeps them.
  `ALTER TABLE sales ADD COLUMN currency TEXT NOT NULL DEFAULT 'ETH';
  ALTER TABLE sales ADD COLUMN marketplace_fee TEXT NOT NULL DEFAULT '';
  ALTER TABLE sales ADD COLUMN royalty_fee TEXT NOT NULL DEFAULT '';
  ALTER TABLE sale_removals ADD COLUMN currency TEXT NOT NULL DEFAULT 'ETH';
  ALTER TABLE sale_removals ADD COLUMN marketplace_fee TEXT NOT NULL DEFAULT '';
  ALTER TABLE sale_removals ADD COLUMN royalty_fee TEXT NOT NULL DEFAULT '';`,
  // 32: price points, a token's USD price by minute (docs/money.md): a sale's priceUsd is read from the latest at or before it.
  PRICE_POINTS_SCHEMA,
  // 33: an order's payment token (docs/money.md), in its table, its log and its removal table: every order before was in ETH.
  // Its kept JSON already says ETH; one written since says its own (fragments.ts listingFragments).
  ORDER_CURRENCY_MIGRATION("TEXT"),
  // 34: the series and the collections list's summaries keep their sales' US dollars (usd-migration.ts; docs/money.md).
  usdSeriesMigration,
  // 35: a sale's seller at the end of its token's index (wash.ts WASH_SQL.soldBy): whether a new sale's buyer sold the
  // token in the window before it is asked of the index alone (bench:ingest: a table row read per sale of the window).
  `DROP INDEX sales_by_asset;
  CREATE INDEX sales_by_asset ON sales (collection_id, asset_key, timestamp DESC, block DESC, hash, marketplace, price_hi, price_lo, seller);`,
  // 36: a token's and a collection's metadata (docs/data.md, "Metadata"), "" where untold.
  METADATA_MIGRATION("TEXT"),
  // 37: spam collections and flagged tokens (flags.ts; docs/data.md, "Spam and flags"): a row per record, marked or cleared.
  FLAGS_SCHEMA,
  // 38: the collections list's market cap (floor × tokens) and all-time volume orders (collection-summaries.ts).
  summaryOrdersMigration,
  // 39: a token's record written is a live-feed event (shared/token-feed.ts).
  TOKEN_FEED_MIGRATION("INTEGER"),
  // 40: listings as orders: maker and expiry (fillable.ts, shared/listing-orders.ts), their ready answers written again.
  (db) => {
    db.exec(LISTING_ORDERS_SCHEMA);
    backfillWireRows(db, true);
  },
  // 41: floor history kept at write time (floor-history.ts, shared/floor-history.ts), found for what is stored.
  (db) => {
    db.exec(FLOOR_HISTORY_SCHEMA);
    new SqliteFloorHistory(db).rebuild();
  },
  // 42: ERC-1155: transfers' amounts, balances by token and owner (balances.ts), holders by each collection's token standard (holders.ts).
  (db) => {
    db.exec(BALANCES_SCHEMA);
    db.exec(HOLDERS_BY_STANDARD_SCHEMA);
  },
  // 43: a transfer of a sale's transaction judges again the listings made since that sale (fillable.ts), the floor's history settled.
  (db) => {
    db.exec(SALE_TRANSFER_GAP_MIGRATION);
    new SqliteFloorHistory(db).settle();
  },
  // 44: ERC-1155: a sale's and a listing's quantity (shared/quantities.ts), every listing's ready answers written again.
  (db) => {
    db.exec(QUANTITY_COLUMNS("INTEGER"));
    backfillWireRows(db, true);
  },
  // 45: an ERC-1155 listing judged by its maker's balance (fillable.ts), the floor's history settled.
  (db) => {
    db.exec(BALANCE_RULE_MIGRATION);
    new SqliteFloorHistory(db).settle();
  },
];


/** A trigger's body: NEW's version recorded, and its spans rebuilt from all its versions. */
const LISTING_VERSION = `
    INSERT INTO listing_versions VALUES (NEW.id, NEW.last_updated_at, NEW.price, NEW.status)
      ON CONFLICT (listing_id, updated_at) DO UPDATE SET price = excluded.price, status = excluded.status;
    DELETE FROM listing_spans WHERE listing_id = NEW.id;
    ${spansOf("SELECT NEW.id AS id, NEW.collection_id AS collection_id, NEW.marketplace AS marketplace, NEW.marketplace_id AS marketplace_id, NEW.created_at AS created_at", "(SELECT * FROM listing_versions WHERE listing_id = NEW.id)")}`;

/**
 * Migration 2's backfill, frozen as it was written: the running totals of
 * each collection and marketplace at the end of every hour with sales. Its
 * own code, not today's aggregate maintenance (sales-stats.ts), so that a
 * later change there can never change what an old store migrates to.
 * `stats rebuild --check` on a migrated store finds nothing to fix
 * (test/cli/stats-rebuild.test.ts). One marketplace of one collection in
 * memory at a time.
 */
function backfillSalesHourly(db: Db): void {
  const pairs = db.prepare("SELECT DISTINCT collection_id, marketplace FROM sales").raw().all() as [number, string][];
  const sales = db
    .prepare("SELECT timestamp / 3600, price FROM sales WHERE collection_id = ? AND marketplace = ? ORDER BY timestamp")
    .raw();
  const put = db.prepare("INSERT INTO sales_hourly (collection_id, marketplace, hour, cum_num_sales, cum_volume) VALUES (?, ?, ?, ?, ?)");
  for (const [collection, marketplace] of pairs) {
    let n = 0;
    let volume = 0n;
    let hour: number | undefined;
    for (const [h, price] of sales.all(collection, marketplace) as [number, string][]) {
      if (hour !== undefined && h !== hour) put.run(collection, marketplace, hour, n, volume.toString());
      hour = h;
      n++;
      volume += BigInt(price);
    }
    if (hour !== undefined) put.run(collection, marketplace, hour, n, volume.toString());
  }
}

/**
 * Holders: each owner's token count, and each collection's token and
 * holder counts, kept by triggers on tokens (every writer, whatever its
 * path). Floor history: every version of a listing
 * (by its lastUpdatedAt), and the spans of time each listing was active at
 * a price, rebuilt from its versions by the triggers on listings. The
 * current floor reads listings through a partial index of the open ones,
 * numeric price order being (length, text) of canonical decimals. Series:
 * sales_series, kept by the writers with sales_hourly (sales-stats.ts).
 */
const ANALYTICS_SCHEMA = `
  CREATE TABLE token_owners (
    collection_id INTEGER NOT NULL,
    owner TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (collection_id, owner)
  ) WITHOUT ROWID;
  CREATE INDEX token_owners_by_count ON token_owners (collection_id, tokens DESC, owner);
  INSERT INTO token_owners SELECT collection_id, current_owner, count(*) FROM tokens WHERE current_owner <> '' GROUP BY 1, 2;
  -- Each collection's token and holder counts: read by every holders call,
  -- whatever the collection's size.
  CREATE TABLE collection_holdings (
    collection_id INTEGER PRIMARY KEY,
    tokens INTEGER NOT NULL,
    holders INTEGER NOT NULL
  );
  INSERT INTO collection_holdings
    SELECT collection_id, count(*), count(DISTINCT nullif(current_owner, '')) FROM tokens GROUP BY collection_id;
  ${tokenHolderTriggers(false)}

  CREATE INDEX listings_open_by_price ON listings (collection_id, marketplace, length(price), price, marketplace_id)
    WHERE status = 'CREATED';

  CREATE TABLE listing_versions (
    listing_id INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    price TEXT NOT NULL,
    status TEXT NOT NULL,
    PRIMARY KEY (listing_id, updated_at)
  ) WITHOUT ROWID;
  CREATE TABLE listing_spans (
    listing_id INTEGER NOT NULL,
    active_from INTEGER NOT NULL,
    -- exclusive; ${OPEN_END} while still active
    active_until INTEGER NOT NULL,
    collection_id INTEGER NOT NULL,
    marketplace TEXT NOT NULL,
    marketplace_id TEXT NOT NULL,
    price TEXT NOT NULL,
    PRIMARY KEY (listing_id, active_from)
  ) WITHOUT ROWID;
  CREATE INDEX listing_spans_by_price ON listing_spans (
    collection_id, marketplace, length(price), price, marketplace_id, active_from, active_until);
  INSERT INTO listing_versions SELECT id, last_updated_at, price, status FROM listings;
  ${spansOf("SELECT id, collection_id, marketplace, marketplace_id, created_at FROM listings")}
  CREATE TRIGGER listings_history_added AFTER INSERT ON listings BEGIN
    ${LISTING_VERSION}
  END;
  CREATE TRIGGER listings_history_changed
    AFTER UPDATE OF collection_id, created_at, last_updated_at, price, status ON listings BEGIN
    ${LISTING_VERSION}
  END;

  CREATE TABLE sales_series (
    collection_id INTEGER NOT NULL,
    -- '' for every marketplace
    marketplace TEXT NOT NULL,
    -- 3600 or 86400 seconds
    span INTEGER NOT NULL,
    -- the interval's start
    bucket INTEGER NOT NULL,
    num_sales INTEGER NOT NULL,
    volume TEXT NOT NULL,
    min_price TEXT NOT NULL,
    max_price TEXT NOT NULL,
    first_price TEXT NOT NULL,
    first_timestamp INTEGER NOT NULL,
    first_block INTEGER NOT NULL,
    first_hash BLOB NOT NULL,
    first_asset_key TEXT NOT NULL,
    last_price TEXT NOT NULL,
    last_timestamp INTEGER NOT NULL,
    last_block INTEGER NOT NULL,
    last_hash BLOB NOT NULL,
    last_asset_key TEXT NOT NULL,
    PRIMARY KEY (collection_id, marketplace, span, bucket)
  ) WITHOUT ROWID;
`;

/**
 * The active spans of the listings `listings` selects (id, collection_id,
 * marketplace, marketplace_id, created_at), from their versions (`versions`:
 * listing_versions, or the part of it that holds theirs): active from
 * its creation until its first version (whatever that version says, it was
 * listed before it), and from each version with status CREATED until the
 * next version.
 */
function spansOf(listings: string, versions = "listing_versions"): string {
  return `
  INSERT INTO listing_spans (listing_id, active_from, active_until, collection_id, marketplace, marketplace_id, price)
  SELECT l.id, max(v.updated_at, l.created_at), coalesce(v.next, ${OPEN_END}), l.collection_id, l.marketplace, l.marketplace_id, v.price
  FROM (${listings}) l JOIN (
    SELECT listing_id, updated_at, price, status, lead(updated_at) OVER (PARTITION BY listing_id ORDER BY updated_at) AS next
    FROM ${versions}) v ON v.listing_id = l.id
  WHERE v.status = 'CREATED' AND max(v.updated_at, l.created_at) < coalesce(v.next, ${OPEN_END})
  UNION ALL
  SELECT l.id, l.created_at, v.updated_at, l.collection_id, l.marketplace, l.marketplace_id, v.price
  FROM (${listings}) l JOIN ${versions} v ON v.listing_id = l.id
  WHERE v.updated_at = (SELECT min(updated_at) FROM listing_versions WHERE listing_id = l.id) AND l.created_at < v.updated_at;`;
}
