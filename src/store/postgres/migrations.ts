import { FLOOR_HISTORY_SCHEMA, PgFloorHistory } from "./floor-history.js";
import { listingsMovedBy } from "./listing-history.js";
import { standardIs } from "../shared/token-standard.js";
import { QUANTITY_COLUMNS } from "../shared/quantities.js";
import { BALANCES_MIGRATION } from "./balances.js";
import { HOLDERS_BY_STANDARD_MIGRATION, tokenOwnersKept } from "./holders.js";
import { FLAGS_SCHEMA } from "./flags.js";
import { METADATA_MIGRATION } from "../shared/metadata.js";
import { TOKEN_FEED_MIGRATION } from "../shared/token-feed.js";
import { TOKEN_POSITION_MIGRATION } from "../shared/webhook-rows.js";
import { PRICE_POINTS_SCHEMA } from "./prices.js";
import { LISTING_BLOCK_COLUMNS, SALE_JSON_BLOCK_HASH } from "../shared/wire-rows.js";
import { FINALITY_MIGRATION, REMOVALS_BY_TIME_MIGRATION, REMOVALS_MIGRATION, REORGS_MIGRATION } from "./reorgs.js";
import { FINAL_WEBHOOKS_MIGRATION, WEBHOOKS_MIGRATION } from "./webhooks.js";
import { DEFAULT_CHAIN } from "../../domain/chains.js";
import { TOKEN_MARKET_MIGRATION } from "./token-market.js";
import type pg from "pg";
import { backfillPgWireRows, PG_WIRE_ROWS_SCHEMA } from "./wire-rows.js";
import { LISTING_ORDER_COLUMNS } from "../shared/listing-orders.js";
import { listingJsonSql, listingJsonSqlBefore26 } from "../shared/wire-rows.js";
import { ORDER_LOG_MIGRATION } from "./order-reorgs.js";
import { ORDER_CURRENCY_MIGRATION } from "../shared/order-log.js";
import { washFlagsMigration } from "./wash-migration.js";
import { hexExpr } from "./hex.js";
import { OFFERS_MIGRATION } from "./offers.js";
import { COLLECTION_SUMMARIES_MIGRATION, SUMMARY_ORDERS_MIGRATION, WASH_SUMMARIES_MIGRATION } from "./collection-summaries.js";
import { USD_SERIES_MIGRATION } from "./usd-migration.js";
import { TRANSFERS_FEED_MIGRATION } from "./transfers.js";
import { OWNERSHIP_MIGRATION } from "./ownership.js";
import { FILLABLE_BACKFILL, spansOf } from "./listing-history.js";
import { FILLABLE_COLUMNS } from "./fillable.js";
import { freshSeriesSql } from "./sales-series.js";

// The PostgreSQL schema, versioned like the SQLite one (store/migrations.ts)
// but in PostgreSQL's own terms: asset ids and wei as numeric(78,0) (exact,
// ordered numerically, summed exactly), hashes and addresses as bytea,
// epoch seconds as bigint, keyset pages on row comparisons over the same
// index orders as SQLite's. schema_migrations holds the applied version;
// store_state holds the data version every write bumps in its own
// transaction, so a replica's caches follow the data as replayed.

/** SQL, or a function for a step that needs code (a backfill), run in the migration's transaction. */
export type PgMigration = string | ((client: pg.PoolClient) => Promise<void>);

export const PG_MIGRATIONS: readonly PgMigration[] = [
  `
  CREATE TABLE collections (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    address text NOT NULL UNIQUE,
    name text NOT NULL DEFAULT ''
  );

  CREATE TABLE tokens (
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    current_owner text NOT NULL DEFAULT '',
    attributes jsonb NOT NULL DEFAULT '[]',
    PRIMARY KEY (collection_id, asset_id)
  );

  CREATE TABLE appraisals (
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    fair_market_value numeric(78,0) NOT NULL,
    confidence text NOT NULL,
    source text NOT NULL DEFAULT 'imported' CHECK (source IN ('imported', 'derived')),
    PRIMARY KEY (collection_id, asset_id)
  );

  CREATE TABLE rarity (
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    current_owner text NOT NULL,
    rarity_score double precision NOT NULL,
    statistical_rarity double precision NOT NULL,
    rarity_rank integer NOT NULL,
    source text NOT NULL DEFAULT 'imported' CHECK (source IN ('imported', 'derived')),
    PRIMARY KEY (collection_id, asset_id)
  );
  CREATE INDEX rarity_by_rank ON rarity (collection_id, rarity_rank, asset_id);

  CREATE TABLE sales (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    hash bytea NOT NULL CHECK (length(hash) = 32),
    seller bytea NOT NULL CHECK (length(seller) = 20),
    buyer bytea NOT NULL CHECK (length(buyer) = 20),
    timestamp bigint NOT NULL,
    block bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    amount_received numeric(78,0) NOT NULL,
    marketplace text NOT NULL
  );
  CREATE UNIQUE INDEX sales_natural_key ON sales (hash, collection_id, asset_id);
  CREATE INDEX sales_by_time ON sales (collection_id, timestamp DESC, block DESC, hash, asset_id);
  CREATE INDEX sales_by_asset ON sales (collection_id, asset_id, timestamp DESC, block DESC, hash) INCLUDE (marketplace, price);
  CREATE INDEX sales_by_marketplace ON sales (collection_id, marketplace, timestamp DESC, block DESC, hash, asset_id) INCLUDE (price);

  -- Running totals per collection, marketplace and hour, as in SQLite (store/sales-stats.ts).
  CREATE TABLE sales_hourly (
    collection_id integer NOT NULL REFERENCES collections(id),
    marketplace text NOT NULL,
    hour bigint NOT NULL,
    cum_num_sales bigint NOT NULL,
    cum_volume numeric NOT NULL,
    PRIMARY KEY (collection_id, marketplace, hour)
  );

  CREATE TABLE listings (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    marketplace text NOT NULL,
    marketplace_id text NOT NULL,
    collection_id integer NOT NULL REFERENCES collections(id),
    asset_id numeric(78,0) NOT NULL,
    created_at bigint NOT NULL,
    last_updated_at bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    status text NOT NULL CHECK (status IN ('CREATED', 'FULFILLED', 'CANCELLED', 'EXPIRED'))
  );
  CREATE UNIQUE INDEX listings_natural_key ON listings (marketplace, marketplace_id);
  CREATE INDEX listings_by_time ON listings (collection_id, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX listings_by_asset ON listings (collection_id, asset_id, created_at DESC, marketplace, marketplace_id);
  CREATE INDEX listings_by_marketplace ON listings (collection_id, marketplace, created_at DESC, marketplace_id);
  CREATE INDEX listings_by_status ON listings (collection_id, status, created_at DESC, marketplace, marketplace_id);

  CREATE TABLE social_users (
    id text PRIMARY KEY,
    screen_name text NOT NULL,
    profile_image_url text NOT NULL,
    description text NOT NULL,
    name text NOT NULL,
    location text NOT NULL,
    followers_count bigint NOT NULL,
    verified boolean NOT NULL,
    statuses_count bigint NOT NULL,
    favourites_count bigint NOT NULL,
    protected boolean NOT NULL
  );

  CREATE TABLE influencers (
    collection_id integer NOT NULL REFERENCES collections(id),
    user_id text NOT NULL REFERENCES social_users(id),
    score double precision NOT NULL,
    PRIMARY KEY (collection_id, user_id)
  );
  CREATE INDEX influencers_by_score ON influencers (collection_id, score DESC, user_id);

  CREATE TABLE tweets (
    collection_id integer NOT NULL REFERENCES collections(id),
    id text NOT NULL,
    user_id text NOT NULL REFERENCES social_users(id),
    source text NOT NULL,
    text text NOT NULL,
    retweet_count bigint NOT NULL,
    favorite_count bigint NOT NULL,
    possibly_sensitive boolean NOT NULL,
    lang text NOT NULL,
    retweeted_status jsonb,
    created_at text NOT NULL,
    date text NOT NULL,
    original_id text NOT NULL,
    original_text text NOT NULL,
    original_tweet boolean NOT NULL,
    interaction bigint NOT NULL,
    PRIMARY KEY (collection_id, id)
  );
  CREATE INDEX tweets_by_interaction ON tweets (collection_id, interaction DESC, id);

  CREATE TABLE scores (
    collection_id integer PRIMARY KEY REFERENCES collections(id),
    hype double precision NOT NULL,
    gains double precision NOT NULL,
    community double precision NOT NULL,
    total double precision NOT NULL
  );

  CREATE TABLE api_keys (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL,
    key_hash bytea NOT NULL UNIQUE,
    created_at bigint NOT NULL,
    revoked_at bigint,
    rate_limit integer CHECK (rate_limit > 0)
  );

  -- One row: the data version (every write transaction bumps it) and when it last moved.
  CREATE TABLE store_state (
    id integer PRIMARY KEY CHECK (id = 1),
    data_version bigint NOT NULL,
    last_write timestamptz NOT NULL
  );
  INSERT INTO store_state VALUES (1, 0, now());
  `,
  // 2: keys get a scope (ports.ts KeyScope); every key made before is a read key.
  `
  ALTER TABLE api_keys ADD COLUMN scope text NOT NULL DEFAULT 'read' CHECK (scope IN ('read', 'ingest', 'admin'));
  `,
  // 3: data versions per collection (data-versions.ts): what a write changed
  // is stamped with the version it commits as, so servers forget what they
  // cached of those collections alone; all_version and keys_version: the
  // last versions that changed every collection, or the keys.
  `
  ALTER TABLE store_state ADD COLUMN all_version bigint NOT NULL DEFAULT 0, ADD COLUMN keys_version bigint NOT NULL DEFAULT 0;
  ALTER TABLE collections ADD COLUMN data_version bigint NOT NULL DEFAULT 0;
  CREATE INDEX collections_by_data_version ON collections (data_version);
  `,
  // 4: sales partitioned by collection (sales-partitions.ts), so that a
  // collection's first load is written into a table of its own without
  // indexes, indexed once, and attached (an import's merge into the shared
  // indexes took most of its time). The identity column goes: nothing
  // read it, and PostgreSQL 15 cannot carry one over to attached tables. The
  // foreign key to collections goes too: a partition is only ever created
  // for a registered collection, its bound is that collection's id, and
  // collections are never deleted; keeping it would re-check every row of a
  // partition as it is attached.
  `
  ALTER TABLE sales RENAME TO sales_unpartitioned;
  ALTER INDEX sales_natural_key RENAME TO sales_unpartitioned_natural_key;
  ALTER INDEX sales_by_time RENAME TO sales_unpartitioned_by_time;
  ALTER INDEX sales_by_asset RENAME TO sales_unpartitioned_by_asset;
  ALTER INDEX sales_by_marketplace RENAME TO sales_unpartitioned_by_marketplace;
  CREATE TABLE sales (
    collection_id integer NOT NULL,
    asset_id numeric(78,0) NOT NULL,
    hash bytea NOT NULL CHECK (length(hash) = 32),
    seller bytea NOT NULL CHECK (length(seller) = 20),
    buyer bytea NOT NULL CHECK (length(buyer) = 20),
    timestamp bigint NOT NULL,
    block bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    amount_received numeric(78,0) NOT NULL,
    marketplace text NOT NULL
  ) PARTITION BY LIST (collection_id);
  CREATE UNIQUE INDEX sales_natural_key ON sales (hash, collection_id, asset_id);
  CREATE INDEX sales_by_time ON sales (collection_id, timestamp DESC, block DESC, hash, asset_id);
  CREATE INDEX sales_by_asset ON sales (collection_id, asset_id, timestamp DESC, block DESC, hash) INCLUDE (marketplace, price);
  CREATE INDEX sales_by_marketplace ON sales (collection_id, marketplace, timestamp DESC, block DESC, hash, asset_id) INCLUDE (price);
  DO $$
  DECLARE cid integer;
  BEGIN
    FOR cid IN SELECT DISTINCT collection_id FROM sales_unpartitioned LOOP
      EXECUTE format('CREATE TABLE sales_c%s PARTITION OF sales FOR VALUES IN (%s)', cid, cid);
    END LOOP;
  END $$;
  INSERT INTO sales (collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace)
    SELECT collection_id, asset_id, hash, seller, buyer, timestamp, block, price, amount_received, marketplace FROM sales_unpartitioned;
  DROP TABLE sales_unpartitioned;
  `,
  // 5: live feeds (feed.ts): each sale and listing holds the position of the
  // write that last inserted or changed it, from one sequence: an insert
  // takes nextval by default (the rows already here take theirs now), a
  // change sets it (record-writes.ts). Their writers hold a lock from the first
  // nextval to COMMIT, so positions grow in commit order. feed_epoch names
  // this store's sequence in resume tokens.
  `
  CREATE SEQUENCE feed_seq AS bigint;
  ALTER TABLE store_state ADD COLUMN feed_epoch text NOT NULL DEFAULT '';
  UPDATE store_state SET feed_epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 16);
  ALTER TABLE sales ADD COLUMN feed_seq bigint NOT NULL DEFAULT nextval('feed_seq');
  ALTER TABLE listings ADD COLUMN feed_seq bigint NOT NULL DEFAULT nextval('feed_seq');
  CREATE INDEX sales_by_feed ON sales (collection_id, feed_seq);
  CREATE INDEX listings_by_feed ON listings (collection_id, feed_seq);
  `,
  // 6: analytics (analytics.ts), as in SQLite (store/sqlite/migrations.ts
  // 7): owners' token counts kept by triggers; the listings' history
  // (listing-history.ts) and the series (sales-series.ts) kept by the merges
  // of listings and sales; each filled from what the store holds. Listing ids order in code-point order
  // (COLLATE "C"), as SQLite's do.
  `
  CREATE TABLE token_owners (
    collection_id integer NOT NULL,
    owner text NOT NULL,
    tokens bigint NOT NULL,
    PRIMARY KEY (collection_id, owner)
  );
  CREATE INDEX token_owners_by_count ON token_owners (collection_id, tokens DESC, owner COLLATE "C");
  INSERT INTO token_owners SELECT collection_id, current_owner, count(*) FROM tokens WHERE current_owner <> '' GROUP BY 1, 2;
  CREATE TABLE collection_holdings (
    collection_id integer PRIMARY KEY,
    tokens bigint NOT NULL,
    holders bigint NOT NULL
  );
  INSERT INTO collection_holdings
    SELECT collection_id, count(*), count(DISTINCT nullif(current_owner, '')) FROM tokens GROUP BY collection_id;
  ${tokenOwnersKept(false)}
  CREATE TRIGGER tokens_owner_added AFTER INSERT OR DELETE ON tokens FOR EACH ROW EXECUTE FUNCTION token_owners_kept();
  CREATE TRIGGER tokens_owner_changed AFTER UPDATE OF current_owner ON tokens
    FOR EACH ROW WHEN (OLD.current_owner IS DISTINCT FROM NEW.current_owner) EXECUTE FUNCTION token_owners_kept();

  CREATE INDEX listings_open_by_price ON listings (collection_id, marketplace, price, marketplace_id COLLATE "C")
    WHERE status = 'CREATED';
  CREATE TABLE listing_versions (
    listing_id bigint NOT NULL,
    updated_at bigint NOT NULL,
    price numeric(78,0) NOT NULL,
    status text NOT NULL,
    PRIMARY KEY (listing_id, updated_at)
  );
  CREATE TABLE listing_spans (
    listing_id bigint NOT NULL,
    active_from bigint NOT NULL,
    active_until bigint NOT NULL,
    collection_id integer NOT NULL,
    marketplace text NOT NULL,
    marketplace_id text NOT NULL,
    price numeric(78,0) NOT NULL,
    PRIMARY KEY (listing_id, active_from)
  );
  CREATE INDEX listing_spans_by_price ON listing_spans (collection_id, marketplace, price, marketplace_id COLLATE "C")
    INCLUDE (active_from, active_until);
  INSERT INTO listing_versions SELECT id, last_updated_at, price, status FROM listings;
  ${spansOf("SELECT id, collection_id, marketplace, marketplace_id, created_at FROM listings", "listing_versions")}

  CREATE TABLE sales_series (
    collection_id integer NOT NULL,
    marketplace text NOT NULL,
    span integer NOT NULL,
    bucket bigint NOT NULL,
    num_sales bigint NOT NULL,
    volume numeric NOT NULL,
    min_price numeric NOT NULL,
    max_price numeric NOT NULL,
    first_price numeric NOT NULL,
    first_timestamp bigint NOT NULL,
    first_block bigint NOT NULL,
    first_hash bytea NOT NULL,
    first_asset_id numeric NOT NULL,
    last_price numeric NOT NULL,
    last_timestamp bigint NOT NULL,
    last_block bigint NOT NULL,
    last_hash bytea NOT NULL,
    last_asset_id numeric NOT NULL,
    PRIMARY KEY (collection_id, marketplace, span, bucket)
  );
  INSERT INTO sales_series ${freshSeriesSql("true", "sales", false)};
  `,
  // 7: ownership that follows sales and transfers (ownership.ts), as
  // SQLite's 8; the owners of tokens already sold are their latest buyers.
  OWNERSHIP_MIGRATION,
  // 8: listings that can no longer be filled are not active (fillable.ts),
  // as SQLite's 9.
  `${FILLABLE_COLUMNS}${FILLABLE_BACKFILL.map((q) => `${q.trim().replace(/;$/, "")};`).join("\n")}`,
  // 9: tokens' asks and traits kept for the tokens and traits lists
  // (token-market.ts), as SQLite's 10.
  TOKEN_MARKET_MIGRATION,
  // 10: offers (offers.ts), as SQLite's 11.
  OFFERS_MIGRATION,
  // 11: the collections list's summaries (collection-summaries.ts), as SQLite's 12.
  COLLECTION_SUMMARIES_MIGRATION,
  // 12: transfers as a list and a live feed, for the activity feed (transfers.ts), as SQLite's 13.
  TRANSFERS_FEED_MIGRATION,
  // 13: list rows keep their ready answers (wire-rows.ts), as SQLite's 15.
  async (client) => {
    await client.query(PG_WIRE_ROWS_SCHEMA);
    await backfillPgWireRows(client);
  },
  // 14: a marketplace's listings of one status, in the lists' order, as SQLite's 16.
  "CREATE INDEX listings_by_marketplace_status ON listings (collection_id, marketplace, status, created_at DESC, marketplace_id);",
  // 15: a listing's whole answer kept as it moves, as SQLite's 17: here a generated column.
  `ALTER TABLE listings ADD COLUMN wire_json text GENERATED ALWAYS AS (${listingJsonSqlBefore26("")}) STORED`,
  // 16: webhooks, their attempts and the feed's marks (webhooks.ts); on SQLite a file of their own.
  WEBHOOKS_MIGRATION,
  // 17: every marketplace the store's sales, listings and offers name, as SQLite's 18: here
  // kept by each write's merge (record-writes.ts KNOW_MARKETPLACES), one DISTINCT over its stage.
  `CREATE TABLE marketplaces (name text PRIMARY KEY);
  INSERT INTO marketplaces SELECT marketplace FROM sales UNION SELECT marketplace FROM listings UNION SELECT marketplace FROM offers ON CONFLICT DO NOTHING;`,
  // 18: sales in one table again, no partition per collection (migration 4's
  // layout): a chain has hundreds of thousands of collections, and each
  // partition cost a table, five indexes and a lock in every statement that
  // could not prune them (a batch naming 1,000 new collections ran out of
  // shared memory; a bare count(*) failed at ~6,400). Every index leads with
  // the collection (but the natural key, which holds it), so a collection's
  // rows stay together in each, and the table distributes on Citus by
  // collection_id as it is (docs/postgresql.md, "Past one primary").
  unpartitionSales,
  // 19: a sale keeps its /v1 JSON only, as SQLite's 19. The column is only
  // marked dropped (no rewrite); its space comes back as rows are
  // rewritten, or at once by VACUUM FULL sales.
  "ALTER TABLE sales DROP COLUMN wire_pb;",
  // 20: a collection is (chain, address), as SQLite's 20 (docs/chains.md):
  // existing rows are Ethereum's; a constant default adds no rewrite.
  `ALTER TABLE collections ADD COLUMN chain text NOT NULL DEFAULT '${DEFAULT_CHAIN}';
  ALTER TABLE collections DROP CONSTRAINT collections_address_key;
  ALTER TABLE collections ADD CONSTRAINT collections_chain_address_key UNIQUE (chain, address);`,
  // 21: a sale's and a transfer's block hash, as SQLite's 21 (every sale's
  // JSON rewritten once: its rows too, until VACUUM).
  `ALTER TABLE sales ADD COLUMN block_hash bytea;
  ALTER TABLE transfers ADD COLUMN block_hash bytea;
  ${SALE_JSON_BLOCK_HASH("left(wire_json, -1)")}`,
  // 22: reorganisations (reorgs.ts), as SQLite's 22: sales and transfers by
  // block, and the log of what each reorganisation removed.
  REORGS_MIGRATION,
  // 23: each chain's finalized block (reorgs.ts), as SQLite's 23.
  FINALITY_MIGRATION,
  // 24: the records taken back, kept at their removal's feed position (reorgs.ts), as SQLite's 24.
  REMOVALS_MIGRATION,
  // 25: the records taken back by time (reorgs.ts), as SQLite's 25.
  REMOVALS_BY_TIME_MIGRATION,
  // 26: a listing's and an offer's on-chain block and block hash, as SQLite's 26:
  // the generated JSON made again with them (every listing's row rewritten once).
  `${LISTING_BLOCK_COLUMNS({ block: "bigint", hash: "bytea" })}
  ALTER TABLE listings DROP COLUMN wire_json;
  ALTER TABLE listings ADD COLUMN wire_json text GENERATED ALWAYS AS (${listingJsonSql("", hexExpr)}) STORED;`,
  // 27: a webhook of settled data only (webhooks.ts; SQLite's webhooks file adds the column when it lacks it).
  FINAL_WEBHOOKS_MIGRATION,
  // 28: the orders' logs and the orders taken back whole (order-reorgs.ts), as SQLite's 28.
  ORDER_LOG_MIGRATION,
  // 29: every sale's wash flags, evaluated for the sales already held (wash.ts), as SQLite's 29.
  washFlagsMigration,
  // 30: the collections list's summaries of every sale, for includeWash (collection-summaries.ts).
  WASH_SUMMARIES_MIGRATION,
  // 31: a sale's payment token and fees, as SQLite's 31 (text, as the fees are told: "" for untold).
  `ALTER TABLE sales ADD COLUMN currency text NOT NULL DEFAULT 'ETH', ADD COLUMN marketplace_fee text NOT NULL DEFAULT '', ADD COLUMN royalty_fee text NOT NULL DEFAULT '';
  ALTER TABLE sale_removals ADD COLUMN currency text NOT NULL DEFAULT 'ETH', ADD COLUMN marketplace_fee text NOT NULL DEFAULT '', ADD COLUMN royalty_fee text NOT NULL DEFAULT '';`,
  // 32: price points, as SQLite's 32.
  PRICE_POINTS_SCHEMA,
  // 33: an order's payment token, as SQLite's 33.
  ORDER_CURRENCY_MIGRATION("text"),
  // 34: the series and the collections list's summaries keep their sales' US dollars (usd-migration.ts; docs/money.md), as SQLite's 34.
  USD_SERIES_MIGRATION,
  // 35: a sale's seller in its token's index, as SQLite's 35 (wash.ts ALONE_SQL.soldBy: a new sale's window asked of the index alone).
  `DROP INDEX sales_by_asset;
  CREATE INDEX sales_by_asset ON sales (collection_id, asset_id, timestamp DESC, block DESC, hash) INCLUDE (marketplace, price, seller);`,
  // 36: a token's and a collection's metadata, as SQLite's 36.
  METADATA_MIGRATION("text"),
  // 37: spam collections and flagged tokens (flags.ts), as SQLite's 37.
  FLAGS_SCHEMA,
  // 38: the collections list's market cap and all-time volume orders (collection-summaries.ts), as SQLite's 38.
  SUMMARY_ORDERS_MIGRATION,
  // 39: a token's record written is a live-feed event, as SQLite's 39 (shared/token-feed.ts).
  `${TOKEN_FEED_MIGRATION("bigint")}
  ${TOKEN_POSITION_MIGRATION("bigint")};`,
  // 40: listings as orders: maker and expiry (fillable.ts, shared/listing-orders.ts), their ready answers written again, as SQLite's 40.
  async (client) => {
    await client.query(LISTING_ORDER_COLUMNS("text", "bigint"));
    await backfillPgWireRows(client, true);
  },
  // 41: floor history kept at write time (floor-history.ts, shared/floor-history.ts), found for what is stored, as SQLite's 41.
  async (client) => {
    await client.query(FLOOR_HISTORY_SCHEMA);
    await new PgFloorHistory(client).rebuild();
  },
  // 42: ERC-1155: transfers' amounts, balances by token and owner (balances.ts), holders by each collection's token standard (holders.ts), as SQLite's 42.
  `${BALANCES_MIGRATION}\n${HOLDERS_BY_STANDARD_MIGRATION}`,
  // 43: nothing to mend (SQLite's 43 mends a trigger): a merge of transfers here finds every listing of its tokens again (listing-history.ts).
  "SELECT 1",
  // 44: ERC-1155: a sale's and a listing's quantity (shared/quantities.ts), every listing's ready answers written again, as SQLite's 44.
  async (client) => {
    await client.query(QUANTITY_COLUMNS("bigint"));
    await backfillPgWireRows(client, true);
  },
  // 45: an ERC-1155 listing judged by its maker's balance (fillable.ts, as SQLite's 45): the listings of ERC-1155 collections
  // found again, their spans rebuilt, the floor's history settled.
  async (client) => {
    for (const sql of listingsMovedBy(`SELECT collection_id, asset_id FROM listings WHERE ${standardIs("listings.collection_id", "ERC1155")}`, "SELECT 1")) {
      await client.query(sql);
    }
    await new PgFloorHistory(client).settle();
  },
];

/**
 * Migration 18: the partitioned sales table (and every partition) becomes
 * one table with the same columns and indexes, read from the catalog so
 * they are exactly the parent's.
 */
async function unpartitionSales(client: pg.PoolClient): Promise<void> {
  const partitioned = await client.query("SELECT 1 FROM pg_partitioned_table WHERE partrelid = 'sales'::regclass");
  if (partitioned.rowCount === 0) return;
  const indexes = (
    await client.query<{ def: string }>("SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index WHERE indrelid = 'sales'::regclass ORDER BY indisunique DESC, indexrelid")
  ).rows.map(({ def }) => def.replace(" ON ONLY ", " ON "));
  await client.query(`
    CREATE TABLE sales_flat (LIKE sales INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE);
    INSERT INTO sales_flat SELECT * FROM sales ORDER BY collection_id, timestamp DESC, block DESC;
    DROP TABLE sales;
    ALTER TABLE sales_flat RENAME TO sales;`);
  for (const def of indexes) await client.query(def);
  await client.query("ANALYZE sales");
}
