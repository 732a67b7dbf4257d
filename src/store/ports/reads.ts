import type { UsdSummary } from "../../domain/money.js";
import type { Fragment, WireForm } from "../../domain/wire/fragments.js";
import type { AppraisalRow, InfluencerRow, ListingRow, ListingStatusName, RarityRow, SaleRow, SalesSummary, ScoreRow, TransferRow, TweetRow } from "../../domain/rows.js";
import type { FeedRepository, RemovableKind } from "./feed.js";
import type { KeysRepository } from "./keys.js";
import type { AnalyticsRepository, CollectionListRepository, OffersRepository, PricesRepository, TokensRepository } from "./market.js";
import type { KeySpec, MaybePromise, Page, PageRequest, TimeWindow } from "./paging.js";

// The server's reads: a repository per resource, the store's own state
// (its data version, what changed since), and ReadRepositories, all of them.

export interface SalesFilter extends TimeWindow {
  /** One asset. */
  assetId?: string | undefined;
  /** Several assets (2 to 20), any of them; never with assetId. */
  assetIds?: readonly string[] | undefined;
  marketplace?: string | undefined;
  /** Sales at or below this block only (finality=final: the chain's finalized block; docs/chains.md). */
  maxBlock?: number | undefined;
}

/** The assets a sales filter names (one or several), or undefined for every asset. */
export function filterAssets(f: SalesFilter): readonly string[] | undefined {
  return f.assetIds ?? (f.assetId === undefined ? undefined : [f.assetId]);
}

export interface StatsFilter extends TimeWindow {
  assetId?: string | undefined;
  /** Sales flagged as wash trades counted too (docs/wash-trades.md); left out by default. */
  includeWash?: boolean | undefined;
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

/** Holders: token count (descending), then address. */
export const HOLDER_KEY: KeySpec = ["int", "text"];

export interface CollectionsRepository {
  /** The id of a collection the store knows anything about (`ref`: domain/chains.ts collectionRef), or undefined. */
  collectionId(ref: string): MaybePromise<number | undefined>;
  score(collectionId: number): MaybePromise<ScoreRow | undefined>;
  /** Every marketplace any sale, listing or offer of the store has named, in name order (kept by every write). */
  knownMarketplaces(): MaybePromise<string[]>;
  /** The chain's finalized block (docs/chains.md, "Finality"), or -1 when none was sent. */
  finalized(chain: string): MaybePromise<number>;
}

export interface AssetMetricsRepository {
  appraisalsPage(collectionId: number, page: PageRequest): MaybePromise<Page<AppraisalRow>>;
  appraisalsByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<AppraisalRow[]>;
  rarityPage(collectionId: number, page: PageRequest): MaybePromise<Page<RarityRow>>;
  rarityByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<RarityRow[]>;
}

export interface SalesRepository {
  /**
   * A page of sales as rows, or, given a form, as each row's ready answer in
   * it (domain/wire/fragments.ts), written with the row: one read, the
   * caller's codec saying which (service/list-answer.ts).
   */
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: undefined): MaybePromise<Page<SaleRow>>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): MaybePromise<Page<Fragment>>;
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest, form?: WireForm): MaybePromise<Page<SaleRow> | Page<Fragment>>;
  /** A window's totals from one snapshot of the store, in a bounded number of index seeks. */
  salesSummary(collectionId: number, filter: StatsFilter): MaybePromise<SalesSummary>;
  /**
   * A window's sales summed in US dollars, each at its point in force
   * (docs/money.md, "Stats in USD"): read from the window's sales, a point's
   * seek each, not from aggregates; its cost grows with the window's sales,
   * so it reads at most `maxSales` of them: undefined when there are more.
   */
  salesUsdSummary(collectionId: number, filter: StatsFilter, maxSales: number): MaybePromise<UsdSummary | undefined>;
}

export interface ListingsRepository {
  /** As salesPage; the ready answers with status and lastUpdatedAt as they are now. */
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: undefined): MaybePromise<Page<ListingRow>>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): MaybePromise<Page<Fragment>>;
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest, form?: WireForm): MaybePromise<Page<ListingRow> | Page<Fragment>>;
}

/** Transfers: timestamp, block and log index (all descending), then hash and asset id. */
export const TRANSFER_KEY: KeySpec = ["int", "int", "int", "text", "text"];

export interface TransfersRepository {
  /** `maxBlock`: transfers at or below this block only (finality=final). */
  transfersPage(collectionId: number, page: PageRequest, maxBlock?: number): MaybePromise<Page<TransferRow>>;
}

/** A sale or transfer a reorganisation took back, as kept (docs/chains.md, "Removals in the feeds"). */
export interface RemovedRecord {
  kind: RemovableKind;
  /** The record as it was: a SaleRow, TransferRow, ListingRow or OfferRow (kind). */
  row: unknown;
  /** Its time (a sale's or transfer's timestamp, an order's creation) and block: the page's order. */
  time: number;
  block: number;
  /** The removal's feed position. */
  seq: number;
  /** The position the record was last sent at. */
  originalSeq: number;
}

export const REMOVAL_KEY: KeySpec = ["int", "int", "int"];

export interface RemovalsRepository {
  /** A collection's records of `kinds` taken back, newest record first (REMOVAL_KEY). */
  removalsPage(collectionId: number, kinds: readonly RemovableKind[], page: PageRequest): MaybePromise<Page<RemovedRecord>>;
}

export interface SocialRepository {
  /** As salesPage: rows, or ready answers given a form, each with its user's profile as it is now. */
  topInfluencers(collectionId: number, limit: number, form?: undefined): MaybePromise<InfluencerRow[]>;
  topInfluencers(collectionId: number, limit: number, form: WireForm): MaybePromise<Fragment[]>;
  topInfluencers(collectionId: number, limit: number, form?: WireForm): MaybePromise<InfluencerRow[] | Fragment[]>;
  topTweets(collectionId: number, limit: number, form?: undefined): MaybePromise<TweetRow[]>;
  topTweets(collectionId: number, limit: number, form: WireForm): MaybePromise<Fragment[]>;
  topTweets(collectionId: number, limit: number, form?: WireForm): MaybePromise<TweetRow[] | Fragment[]>;
}

/** What the server needs to know about the store itself. */
export interface StoreInfo {
  /** For messages: the file, or the PostgreSQL URL without its password. */
  readonly description: string;
  readonly engine: "sqlite" | "postgres";
  /** Moves on every committed write (SQLite: data_version; PostgreSQL: store_state, replicated with the data). */
  dataVersion(): MaybePromise<number>;
  /**
   * What was committed since `since` (a `now` this returned before; none at
   * the first call, which only reports `now`). Every write transaction
   * stamps the collections it changed with the version it commits as, so a
   * reader can forget what it remembered of those collections alone.
   * Cheap when nothing moved (SQLite: shared memory; PostgreSQL: one row).
   */
  changesSince(since: DataVersion | undefined): MaybePromise<StoreChanges>;
  schemaVersion(): MaybePromise<number>;
  /** The schema version this build needs. */
  readonly expectedSchemaVersion: number;
  /** Unix seconds of the last write, when known. */
  lastWrite(): MaybePromise<number>;
}

/** Where the store stands: its data (collections, social users) and its keys, each a number that only grows. */
export interface DataVersion {
  readonly data: number;
  readonly keys: number;
}

export interface StoreChanges {
  readonly now: DataVersion;
  /**
   * The collections (references: domain/chains.ts collectionRef) whose data changed, or "all"
   * when a change may reach any of them (a social user shared by several
   * collections' influencers and tweets, a migration).
   */
  readonly collections: readonly string[] | "all";
}

export interface ReadRepositories {
  feed: FeedRepository;
  collections: CollectionsRepository;
  collectionList: CollectionListRepository;
  assetMetrics: AssetMetricsRepository;
  sales: SalesRepository;
  listings: ListingsRepository;
  transfers: TransfersRepository;
  removals: RemovalsRepository;
  tokens: TokensRepository;
  offers: OffersRepository;
  prices: PricesRepository;
  analytics: AnalyticsRepository;
  social: SocialRepository;
  keys: KeysRepository;
  info: StoreInfo;
  close(): Promise<void>;
}
