import type { Statement } from "better-sqlite3";
import { type Db, schemaVersion } from "./database.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import { hexSql, hexToBytes } from "./hex.js";
import { type SalesSummary, SalesStatsReader, type StatsFilter } from "./sales-stats.js";

// Read side of the store: every query the service runs, prepared once (per
// filter combination) and served by an index in the order decisions.md sets.
// Pages are keyset pages: a page asks for limit + 1 rows, and the position
// after its last row is returned as a key for the next page.

export type KeyValue = number | string;
/** The type of each element of a list's page key, for validating decoded tokens. */
export type KeySpec = readonly ("int" | "text")[];

export interface PageRequest {
  limit: number;
  /** Position after which the page starts; null for the first page. */
  after: KeyValue[] | null;
}

export interface Page<T> {
  rows: T[];
  /** Key of the last row when more rows follow, else null. */
  nextKey: KeyValue[] | null;
}

export interface AppraisalRow {
  contractAddress: string;
  assetId: string;
  fairMarketValue: string;
  confidence: string;
}

export interface RarityRow {
  contractAddress: string;
  assetId: string;
  currentOwner: string;
  rarityScore: number;
  statisticalRarity: number;
  rarityRank: number;
}

export interface SaleRow {
  hash: string;
  from: string;
  to: string;
  contractAddress: string;
  assetId: string;
  timestamp: number;
  block: number;
  price: string;
  amountReceived: string;
  marketplace: string;
}

export type ListingStatusName = "CREATED" | "FULFILLED" | "CANCELLED" | "EXPIRED";

export interface ListingRow {
  marketplaceId: string;
  marketplace: string;
  contractAddress: string;
  assetId: string;
  createdAt: number;
  lastUpdatedAt: number;
  price: string;
  status: ListingStatusName;
}

export interface SocialUserRow {
  id: string;
  screenName: string;
  profileImageUrl: string;
  description: string;
  name: string;
  location: string;
  followersCount: number;
  verified: boolean;
  statusesCount: number;
  favouritesCount: number;
  protected: boolean;
}

export interface InfluencerRow {
  user: SocialUserRow;
  score: number;
}

export interface TweetRow {
  id: string;
  user: SocialUserRow;
  source: string;
  text: string;
  retweetCount: number;
  favoriteCount: number;
  possiblySensitive: boolean;
  lang: string;
  /** Canonical protobuf JSON of the retweeted post, or null. */
  retweetedStatusJson: string | null;
  createdAt: string;
  date: string;
  originalId: string;
  originalText: string;
  originalTweet: boolean;
  interaction: number;
}

export interface ScoreRow {
  name: string;
  contractAddress: string;
  hype: number;
  gains: number;
  community: number;
  total: number;
}

export interface TimeWindow {
  since?: number | undefined;
  until?: number | undefined;
}

export interface SalesFilter extends TimeWindow {
  assetId?: string | undefined;
  marketplace?: string | undefined;
}

export interface ListingsFilter {
  assetId?: string | undefined;
  marketplace?: string | undefined;
  status?: ListingStatusName | undefined;
}

export const APPRAISAL_KEY: KeySpec = ["text"];
export const RARITY_KEY: KeySpec = ["int", "text"];
export const SALE_KEY: KeySpec = ["int", "int", "text", "text"];
export const LISTING_KEY: KeySpec = ["int", "text", "text"];

const USER_COLUMNS = `u.id AS userId, u.screen_name, u.profile_image_url, u.description, u.name AS userName,
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

type Row = Record<string, unknown>;

export class ReadStore {
  readonly #db: Db;
  readonly #statements = new Map<string, Statement>();

  readonly #dataVersion: Statement;
  readonly #stats: SalesStatsReader;
  /** The store's file. */
  get path(): string {
    return this.#db.name;
  }

  /** The schema version of the store as it is now (an import may migrate it under a running server). */
  schemaVersion(): number {
    return schemaVersion(this.#db);
  }

  /** Runs a read in one transaction: every statement sees the same snapshot. */
  readonly #snapshot: <T>(read: () => T) => T;

  constructor(db: Db) {
    this.#db = db;
    this.#dataVersion = db.prepare("PRAGMA data_version").pluck();
    this.#stats = new SalesStatsReader((sql) => this.#prepare(sql));
    this.#snapshot = db.transaction((read: () => unknown) => read()) as <T>(read: () => T) => T;
  }

  /** Prepares a statement the first time its SQL is seen, then reuses it. */
  #prepare(sql: string): Statement {
    let stmt = this.#statements.get(sql);
    if (!stmt) {
      stmt = this.#db.prepare(sql);
      this.#statements.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * A number that changes whenever another connection (an import, a derive,
   * a key change) has committed since the last call: SQLite's data_version,
   * read from shared memory in WAL mode under its read lock (2 µs alone,
   * 10-20 µs under load; transport/freshness.ts reads it once per loop turn).
   */
  dataVersion(): number {
    return this.#dataVersion.get() as number;
  }

  /** Every SQL text prepared so far (for query-plan tests). */
  preparedSql(): string[] {
    return [...this.#statements.keys()];
  }

  /** The id of a collection the store knows anything about, or undefined. */
  collectionId(address: string): number | undefined {
    const row = this.#prepare("SELECT id FROM collections WHERE address = ?").get(address) as
      | { id: number }
      | undefined;
    return row?.id;
  }

  appraisalsPage(collectionId: number, page: PageRequest): Page<AppraisalRow> {
    const after = page.after ? "AND a.asset_key > ?" : "";
    const sql = `SELECT c.address, ${assetIdSql("a.")}, a.fair_market_value, a.confidence
      FROM appraisals a JOIN collections c ON c.id = a.collection_id
      WHERE a.collection_id = ? ${after}
      ORDER BY a.asset_key LIMIT ?`;
    const params: unknown[] = [collectionId];
    if (page.after) params.push(assetKey(page.after[0] as string));
    params.push(page.limit + 1);
    return toPage(this.#prepare(sql).all(...params) as Row[], page.limit, toAppraisal, (r) => [r.assetId]);
  }

  appraisalsByAsset(collectionId: number, assetIds: readonly string[]): AppraisalRow[] {
    const sql = `SELECT c.address, ${assetIdSql("a.")}, a.fair_market_value, a.confidence
      FROM json_each(?) j CROSS JOIN appraisals a ON a.collection_id = ? AND a.asset_key = j.value
      JOIN collections c ON c.id = a.collection_id
      ORDER BY a.asset_key`;
    return (this.#prepare(sql).all(keysJson(assetIds), collectionId) as Row[]).map(toAppraisal);
  }

  rarityPage(collectionId: number, page: PageRequest): Page<RarityRow> {
    const after = page.after ? "AND (r.rarity_rank, r.asset_key) > (?, ?)" : "";
    const sql = `SELECT c.address, ${assetIdSql("r.")}, r.current_owner, r.rarity_score, r.statistical_rarity, r.rarity_rank
      FROM rarity r JOIN collections c ON c.id = r.collection_id
      WHERE r.collection_id = ? ${after}
      ORDER BY r.rarity_rank, r.asset_key LIMIT ?`;
    const params: unknown[] = [collectionId];
    if (page.after) params.push(page.after[0], assetKey(page.after[1] as string));
    params.push(page.limit + 1);
    return toPage(this.#prepare(sql).all(...params) as Row[], page.limit, toRarity, (r) => [
      r.rarityRank,
      r.assetId,
    ]);
  }

  rarityByAsset(collectionId: number, assetIds: readonly string[]): RarityRow[] {
    const sql = `SELECT c.address, ${assetIdSql("r.")}, r.current_owner, r.rarity_score, r.statistical_rarity, r.rarity_rank
      FROM json_each(?) j CROSS JOIN rarity r ON r.collection_id = ? AND r.asset_key = j.value
      JOIN collections c ON c.id = r.collection_id
      ORDER BY r.rarity_rank, r.asset_key`;
    return (this.#prepare(sql).all(keysJson(assetIds), collectionId) as Row[]).map(toRarity);
  }

  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest): Page<SaleRow> {
    const where = ["s.collection_id = ?"];
    const params: unknown[] = [collectionId];
    addSalesFilter(where, params, filter, "s.");
    if (page.after) {
      // The leading "<=" bounds the index seek; the rest breaks timestamp ties,
      // so a page costs the same however deep it is.
      const [ts, block, hash, assetId] = page.after;
      where.push(`s.timestamp <= ? AND (s.timestamp < ? OR (s.timestamp = ? AND (s.block < ? OR (s.block = ?
        AND (s.hash, s.asset_key) > (?, ?)))))`);
      params.push(ts, ts, ts, block, block, hexToBytes(hash as string), assetKey(assetId as string));
    }
    const sql = `SELECT c.address, ${hexSql("s.hash", "hash")}, ${hexSql("s.seller", "seller")}, ${hexSql("s.buyer", "buyer")},
        ${assetIdSql("s.")}, s.timestamp, s.block, s.price,
        s.amount_received, s.marketplace
      FROM sales s INDEXED BY ${salesIndex(filter)} JOIN collections c ON c.id = s.collection_id
      WHERE ${where.join(" AND ")}
      ORDER BY s.timestamp DESC, s.block DESC, s.hash, s.asset_key LIMIT ?`;
    params.push(page.limit + 1);
    return toPage(this.#prepare(sql).all(...params) as Row[], page.limit, toSale, (r) => [
      r.timestamp,
      r.block,
      r.hash,
      r.assetId,
    ]);
  }

  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest): Page<ListingRow> {
    const where = ["l.collection_id = ?"];
    const params: unknown[] = [collectionId];
    for (const [column, value] of [
      ["asset_key", filter.assetId === undefined ? undefined : assetKey(filter.assetId)],
      ["marketplace", filter.marketplace],
      ["status", filter.status],
    ] as const) {
      if (value !== undefined) {
        where.push(`l.${column} = ?`);
        params.push(value);
      }
    }
    if (page.after) {
      const [createdAt, marketplace, marketplaceId] = page.after;
      where.push(`l.created_at <= ? AND (l.created_at < ? OR (l.created_at = ?
        AND (l.marketplace, l.marketplace_id) > (?, ?)))`);
      params.push(createdAt, createdAt, createdAt, marketplace, marketplaceId);
    }
    const sql = `SELECT c.address, l.marketplace_id, l.marketplace, ${assetIdSql("l.")}, l.created_at, l.last_updated_at,
        l.price, l.status
      FROM listings l INDEXED BY ${listingsIndex(filter)} JOIN collections c ON c.id = l.collection_id
      WHERE ${where.join(" AND ")}
      ORDER BY l.created_at DESC, l.marketplace, l.marketplace_id LIMIT ?`;
    params.push(page.limit + 1);
    return toPage(this.#prepare(sql).all(...params) as Row[], page.limit, toListing, (r) => [
      r.createdAt,
      r.marketplace,
      r.marketplaceId,
    ]);
  }

  /**
   * A collection's stats for a window, from one snapshot of the store (an
   * import committing meanwhile cannot mix its rows into the sums), in a
   * bounded number of index seeks per marketplace (store/sales-stats.ts).
   */
  salesSummary(collectionId: number, filter: StatsFilter): SalesSummary {
    return this.#snapshot(() => this.#stats.summary(collectionId, filter));
  }

  topInfluencers(collectionId: number, limit: number): InfluencerRow[] {
    const sql = `SELECT i.score, ${USER_COLUMNS}
      FROM influencers i JOIN social_users u ON u.id = i.user_id
      WHERE i.collection_id = ? ORDER BY i.score DESC, i.user_id LIMIT ?`;
    return (this.#prepare(sql).all(collectionId, limit) as Row[]).map((r) => ({
      user: toUser(r),
      score: r.score as number,
    }));
  }

  topTweets(collectionId: number, limit: number): TweetRow[] {
    const sql = `SELECT t.*, ${USER_COLUMNS}
      FROM tweets t JOIN social_users u ON u.id = t.user_id
      WHERE t.collection_id = ? ORDER BY t.interaction DESC, t.id LIMIT ?`;
    return (this.#prepare(sql).all(collectionId, limit) as Row[]).map((r) => ({
      id: r.id as string,
      user: toUser(r),
      source: r.source as string,
      text: r.text as string,
      retweetCount: r.retweet_count as number,
      favoriteCount: r.favorite_count as number,
      possiblySensitive: r.possibly_sensitive === 1,
      lang: r.lang as string,
      retweetedStatusJson: r.retweeted_status as string | null,
      createdAt: r.created_at as string,
      date: r.date as string,
      originalId: r.original_id as string,
      originalText: r.original_text as string,
      originalTweet: r.original_tweet === 1,
      interaction: r.interaction as number,
    }));
  }

  score(collectionId: number): ScoreRow | undefined {
    const sql = `SELECT c.name, c.address, s.hype, s.gains, s.community, s.total
      FROM scores s, collections c WHERE s.collection_id = ? AND c.id = ?`;
    // Both sides by their key: a join on c.id = s.collection_id lets the planner scan scores.
    const r = this.#prepare(sql).get(collectionId, collectionId) as Row | undefined;
    if (!r) return undefined;
    return {
      name: r.name as string,
      contractAddress: r.address as string,
      hype: r.hype as number,
      gains: r.gains as number,
      community: r.community as number,
      total: r.total as number,
    };
  }
}

// Each filter combination names its index (INDEXED BY): the index whose
// leading columns bind the most selective filter, the asset before the
// marketplace or status. The planner would mostly find the same with
// statistics (refreshed after every import and derive), but a store served
// read-only cannot gather them, and a wrong guess scans a whole collection
// (test/store/query-plans.test.ts checks the columns each seek binds).

function salesIndex(f: SalesFilter): string {
  if (f.assetId !== undefined) return "sales_by_asset";
  if (f.marketplace !== undefined) return "sales_by_marketplace";
  return "sales_by_time";
}

function listingsIndex(f: ListingsFilter): string {
  if (f.assetId !== undefined) return "listings_by_asset";
  // With a marketplace, created_at then marketplace_id is its index's own
  // order; listings_by_status would need a sort when both are given.
  if (f.marketplace !== undefined) return "listings_by_marketplace";
  if (f.status !== undefined) return "listings_by_status";
  return "listings_by_time";
}

function addSalesFilter(where: string[], params: unknown[], f: SalesFilter, alias: string): void {
  if (f.assetId !== undefined) {
    where.push(`${alias}asset_key = ?`);
    params.push(assetKey(f.assetId));
  }
  if (f.marketplace !== undefined) {
    where.push(`${alias}marketplace = ?`);
    params.push(f.marketplace);
  }
  if (f.since !== undefined) {
    where.push(`${alias}timestamp >= ?`);
    params.push(f.since);
  }
  if (f.until !== undefined) {
    where.push(`${alias}timestamp <= ?`);
    params.push(f.until);
  }
}

function keysJson(assetIds: readonly string[]): string {
  return JSON.stringify(assetIds.map(assetKey));
}

function toPage<T>(rows: Row[], limit: number, map: (r: Row) => T, keyOf: (t: T) => KeyValue[]): Page<T> {
  const more = rows.length > limit;
  const mapped = (more ? rows.slice(0, limit) : rows).map(map);
  const last = mapped[mapped.length - 1];
  return { rows: mapped, nextKey: more && last !== undefined ? keyOf(last) : null };
}

function toAppraisal(r: Row): AppraisalRow {
  return {
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    fairMarketValue: r.fair_market_value as string,
    confidence: r.confidence as string,
  };
}

function toRarity(r: Row): RarityRow {
  return {
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    currentOwner: r.current_owner as string,
    rarityScore: r.rarity_score as number,
    statisticalRarity: r.statistical_rarity as number,
    rarityRank: r.rarity_rank as number,
  };
}

function toSale(r: Row): SaleRow {
  return {
    hash: r.hash as string,
    from: r.seller as string,
    to: r.buyer as string,
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    timestamp: r.timestamp as number,
    block: r.block as number,
    price: r.price as string,
    amountReceived: r.amount_received as string,
    marketplace: r.marketplace as string,
  };
}

function toListing(r: Row): ListingRow {
  return {
    marketplaceId: r.marketplace_id as string,
    marketplace: r.marketplace as string,
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    createdAt: r.created_at as number,
    lastUpdatedAt: r.last_updated_at as number,
    price: r.price as string,
    status: r.status as ListingStatusName,
  };
}

function toUser(r: Row): SocialUserRow {
  return {
    id: r.userId as string,
    screenName: r.screen_name as string,
    profileImageUrl: r.profile_image_url as string,
    description: r.description as string,
    name: r.userName as string,
    location: r.location as string,
    followersCount: r.followers_count as number,
    verified: r.verified === 1,
    statusesCount: r.statuses_count as number,
    favouritesCount: r.favourites_count as number,
    protected: r.protected === 1,
  };
}

