import type {
  AppraisalRow,
  InfluencerRow,
  ListingRow,
  ListingStatusName,
  RarityRow,
  SaleRow,
  SalesSummary,
  ScoreRow,
  TweetRow,
} from "../domain/records.js";
import type { KeyGrant } from "./api-keys.js";

// What the service reads, one repository per resource, each with a SQLite
// and a PostgreSQL implementation side by side (store/<resource>/). SQLite
// answers synchronously (better-sqlite3), PostgreSQL with promises; the
// MaybePromise results let the SQLite path stay synchronous where it matters
// (key checks and the data version on a cached answer).

export type MaybePromise<T> = T | Promise<T>;

/** `then` for a value that may or may not be a promise: synchronous when it is not. */
export function settle<T, R>(value: MaybePromise<T>, then: (v: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(then) : then(value);
}

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

export interface TimeWindow {
  since?: number | undefined;
  until?: number | undefined;
}

export interface SalesFilter extends TimeWindow {
  assetId?: string | undefined;
  marketplace?: string | undefined;
}

export interface StatsFilter extends TimeWindow {
  assetId?: string | undefined;
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

export interface CollectionsRepository {
  /** The id of a collection the store knows anything about, or undefined. */
  collectionId(address: string): MaybePromise<number | undefined>;
  score(collectionId: number): MaybePromise<ScoreRow | undefined>;
}

export interface AssetMetricsRepository {
  appraisalsPage(collectionId: number, page: PageRequest): MaybePromise<Page<AppraisalRow>>;
  appraisalsByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<AppraisalRow[]>;
  rarityPage(collectionId: number, page: PageRequest): MaybePromise<Page<RarityRow>>;
  rarityByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<RarityRow[]>;
}

export interface SalesRepository {
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest): MaybePromise<Page<SaleRow>>;
  /** A window's totals from one snapshot of the store, in a bounded number of index seeks. */
  salesSummary(collectionId: number, filter: StatsFilter): MaybePromise<SalesSummary>;
}

export interface ListingsRepository {
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest): MaybePromise<Page<ListingRow>>;
}

export interface SocialRepository {
  topInfluencers(collectionId: number, limit: number): MaybePromise<InfluencerRow[]>;
  topTweets(collectionId: number, limit: number): MaybePromise<TweetRow[]>;
}

export interface KeysRepository {
  /** The grant of a valid, unrevoked key; undefined otherwise. Read on every check, so revocations apply at once. */
  lookup(key: string): MaybePromise<KeyGrant | undefined>;
}

/** What the server needs to know about the store itself. */
export interface StoreInfo {
  /** For messages: the file, or the PostgreSQL URL without its password. */
  readonly description: string;
  readonly engine: "sqlite" | "postgres";
  /** Moves on every committed write (SQLite: data_version; PostgreSQL: store_state, replicated with the data). */
  dataVersion(): MaybePromise<number>;
  schemaVersion(): MaybePromise<number>;
  /** The schema version this build needs. */
  readonly expectedSchemaVersion: number;
  /** Unix seconds of the last write, when known. */
  lastWrite(): MaybePromise<number>;
}

export interface ReadRepositories {
  collections: CollectionsRepository;
  assetMetrics: AssetMetricsRepository;
  sales: SalesRepository;
  listings: ListingsRepository;
  social: SocialRepository;
  keys: KeysRepository;
  info: StoreInfo;
  close(): Promise<void>;
}

/** A page of `rows` fetched with limit + 1: the extra row only says that more follow. */
export function toPage<R, T>(rows: R[], limit: number, map: (r: R) => T, keyOf: (t: T) => KeyValue[]): Page<T> {
  const more = rows.length > limit;
  const mapped = (more ? rows.slice(0, limit) : rows).map(map);
  const last = mapped[mapped.length - 1];
  return { rows: mapped, nextKey: more && last !== undefined ? keyOf(last) : null };
}
