import { FED_AT } from "../shared/token-feed.js";
import { COLLECTION_METADATA_COLUMNS, collectionMetadataValues, metadataSql, TOKEN_METADATA_COLUMNS, tokenMetadataValues } from "../shared/metadata.js";
import { chainOf, describeRef } from "../../domain/chains.js";
import { refSql } from "../shared/collection-ref.js";
import type pg from "pg";
import type { Kind } from "../../domain/kinds/index.js";
import type { ListingRow, SaleRow, SocialUserRow, TweetRow } from "../../domain/rows.js";
import { influencerFragments, listingFragments, saleJson, socialUserFragments, tweetFragments } from "../../domain/wire/fragments.js";
import { CURRENCY } from "../../domain/wire/messages.js";
import { listingMoved } from "../shared/conflicts.js";
import type { ImportRecord } from "../ports/writes.js";
import { KEEP_LISTING_HISTORY, listingsMovedBy } from "./listing-history.js";
import { LAPSE_DUE } from "./fillable.js";
import type { OrderKind } from "../shared/order-log.js";
import { ORDER_LOGS_PRUNED, orderLogAppended, orderLogBegun, removedOrdersPerBatch, removeStagedOrderBlocks, removeStagedOrders, REPLAYED_COLLECTIONS } from "./order-reorgs.js";
import { ensureTokens, ownersFound } from "./ownership.js";
import { balancesFound } from "./balances.js";
import {
  BATCH_LINES, type BulkKind, bulkKind, bytes, col, counted, KNOW_MARKETPLACES, type KindSpec, LISTINGS_LOCK, REGISTER_COLLECTIONS, type StageColumn, TOKENS_LOCK,
  LAST_REMOVAL, LIVE_LINE, upsertSql, withCollection,
} from "./record-writes.js";
import { APPLY_HOUR_DELTAS, hourDeltasSql } from "./sales-stats.js";
import { evaluateWash, evaluateWashThenApply, REMOVED_WASH_MARKS, washMarksOf } from "./wash.js";
import { APPLY_SERIES_MARKS, REPRICED_BEFORE, REPRICED_SERIES, seriesMarksSql } from "./sales-series.js";
import { REMOVED_COLLECTIONS, REMOVED_TOKENS, removedPerBatch, refuseFinal, removeStagedBlocks, salesRemoved, SALES_REMOVED_MARKS, transfersRemoved } from "./reorgs.js";

// Each record kind's writes on PostgreSQL (the kinds are declared in
// domain/kinds; sqlite/kind-writes.ts is the same table there): its staging
// columns, a checked record's values, and the statements that merge the
// stage (record-writes.ts builds them). Ingest (group commit) and import
// both write through this table.

/** The tokens the stage names (its address and asset_id). */
const STAGED_TOKENS = "SELECT DISTINCT c.id AS collection_id, st.asset_id FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address";

/**
 * After sales or transfers: the owners of their tokens, and the listings
 * of those tokens that can no longer be filled (listing-history.ts). The
 * staged tokens are found once (a DISTINCT over the whole stage: half a
 * second for 270,000 sales, when each statement found them again).
 */
const TOKENS_FOUND = "SELECT collection_id, asset_id FROM staged_tokens";
/** The owners and listings' ends of the tokens `tokens` selects (collection_id, asset_id) found again. */
const movesOf = (tokens: string) => [
  // Kept by the connection once made (emptied at each commit): making and dropping it cost each small write transaction.
  "CREATE TEMP TABLE IF NOT EXISTS staged_tokens (collection_id integer NOT NULL, asset_id numeric NOT NULL) ON COMMIT DELETE ROWS",
  "TRUNCATE staged_tokens",
  `INSERT INTO staged_tokens ${tokens}`,
  `SELECT pg_advisory_xact_lock(${TOKENS_LOCK})`,
  // A token row made here takes its ask from the listings (token-market.ts): none may commit meanwhile.
  `SELECT pg_advisory_xact_lock(${LISTINGS_LOCK})`,
  ensureTokens(TOKENS_FOUND),
  ownersFound(TOKENS_FOUND),
  ...listingsMovedBy(TOKENS_FOUND, `SELECT pg_advisory_xact_lock(${LISTINGS_LOCK})`),
];
const MOVES_OF_STAGED_TOKENS = movesOf(STAGED_TOKENS);

/**
 * The first staged listing that names a listing under another collection
 * than the one holding it: in the table, or in an earlier line of the stage
 * (as SQLite, writing line by line, finds it).
 */
const movedRecord = (table: "listings" | "offers") => `WITH moved AS (
    SELECT st.line, st.marketplace, st.marketplace_id, ${refSql("o")} AS held, ${refSql("st")} AS named
    FROM stage st JOIN ${table} l ON l.marketplace = st.marketplace AND l.marketplace_id = st.marketplace_id
    JOIN collections o ON o.id = l.collection_id WHERE (o.chain, o.address) <> (st.chain, st.address)
    UNION ALL
    SELECT line, marketplace, marketplace_id, held, named FROM (
      SELECT line, marketplace, marketplace_id, ${refSql("st")} AS named,
        first_value(${refSql("st")}) OVER (PARTITION BY marketplace, marketplace_id ORDER BY line) AS held FROM stage st) s
    WHERE named <> held)
  SELECT marketplace, marketplace_id, held, named FROM moved ORDER BY line LIMIT 1`;

/** Refuses a stage of listings (or offers) that names one under another collection than the one holding it. */
const refuseMoved = (table: "listings" | "offers") => async (client: pg.PoolClient): Promise<void> => {
  const moved = (await client.query<{ marketplace: string; marketplace_id: string; held: string; named: string }>(movedRecord(table))).rows[0];
  if (moved !== undefined) throw listingMoved(moved.marketplace, moved.marketplace_id, describeRef(moved.held), describeRef(moved.named), table === "offers" ? "offer" : "listing");
};

const USER_STAGE = [
  col("user_id"), col("screen_name"), col("profile_image_url"), col("description"), col("user_name"), col("location"),
  col("followers_count", "bigint"), col("verified", "boolean"), col("statuses_count", "bigint"),
  col("favourites_count", "bigint"), col("protected", "boolean"), col("user_wire_json"), col("user_wire_pb", "bytea"),
];

/** The ready answer of a row (domain/wire/fragments.ts): its columns staged, as the stage's last. */
const WIRE_STAGE = (...names: string[]) => names.map((n) => col(n, n === "wire_pb" ? "bytea" : "text"));

/** A checked tweets record as the domain's row (its retweet is JSON text already: domain/kinds/parts.ts). */
function tweetRowOf(r: Record<string, unknown>): TweetRow {
  return { ...(r as unknown as TweetRow), retweetedStatusJson: (r.retweetedStatus as string | null | undefined) ?? null };
}

function userRow(u: Record<string, unknown>): unknown[] {
  const wire = socialUserFragments(u as unknown as SocialUserRow);
  return [u.id, u.screenName, u.profileImageUrl, u.description, u.name, u.location, u.followersCount, u.verified,
    u.statusesCount, u.favouritesCount, u.protected, wire.json, wire.binary];
}

const UPSERT_USERS = upsertSql(
  "social_users",
  ["id"],
  ["screen_name", "profile_image_url", "description", "name", "location", "followers_count", "verified", "statuses_count", "favourites_count", "protected",
    "wire_json", "wire_pb"],
  `SELECT user_id AS id, screen_name, profile_image_url, description, user_name AS name, location, followers_count,
     verified, statuses_count, favourites_count, protected, user_wire_json AS wire_json, user_wire_pb AS wire_pb, line FROM stage`,
);

/** Each staged sale's key and values as the merge will write them (its currency: its series' dollars): the last line of each key (of the live lines, with removals). */
const latestSales = (live: string) => `SELECT DISTINCT ON (${bytes("hash")}, c.id, st.asset_id) ${bytes("hash")} AS hash, c.id AS collection_id, st.asset_id,
    st.marketplace, st.timestamp, st.block, st.price, st.currency
  FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address${live === "" ? "" : ` WHERE ${live}`}
  ORDER BY ${bytes("hash")}, c.id, st.asset_id, st.line DESC`;

/** The stage's columns naming a sale, a transfer. */
const SALE_KEY = ["hash", "chain", "address", "asset_id"];
const TRANSFER_KEY = ["hash", "log_index", "chain", "address", "asset_id"];

/** The collections the stage's live lines name (a removal of an unknown collection's record registers none). */
const REGISTER_LIVE_COLLECTIONS =
  "INSERT INTO collections (chain, address) SELECT DISTINCT chain, address FROM stage WHERE NOT removed ON CONFLICT (chain, address) DO NOTHING";

/**
 * Sales, and (removals) the merge of a stage that holds sales taken back
 * (reorgs.ts): those deleted first, their hours and series marked, and
 * the live lines upserted.
 */
function salesSpec(removals: boolean): KindSpec {
  const live = removals ? LIVE_LINE(SALE_KEY) : "";
  const latest = latestSales(live);
  const source = withCollection(`${bytes("hash")} AS hash, c.id AS collection_id, st.asset_id, ${bytes("seller")} AS seller,
          ${bytes("buyer")} AS buyer, st.timestamp, st.block, st.price, st.amount_received, st.marketplace, ${bytes("block_hash")} AS block_hash,
          st.currency, st.marketplace_fee, st.royalty_fee, st.quantity, st.wire_json`);
  return {
    stage: [col("hash"), col("seller"), col("buyer"), col("chain"), col("address"), col("asset_id", "numeric"), col("timestamp", "bigint"),
      col("block", "bigint"), col("price", "numeric"), col("amount_received", "numeric"), col("marketplace"), col("block_hash"),
      col("removed", "boolean"), col("currency"), col("marketplace_fee"), col("royalty_fee"), col("quantity", "bigint"), ...WIRE_STAGE("wire_json")],
    // Its /v1 JSON only: a binary page is encoded from the columns (decisions.md, "A sale keeps its JSON only").
    row: (r) => [r.hash, r.from, r.to, chainOf(r), r.contractAddress, r.assetId, r.timestamp, r.block, r.price, r.amountReceived, r.marketplace,
      r.blockHash || null, r.removed === true, r.currency ?? CURRENCY, r.marketplaceFee ?? "", r.royaltyFee ?? "", r.quantity ?? "1",
      saleJson(r as unknown as SaleRow)],
    before: [
      ...(removals
        ? [REGISTER_LIVE_COLLECTIONS, ...salesRemoved(`SELECT st.line, ${bytes("hash")} AS hash, c.id AS collection_id, st.asset_id
            FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address WHERE ${LAST_REMOVAL(SALE_KEY)}`), ...REMOVED_WASH_MARKS]
        : [REGISTER_COLLECTIONS]),
      ...washMarksOf(removals ? `${source} WHERE ${live}` : source),
      ...hourDeltasSql(latest),
      ...seriesMarksSql(latest),
    ],
    counted: counted("sales", ["hash", "collection_id", "asset_id"],
        ["seller", "buyer", "timestamp", "block", "price", "amount_received", "marketplace", "block_hash", "currency", "marketplace_fee", "royalty_fee", "quantity", "wire_json"],
        removals ? `${source} WHERE ${live}` : source,
        "collection_id, timestamp DESC, block DESC", true),
    // The hour deltas and interval marks are applied by finish, once the wash rules have been evaluated (wash.ts).
    afterward: [...MOVES_OF_STAGED_TOKENS, KNOW_MARKETPLACES],
    finish: evaluateWashThenApply,
    ...(removals ? { removed: removedPerBatch("removed_sales"), check: refuseFinal("sale") } : {}),
    tables: ["collections", "sales", "sales_hourly", "sales_series", "tokens", "token_owners", "collection_holdings", "listings", "listing_spans", "token_traits"],
    serialized: true,
  };
}

/** Transfers, and (removals) the merge of a stage that holds transfers taken back, as salesSpec. */
function transfersSpec(removals: boolean): KindSpec {
  const source = withCollection(`${bytes("hash")} AS hash, st.log_index, c.id AS collection_id, st.asset_id, ${bytes("sender")} AS sender,
          ${bytes("recipient")} AS recipient, st.timestamp, st.block, ${bytes("block_hash")} AS block_hash, st.amount`);
  return {
    stage: [col("hash"), col("log_index", "bigint"), col("sender"), col("recipient"), col("chain"), col("address"), col("asset_id", "numeric"),
      col("timestamp", "bigint"), col("block", "bigint"), col("block_hash"), col("removed", "boolean"), col("amount", "bigint")],
    row: (r) => [r.hash, r.logIndex, r.from, r.to, chainOf(r), r.contractAddress, r.assetId, r.timestamp, r.block, r.blockHash || null, r.removed === true, r.amount ?? "1"],
    before: removals
      ? [REGISTER_LIVE_COLLECTIONS, ...transfersRemoved(`SELECT st.line, ${bytes("hash")} AS hash, st.log_index, c.id AS collection_id, st.asset_id
          FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address WHERE ${LAST_REMOVAL(TRANSFER_KEY)}`)]
      : [REGISTER_COLLECTIONS],
    counted: counted("transfers", ["hash", "log_index", "collection_id", "asset_id"], ["sender", "recipient", "timestamp", "block", "block_hash", "amount"],
        removals ? `${source} WHERE ${LIVE_LINE(TRANSFER_KEY)}` : source,
        undefined, true),
    // The staged tokens' balances too (balances.ts): staged_tokens holds them until the commit.
    afterward: [...MOVES_OF_STAGED_TOKENS, balancesFound(TOKENS_FOUND)],
    ...(removals ? { removed: removedPerBatch("removed_transfers"), check: refuseFinal("transfer") } : {}),
    tables: ["collections", "transfers", "tokens", "token_owners", "collection_holdings", "token_balances", "listings", "listing_spans", "token_traits"],
    serialized: true,
    lock: TOKENS_LOCK,
  };
}

/**
 * Reorganisations (reorgs.ts): every sale and transfer of the staged
 * blocks deleted, their hours and series found again, the owners and
 * listings of their tokens; the reorgs table keeps what each took back.
 */
const REORGS: KindSpec = {
  stage: [col("chain"), col("from_block", "bigint"), col("block_hashes")],
  row: (r) => [chainOf(r), r.fromBlock, JSON.stringify(r.blockHashes)],
  before: [
    ...SALES_REMOVED_MARKS,
    ...REMOVED_WASH_MARKS,
    "ANALYZE hour_deltas",
    ...APPLY_HOUR_DELTAS,
    ...APPLY_SERIES_MARKS,
    ...movesOf(REMOVED_TOKENS),
    balancesFound(TOKENS_FOUND),
  ],
  counted: counted("reorgs", ["chain", "from_block"], ["block_hashes"], "SELECT chain, from_block, block_hashes, line FROM stage"),
  // The rows of its blocks deleted first, each reorganisation with its own values (reorgs.ts removedByBlocks), under the
  // transfers' writers' lock (positions and owners).
  prepare: async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(${TOKENS_LOCK})`);
    await removeStagedBlocks(client);
    await removeStagedOrderBlocks(client);
  },
  finish: evaluateWash,
  touches: `SELECT collection_id AS id FROM (${REMOVED_COLLECTIONS} UNION SELECT collection_id FROM ${REPLAYED_COLLECTIONS}) x`,
  check: refuseFinal("reorg"),
  tables: ["reorgs", "sales", "sales_hourly", "sales_series", "transfers", "tokens", "token_owners", "collection_holdings", "token_balances", "listings", "listing_spans", "token_traits",
    "offers", "listing_log", "offer_log"],
  serialized: true,
};

/** A listing's record columns as the merge writes them, from the stage (with its chain and line: the log's source too). */
const LISTING_SOURCE = withCollection(`st.marketplace, st.marketplace_id, st.chain, c.id AS collection_id, st.asset_id, st.created_at,
  st.last_updated_at AS record_updated_at, st.price, st.currency, st.maker, st.expires_at, st.quantity, st.status AS record_status, st.block, ${bytes("block_hash")} AS block_hash,
  st.wire_json_head, st.wire_json_middle, st.wire_pb`);

const LISTINGS: KindSpec = {
  stage: [col("marketplace"), col("marketplace_id"), col("chain"), col("address"), col("asset_id", "numeric"), col("created_at", "bigint"),
    col("last_updated_at", "bigint"), col("price", "numeric"), col("currency"), col("maker"), col("expires_at", "bigint"), col("status"), col("block", "bigint"),
    col("block_hash"), col("removed", "boolean"), col("quantity", "bigint"), ...WIRE_STAGE("wire_json_head", "wire_json_middle", "wire_pb")],
  row: (r) => {
    const wire = listingFragments(r as unknown as ListingRow);
    return [r.marketplace, r.marketplaceId, chainOf(r), r.contractAddress, r.assetId, r.createdAt, r.lastUpdatedAt, r.price, r.currency ?? CURRENCY,
      r.maker ?? "", r.expiresAt ?? 0, r.status, r.block, r.blockHash || null, r.removed === true, r.quantity ?? "1", wire.jsonHead, wire.jsonMiddle, wire.binary];
  },
  // The orders that may be taken back logged (order-reorgs.ts) before and after the merge.
  before: [REGISTER_COLLECTIONS, ...orderLogBegun("listings")],
  // What the records said; the answer (status, last_updated_at) follows it
  // unless the token moved since (fillable.ts, KEEP_LISTING_HISTORY).
  counted: counted("listings", ["marketplace", "marketplace_id"],
      ["collection_id", "asset_id", "created_at", "record_updated_at", "price", "currency", "maker", "expires_at", "quantity", "record_status", "block", "block_hash",
        "wire_json_head", "wire_json_middle", "wire_pb"],
      LISTING_SOURCE, undefined, true),
  after: [...KEEP_LISTING_HISTORY, orderLogAppended("listings", LISTING_SOURCE)],
  // Under the listings' lock: what came due lapses with this commit (an empty batch from the server's listing clock included).
  settle: LAPSE_DUE,
  afterward: [KNOW_MARKETPLACES],
  check: refuseMoved("listings"),
  tables: ["collections", "listings", "listing_versions", "listing_spans", "tokens", "token_traits", "listing_log", "listing_log_versions"],
  serialized: true,
  lock: LISTINGS_LOCK,
};

/** An offer's columns as the merge writes them, from the stage (with its chain and line: the log's source too). */
const OFFER_SOURCE = withCollection(`st.marketplace, st.marketplace_id, st.chain, c.id AS collection_id, nullif(st.asset_id, '')::numeric AS asset_id, st.trait_type,
  st.trait_value, st.maker, st.price, st.currency, st.created_at, st.last_updated_at, st.expires_at, st.status, st.block, ${bytes("block_hash")} AS block_hash`);

const OFFERS: KindSpec = {
  stage: [col("marketplace"), col("marketplace_id"), col("chain"), col("address"), col("asset_id"), col("trait_type"), col("trait_value"), col("maker"),
    col("price", "numeric"), col("currency"), col("created_at", "bigint"), col("last_updated_at", "bigint"), col("expires_at", "bigint"), col("status"),
    col("block", "bigint"), col("block_hash"), col("removed", "boolean")],
  row: (r) => [r.marketplace, r.marketplaceId, chainOf(r), r.contractAddress, r.assetId, r.traitType, r.traitValue, String(r.maker).toLowerCase(), r.price, r.currency ?? CURRENCY,
    r.createdAt, r.lastUpdatedAt, r.expiresAt, r.status, r.block, r.blockHash || null, r.removed === true],
  before: [REGISTER_COLLECTIONS, ...orderLogBegun("offers")],
  counted: counted("offers", ["marketplace", "marketplace_id"],
      ["collection_id", "asset_id", "trait_type", "trait_value", "maker", "price", "currency", "created_at", "last_updated_at", "expires_at", "status", "block", "block_hash"],
      OFFER_SOURCE, undefined, true),
  after: [orderLogAppended("offers", OFFER_SOURCE)],
  afterward: [KNOW_MARKETPLACES],
  check: refuseMoved("offers"),
  tables: ["collections", "offers", "offer_log"],
  serialized: true,
  lock: LISTINGS_LOCK,
};

/**
 * An order kind's merge of a stage that holds records taken back (removed:
 * true): those taken first, their orders replayed, and the stage's live
 * lines merged as any (order-reorgs.ts removeStagedOrders).
 */
function withOrderRemovals(kind: OrderKind, spec: KindSpec): KindSpec {
  return {
    ...spec,
    prepare: removeStagedOrders(kind),
    removed: removedOrdersPerBatch(BATCH_LINES),
    // The removals left the stage: their orders' collections, and the live lines'.
    touches: `SELECT DISTINCT c.id FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address
      UNION SELECT collection_id FROM ${REPLAYED_COLLECTIONS}`,
  };
}

const BUILT_IN: Record<Kind, KindSpec> = {
  collections: {
    stage: [col("chain"), col("address"), col("name"), ...COLLECTION_METADATA_COLUMNS.map((c) => col(c)), col("token_standard")],
    row: (r) => [chainOf(r), r.contractAddress, r.name, ...collectionMetadataValues(r), r.tokenStandard ?? "ERC721"],
    // The collections whose standard the stage changes, before it does: their listings are judged by the other rule after it.
    before: [
      "CREATE TEMP TABLE IF NOT EXISTS standard_changed (id integer PRIMARY KEY) ON COMMIT DELETE ROWS",
      "TRUNCATE standard_changed",
      `INSERT INTO standard_changed SELECT DISTINCT c.id FROM stage st JOIN collections c ON c.chain = st.chain AND c.address = st.address
        WHERE c.token_standard <> st.token_standard`,
    ],
    // A standard changed finds the collection's holders again (balances.ts).
    counted: counted("collections", ["chain", "address"], ["name", ...COLLECTION_METADATA_COLUMNS, "token_standard"],
        `SELECT chain, address, name, ${COLLECTION_METADATA_COLUMNS.join(", ")}, token_standard, line FROM stage`),
    // And their listings' ends (fillable.ts: an ERC-1155 listing by its maker's balance), at new feed positions, their spans rebuilt.
    afterward: listingsMovedBy("SELECT collection_id, asset_id FROM listings WHERE collection_id IN (SELECT id FROM standard_changed)",
      `SELECT pg_advisory_xact_lock(${LISTINGS_LOCK})`),
    tables: ["collections", "token_owners", "collection_holdings", "listings", "listing_spans"],
    // Under the transfers' and tokens' lock: a standard changed counts holders from their rows, which none may change meanwhile.
    serialized: true,
    lock: TOKENS_LOCK,
  },
  tokens: {
    stage: [col("chain"), col("address"), col("asset_id", "numeric"), col("current_owner"), col("attributes", "jsonb"), ...TOKEN_METADATA_COLUMNS.map((c) => col(c))],
    row: (r) => [chainOf(r), r.contractAddress, r.assetId, r.currentOwner, JSON.stringify(r.attributes), ...tokenMetadataValues(r)],
    // A new token row takes its ask from the listings (token-market.ts): none may commit meanwhile.
    before: [REGISTER_COLLECTIONS, `SELECT pg_advisory_xact_lock(${LISTINGS_LOCK})`],
    // The record's owner: the token's owner until a sale or transfer moves it (ownership.ts).
    // A record written is an event at its position and second (migration 39: shared/token-feed.ts); TOKENS_LOCK orders the positions' commits.
    counted: counted("tokens", ["collection_id", "asset_id"], ["record_owner", "attributes", "recorded", ...TOKEN_METADATA_COLUMNS, FED_AT],
        withCollection(`c.id AS collection_id, st.asset_id, st.current_owner AS record_owner, st.attributes, true AS recorded, ${metadataSql("st", "tokens")},
          floor(extract(epoch FROM statement_timestamp()))::bigint AS ${FED_AT}`), undefined, true),
    after: [ownersFound(STAGED_TOKENS)],
    tables: ["collections", "tokens", "token_owners", "collection_holdings", "token_traits", "trait_values"],
    serialized: true,
    lock: TOKENS_LOCK,
  },
  appraisals: {
    stage: [col("chain"), col("address"), col("asset_id", "numeric"), col("fair_market_value", "numeric"), col("confidence")],
    row: (r) => [chainOf(r), r.contractAddress, r.assetId, r.fairMarketValue, r.confidence],
    before: [REGISTER_COLLECTIONS],
    counted: counted("appraisals", ["collection_id", "asset_id"], ["fair_market_value", "confidence", "source"],
        withCollection("c.id AS collection_id, st.asset_id, st.fair_market_value, st.confidence, 'imported' AS source")),
    tables: ["collections", "appraisals"],
  },
  rarity: {
    stage: [col("chain"), col("address"), col("asset_id", "numeric"), col("current_owner"), col("rarity_score", "float8"),
      col("statistical_rarity", "float8"), col("rarity_rank", "integer")],
    row: (r) => [chainOf(r), r.contractAddress, r.assetId, r.currentOwner, r.rarityScore, r.statisticalRarity, r.rarityRank],
    before: [REGISTER_COLLECTIONS],
    counted: counted("rarity", ["collection_id", "asset_id"], ["current_owner", "rarity_score", "statistical_rarity", "rarity_rank", "source"],
        withCollection("c.id AS collection_id, st.asset_id, st.current_owner, st.rarity_score, st.statistical_rarity, st.rarity_rank, 'imported' AS source")),
    tables: ["collections", "rarity"],
  },
  sales: { ...salesSpec(false), withRemovals: bulkKind(salesSpec(true)) },
  listings: { ...LISTINGS, withRemovals: bulkKind(withOrderRemovals("listings", LISTINGS)) },
  transfers: { ...transfersSpec(false), withRemovals: bulkKind(transfersSpec(true)) },
  offers: { ...OFFERS, withRemovals: bulkKind(withOrderRemovals("offers", OFFERS)) },
  influencers: {
    stage: [col("chain"), col("address"), ...USER_STAGE, col("score", "float8"), ...WIRE_STAGE("wire_json_head", "wire_json_tail", "wire_pb")],
    row: (r) => {
      const wire = influencerFragments({ score: r.score as number });
      return [chainOf(r), r.contractAddress, ...userRow(r.user as Record<string, unknown>), r.score, wire.jsonHead, wire.jsonTail, wire.binary];
    },
    before: [REGISTER_COLLECTIONS, UPSERT_USERS],
    counted: counted("influencers", ["collection_id", "user_id"], ["score", "wire_json_head", "wire_json_tail", "wire_pb"],
        withCollection("c.id AS collection_id, st.user_id, st.score, st.wire_json_head, st.wire_json_tail, st.wire_pb")),
    sharedCounts: 1,
    tables: ["collections", "social_users", "influencers"],
  },
  tweets: {
    stage: [col("chain"), col("address"), col("id"), ...USER_STAGE, col("source"), col("text"), col("retweet_count", "bigint"),
      col("favorite_count", "bigint"), col("possibly_sensitive", "boolean"), col("lang"), col("retweeted_status", "jsonb"),
      col("created_at"), col("date"), col("original_id"), col("original_text"), col("original_tweet", "boolean"), col("interaction", "bigint"),
      ...WIRE_STAGE("wire_json_head", "wire_json_tail", "wire_pb")],
    row: (r) => {
      const wire = tweetFragments(tweetRowOf(r));
      return [chainOf(r), r.contractAddress, r.id, ...userRow(r.user as Record<string, unknown>), r.source, r.text, r.retweetCount,
        r.favoriteCount, r.possiblySensitive, r.lang, r.retweetedStatus ?? null, r.createdAt, r.date, r.originalId, r.originalText,
        r.originalTweet, r.interaction, wire.jsonHead, wire.jsonTail, wire.binary];
    },
    before: [REGISTER_COLLECTIONS, UPSERT_USERS],
    counted: counted("tweets", ["collection_id", "id"],
        ["user_id", "source", "text", "retweet_count", "favorite_count", "possibly_sensitive", "lang", "retweeted_status",
          "created_at", "date", "original_id", "original_text", "original_tweet", "interaction", "wire_json_head", "wire_json_tail", "wire_pb"],
        withCollection(`c.id AS collection_id, st.id, st.user_id, st.source, st.text, st.retweet_count, st.favorite_count,
          st.possibly_sensitive, st.lang, st.retweeted_status, st.created_at, st.date, st.original_id, st.original_text,
          st.original_tweet, st.interaction, st.wire_json_head, st.wire_json_tail, st.wire_pb`)),
    sharedCounts: 1,
    tables: ["collections", "social_users", "tweets"],
  },
  reorgs: REORGS,
  // A chain's finalized block, only forward: a line at or below it is unchanged.
  finality: {
    stage: [col("chain"), col("block", "bigint")],
    row: (r) => [chainOf(r), r.block],
    before: [],
    counted: counted("finality", ["chain"], ["block"],
      `SELECT st.chain, st.block, st.line FROM stage st
       WHERE st.block > coalesce((SELECT f.block FROM finality f WHERE f.chain = st.chain), -1)
         AND st.block = (SELECT max(x.block) FROM stage x WHERE x.chain = st.chain)`),
    // The orders' logs none of whose records can be taken back any more dropped (order-reorgs.ts).
    after: ORDER_LOGS_PRUNED,
    tables: ["finality", "listing_log", "listing_log_versions", "offer_log"],
    serialized: true,
    // Every record of the chain may answer another finality (shared/finality.ts).
    touchesAll: true,
  },
  // A token's USD price at a minute (docs/money.md), by natural key.
  prices: {
    stage: [col("currency"), col("minute", "bigint"), col("usd")],
    row: (r) => [r.currency, r.minute, r.usd],
    // The sales its changed points will price, with the dollars they had (sales-series.ts REPRICED_BEFORE): the series move by the difference.
    before: REPRICED_BEFORE,
    counted: counted("price_points", ["currency", "minute"], ["usd"], "SELECT st.currency, st.minute, st.usd, st.line FROM stage st"),
    after: [REPRICED_SERIES],
    tables: ["price_points", "sales_series"],
    // The series it moves are the sales merges' too: one at a time, or a sale merged meanwhile would keep its old point's dollars.
    serialized: true,
    // A point reprices the sales of its minutes in any collection (priceUsd, the amounts in USD); those whose series moved are stamped (their summaries kept).
    touchesAll: true,
    touches: "SELECT DISTINCT collection_id AS id FROM repriced",
  },
  spam: flagWrites("collection_flags", ["collection_id"], "is_spam", "isSpam", [], []),
  flags: flagWrites("token_flags", ["collection_id", "asset_id"], "is_flagged", "isFlagged", [col("asset_id", "numeric")], ["st.asset_id"]),
  scores: {
    stage: [col("name"), col("chain"), col("address"), col("hype", "float8"), col("gains", "float8"), col("community", "float8"), col("total", "float8")],
    row: (r) => [r.name, chainOf(r), r.contractAddress, r.hype, r.gains, r.community, r.total],
    before: [
      // A score's name names its collection (an empty name leaves it as it is).
      upsertSql("collections", ["chain", "address"], ["name"], "SELECT chain, address, name, line FROM stage WHERE name <> ''"),
      REGISTER_COLLECTIONS,
    ],
    counted: counted("scores", ["collection_id"], ["hype", "gains", "community", "total"],
        withCollection("c.id AS collection_id, st.hype, st.gains, st.community, st.total")),
    tables: ["collections", "scores"],
  },
};

const REGISTRY = new Map<string, BulkKind>(Object.entries(BUILT_IN).map(([k, spec]) => [k, bulkKind(spec)]));

export function kindWrites(kind: Kind): BulkKind {
  const w = REGISTRY.get(kind);
  if (w === undefined) throw new Error(`PostgreSQL has no writes for the record kind ${JSON.stringify(kind)}`);
  return w;
}

/**
 * The writes of a kind whose records are rows of one table keyed under a
 * collection and nothing more: its staged columns (after the record's
 * chain and contract address, staged as `chain` and `address`), a record's values, and its key and value
 * columns as the stage gives them (`c.id AS collection_id` names the collection).
 */
export function tableWrites(spec: {
  table: string;
  stage: readonly StageColumn[];
  row(record: ImportRecord): unknown[];
  key: readonly string[];
  values: readonly string[];
  select: string;
}): BulkKind {
  return bulkKind({
    stage: [col("chain"), col("address"), ...spec.stage],
    row: (r) => [chainOf(r), r.contractAddress, ...spec.row(r)],
    before: [REGISTER_COLLECTIONS],
    counted: counted(spec.table, spec.key, spec.values, withCollection(spec.select)),
    tables: ["collections", spec.table],
  });
}

/** The spam and flags kinds' writes (flags.ts): a mark and its reason, by collection or by token. */
function flagWrites(table: string, key: string[], mark: string, field: string, stage: StageColumn[], select: string[]): KindSpec {
  return {
    stage: [col("chain"), col("address"), ...stage, col(mark, "boolean"), col("reason")],
    row: (r) => [chainOf(r), r.contractAddress, ...(stage.length > 0 ? [r.assetId] : []), r[field], r.reason],
    before: [REGISTER_COLLECTIONS],
    counted: counted(table, key, [mark, "reason"], withCollection(["c.id AS collection_id", ...select, `st.${mark}`, "st.reason"].join(", "))),
    tables: ["collections", table],
  };
}

/** Adds a kind's writes beside the built-in ones until the returned function is called (domain/kinds registerKind). */
export function registerPgKind(kind: string, writes: BulkKind): () => void {
  if (REGISTRY.has(kind)) throw new Error(`PostgreSQL has writes for the record kind ${kind} already`);
  REGISTRY.set(kind, writes);
  return () => REGISTRY.delete(kind);
}
