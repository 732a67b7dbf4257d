import type { Fragment, WireForm } from "../domain/wire/fragments.js";
import type {
  AppraisalRow,
  InfluencerRow,
  ListingRow,
  OfferRow,
  ListingStatusName,
  RarityRow,
  SaleRow,
  SalesSummary,
  ScoreRow,
  TransferRow,
  TweetRow,
} from "../domain/records.js";
import type { Kind } from "../domain/kinds.js";
import type { SeriesBucket, SeriesInterval } from "../domain/series.js";

// The store's ports: every interface the rest of the code uses to read,
// import, derive, rebuild stats and manage keys, and the store's errors.
// Each engine implements all of it in one folder (sqlite/, postgres/),
// importing only this file, shared/ and the domain; open.ts picks the engine
// from a --db value. SQLite answers synchronously (better-sqlite3),
// PostgreSQL with promises; the MaybePromise results let the SQLite path
// stay synchronous where it matters (key checks and the data version on a
// cached answer).

/** A store that cannot be opened or is not at this build's schema: said plainly to the operator. */
export class StoreError extends Error {}

/**
 * A record the store refuses against what it holds, the caller's mistake:
 * a listing named under another collection than the one that holds it (a
 * marketplace's listing stays with its collection: decisions.md). Nothing
 * of the write it was in is kept.
 */
export class RecordConflictError extends Error {}

/** The store could not be reached (PostgreSQL down or restarting): the caller may retry; callers see `unavailable`. */
export class StoreUnavailableError extends Error {}

/**
 * What a key may do: `read` the API (every key made before scopes existed is
 * one), `ingest` records and read, or `admin`: everything an ingest key may,
 * and whatever operator-side RPCs come to need it.
 */
export type KeyScope = "read" | "ingest" | "admin";
export const KEY_SCOPES: readonly KeyScope[] = ["read", "ingest", "admin"];

/** True when a key of `scope` may write through the ingest API. */
export function mayIngest(scope: KeyScope): boolean {
  return scope === "ingest" || scope === "admin";
}

/** What a valid key grants: its identity (for its rate limit), its own limit and its scope. */
export interface KeyGrant {
  id: number;
  /** Requests per second; null: the server's default. */
  rateLimit: number | null;
  scope: KeyScope;
}

/** A key as `keys list` shows it (never the key itself). */
export interface ApiKeyInfo {
  id: number;
  name: string;
  createdAt: number;
  revokedAt: number | null;
  /** Requests per second; null: the server's default. */
  rateLimit: number | null;
  scope: KeyScope;
}

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
  /** One asset. */
  assetId?: string | undefined;
  /** Several assets (2 to 20), any of them; never with assetId. */
  assetIds?: readonly string[] | undefined;
  marketplace?: string | undefined;
}

/** The assets a sales filter names (one or several), or undefined for every asset. */
export function filterAssets(f: SalesFilter): readonly string[] | undefined {
  return f.assetIds ?? (f.assetId === undefined ? undefined : [f.assetId]);
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
/** Holders: token count (descending), then address. */
export const HOLDER_KEY: KeySpec = ["int", "text"];

export interface CollectionsRepository {
  /** The id of a collection the store knows anything about, or undefined. */
  collectionId(address: string): MaybePromise<number | undefined>;
  score(collectionId: number): MaybePromise<ScoreRow | undefined>;
  /** Every marketplace any sale, listing or offer of the store has named, in name order (kept by every write). */
  knownMarketplaces(): MaybePromise<string[]>;
}

export interface AssetMetricsRepository {
  appraisalsPage(collectionId: number, page: PageRequest): MaybePromise<Page<AppraisalRow>>;
  appraisalsByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<AppraisalRow[]>;
  rarityPage(collectionId: number, page: PageRequest): MaybePromise<Page<RarityRow>>;
  rarityByAsset(collectionId: number, assetIds: readonly string[]): MaybePromise<RarityRow[]>;
}

export interface SalesRepository {
  salesPage(collectionId: number, filter: SalesFilter, page: PageRequest): MaybePromise<Page<SaleRow>>;
  /** The same page as each row's ready answer in one form (domain/wire/fragments.ts), written with the row. */
  salesWire(collectionId: number, filter: SalesFilter, page: PageRequest, form: WireForm): MaybePromise<Page<Fragment>>;
  /** A window's totals from one snapshot of the store, in a bounded number of index seeks. */
  salesSummary(collectionId: number, filter: StatsFilter): MaybePromise<SalesSummary>;
}

export interface ListingsRepository {
  listingsPage(collectionId: number, filter: ListingsFilter, page: PageRequest): MaybePromise<Page<ListingRow>>;
  /** The same page as ready answers (salesWire), status and lastUpdatedAt as they are now. */
  listingsWire(collectionId: number, filter: ListingsFilter, page: PageRequest, form: WireForm): MaybePromise<Page<Fragment>>;
}

/** Transfers: timestamp, block and log index (all descending), then hash and asset id. */
export const TRANSFER_KEY: KeySpec = ["int", "int", "int", "text", "text"];

export interface TransfersRepository {
  transfersPage(collectionId: number, page: PageRequest): MaybePromise<Page<TransferRow>>;
}

// analytics: floor, holders and sales series, from aggregates kept at write time.

/** An active listing at a floor. */
export interface FloorListingRow {
  marketplace: string;
  marketplaceId: string;
  assetId: string;
  price: string;
  createdAt: number;
}

export interface FloorFilter {
  marketplace?: string | undefined;
  /** Epoch seconds: the floor then, from the listings' history; undefined: now (status CREATED). */
  at?: number | undefined;
}

export interface HolderRow {
  address: string;
  tokens: number;
}

export interface HoldersPage {
  totalTokens: number;
  numHolders: number;
  page: Page<HolderRow>;
}

export interface SeriesFilter {
  interval: SeriesInterval;
  /** Starts of the first and last interval (inclusive). */
  from: number;
  to: number;
  marketplace?: string | undefined;
  assetId?: string | undefined;
}

export interface AnalyticsRepository {
  /** The lowest-priced active listing of each marketplace that has one (ties: listing id), by marketplace: one index seek each. */
  floors(collectionId: number, filter: FloorFilter): MaybePromise<FloorListingRow[]>;
  /** Token and holder counts, and a page of holders by token count descending, then address. */
  holders(collectionId: number, page: PageRequest): MaybePromise<HoldersPage>;
  /**
   * The intervals from `from` to `to` that have sales, oldest first: hours
   * and days read as stored (their prices only), weeks folded from days,
   * an asset's summed from its raw sales.
   */
  series(collectionId: number, filter: SeriesFilter): MaybePromise<SeriesBucket[]>;
  /** The lowest price active at second `at` of each collection (from its listings' history), in the order given; undefined where none was. */
  lowestFloorsAt(collectionIds: readonly number[], at: number): MaybePromise<(string | undefined)[]>;
  /** Times of the collection's first and last sale; undefined without sales. */
  salesExtent(collectionId: number): MaybePromise<{ first: number; last: number } | undefined>;
}

// tokens and traits: the tokens list and each trait value's count and floor,
// from what the writers keep (sqlite/token-market.ts, postgres/token-market.ts).

/** Orders of the tokens list: asset id; cheapest active listing (unlisted last); rarity rank (unranked last), ties by asset id; latest change of hands (never moved last), ties by asset id descending. */
export type TokenSort = "id" | "price" | "rarity" | "recent";
export const TOKEN_SORTS: readonly TokenSort[] = ["id", "price", "rarity", "recent"];

/** The page key of each order: the order's value(s), then the asset id (with `owner` alone, the collection's id first). */
export const TOKEN_KEYS: Readonly<Record<TokenSort, KeySpec>> = {
  id: ["int", "text"],
  price: ["text", "text"],
  rarity: ["int", "text"],
  recent: ["int", "int", "text"],
};

export interface TokensFilter {
  /** Undefined: every collection (then `owner` is given and the order is "id"). */
  collectionId?: number | undefined;
  assetId?: string | undefined;
  /** Lower-case address. */
  owner?: string | undefined;
  trait?: { type: string; value: string } | undefined;
  sort: TokenSort;
}

export interface TokenRow {
  contractAddress: string;
  assetId: string;
  /** "" when unknown. */
  owner: string;
  /** The token record's attributes, values as text. */
  attributes: { traitType: string; value: string }[];
  /** 0: no rarity row. */
  rarityRank: number;
  /** Its latest sale (sales list order), if any. */
  lastSale: SaleRow | undefined;
  /** Its cheapest active listing (ties: marketplace, then listing id), if any. */
  listing: ListingRow | undefined;
  /** The page key of the row in the order asked. */
  key: KeyValue[];
}

export interface TraitValueRow {
  traitType: string;
  value: string;
  tokens: number;
  /** The cheapest active listing among the value's tokens, if any. */
  floor: FloorListingRow | undefined;
}

export interface TokensRepository {
  tokensPage(filter: TokensFilter, page: PageRequest): MaybePromise<Page<TokenRow>>;
  /** Every trait value of the collection, by type then value (code-point order), with its token count and floor. */
  traits(collectionId: number): MaybePromise<TraitValueRow[]>;
}

// offers: bids for a token, a trait or the collection.

export interface OffersFilter {
  /** A token's own offers. */
  assetId?: string | undefined;
  status?: ListingStatusName | undefined;
}

/** Offers: created_at (descending), then marketplace, then its id, as listings. */
export const OFFER_KEY: KeySpec = ["int", "text", "text"];

/** The scope of a best offer: a token's (assetId), a trait value's (traitType and traitValue), or the collection's (neither). */
export interface OfferScope {
  assetId?: string;
  traitType?: string;
  traitValue?: string;
}

export interface OffersRepository {
  /** `now`: the second a status filter is answered at (a CREATED offer past its expiresAt is EXPIRED). */
  offersPage(collectionId: number, filter: OffersFilter, page: PageRequest, now: number): MaybePromise<Page<OfferRow>>;
  /**
   * The best standing offer of each scope at second `now` (status CREATED,
   * not expired): highest price, then marketplace, then its id; one seek
   * each, in one snapshot.
   */
  bestOffers(collectionId: number, scopes: readonly OfferScope[], now: number): MaybePromise<(OfferRow | undefined)[]>;
  /** The top bid (the best standing collection-wide offer) of each collection at second `now`, in the order given: one seek each, one snapshot. */
  topBids(collectionIds: readonly number[], now: number): MaybePromise<(OfferRow | undefined)[]>;
}

// collections: the list to discover them by, from a summary each writer keeps
// (sqlite/collection-summaries.ts, postgres/collection-summaries.ts).

/** Orders of the collections list: 1-day volume, 7-day volume (both highest first), floor (cheapest first, none last), 1-day sales (most first); ties by address. */
export type CollectionSort = "volume1d" | "volume7d" | "floor" | "sales";
export const COLLECTION_SORTS: readonly CollectionSort[] = ["volume1d", "volume7d", "floor", "sales"];
/** The page key of every order: the order's kept sort key (text), then the address. */
export const COLLECTION_KEY: KeySpec = ["text", "text"];

export interface CollectionsListFilter {
  /** Lower-case text found in the name (lower-cased) or the address; undefined: every collection. */
  query?: string | undefined;
  sort: CollectionSort;
}

/** A collection's kept summary, with its counts. */
export interface CollectionSummaryRow {
  collectionId: number;
  contractAddress: string;
  name: string;
  totalTokens: number;
  numHolders: number;
  /** The lowest active listing (ties: marketplace, then its id), if any. */
  floor: FloorListingRow | undefined;
  /** Wei, decimal: the sales of the 1, 7 and 30 days ending with the windows (CollectionsPage.windowsEnd). */
  volume1d: string;
  volume7d: string;
  volume30d: string;
  sales1d: number;
  sales7d: number;
  sales30d: number;
  key: KeyValue[];
}

export interface CollectionsPage {
  /**
   * The end of every summary's windows (epoch seconds, the end of an
   * hour): set when the store is made (its migration), the windows move on
   * the hour, with the first write after it.
   */
  windowsEnd: number;
  page: Page<CollectionSummaryRow>;
}

export interface CollectionListRepository {
  /** A page of collections in the order asked, from their kept summaries: one index range, one row each. */
  collectionsPage(filter: CollectionsListFilter, page: PageRequest): MaybePromise<CollectionsPage>;
}

export interface SocialRepository {
  topInfluencers(collectionId: number, limit: number): MaybePromise<InfluencerRow[]>;
  topTweets(collectionId: number, limit: number): MaybePromise<TweetRow[]>;
  /** The same lists as ready answers (salesWire), each with its user's profile as it is now. */
  topInfluencersWire(collectionId: number, limit: number, form: WireForm): MaybePromise<Fragment[]>;
  topTweetsWire(collectionId: number, limit: number, form: WireForm): MaybePromise<Fragment[]>;
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
   * The collections (lower-case addresses) whose data changed, or "all"
   * when a change may reach any of them (a social user shared by several
   * collections' influencers and tweets, a migration).
   */
  readonly collections: readonly string[] | "all";
}

// live feeds: the sales, listings, offers and transfers each commit inserted or changed.

export type FeedKind = "sales" | "listings" | "offers" | "transfers";

/**
 * A row of a feed at its position. Every write that inserts or changes a
 * sale or a listing gives the row the next position of the store's feed
 * sequence, under the lock that orders those writes' commits: positions grow
 * in commit order, so a reader asking for positions above the last it saw
 * never misses a commit (a row changed again moves to its new position).
 */
export interface FeedEntry<T> {
  seq: number;
  row: T;
}

export interface FeedRepository {
  /** The store's feed identity, drawn when its feed began: a position from another store (or before a rebuild) names another. */
  epoch(): MaybePromise<string>;
  /** The last position of the collection's rows of `kind` (0: none yet). */
  head(kind: FeedKind, collectionId: number): MaybePromise<number>;
  /** The collection's sales at positions above `after`, in position order, at most `limit`. */
  sales(collectionId: number, after: number, limit: number): MaybePromise<FeedEntry<SaleRow>[]>;
  listings(collectionId: number, after: number, limit: number): MaybePromise<FeedEntry<ListingRow>[]>;
  offers(collectionId: number, after: number, limit: number): MaybePromise<FeedEntry<OfferRow>[]>;
  transfers(collectionId: number, after: number, limit: number): MaybePromise<FeedEntry<TransferRow>[]>;
  /**
   * Several collections' rows of `kind` above `after`, merged in position
   * order, at most `limit`: read in one statement, so from one snapshot. Reads
   * of each collection one after another could see a commit in the second
   * that they missed in the first, and a reader moving past the second's
   * positions would skip the first's rows for ever.
   */
  merged(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): MaybePromise<FeedEntry<unknown>[]>;
  /** The last position the store's feed sequence gave (every kind, every collection; 0: none yet). */
  last(): MaybePromise<number>;
}

export interface ReadRepositories {
  feed: FeedRepository;
  collections: CollectionsRepository;
  collectionList: CollectionListRepository;
  assetMetrics: AssetMetricsRepository;
  sales: SalesRepository;
  listings: ListingsRepository;
  transfers: TransfersRepository;
  tokens: TokensRepository;
  offers: OffersRepository;
  analytics: AnalyticsRepository;
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

// derive: what it reads of a collection and how it replaces the derived rows.

/** What a derive wrote for one data set of a collection. */
export interface DerivedWrite {
  /** Derived rows now in the store. */
  written: number;
  /** Computed rows not written because an imported row for the asset wins. */
  keptImported: number;
  /** Imported rows overwritten by computed ones (--replace-imported). */
  replacedImported: number;
  /** Imported rows left in the store for the collection. */
  imported: number;
}

export interface TokenRecord {
  assetId: string;
  currentOwner: string;
  attributes: { trait_type: string; value: unknown }[];
}

export interface SaleForModel {
  assetId: string;
  timestamp: number;
  price: bigint;
  buyer: string;
}

/** A collection's newly derived rows; a data set left out is not touched. */
export interface DerivedRows {
  rarity?: readonly RarityRow[];
  appraisals?: readonly AppraisalRow[];
}

/** What replaceDerived wrote, per data set given. */
export interface DerivedWrites {
  rarity?: DerivedWrite;
  appraisals?: DerivedWrite;
}

/** What derive reads and writes, on either engine (SQLite: sqlite/derive-store.ts; PostgreSQL: postgres/derive-store.ts). */
export interface DeriveRepository {
  /** Collections with tokens (rarity) or sales (appraisals). */
  collectionsToDerive(): MaybePromise<string[]>;
  collectionId(address: string): MaybePromise<number | undefined>;
  tokens(collectionId: number): MaybePromise<TokenRecord[]>;
  /** A collection's sales up to second `until` (later ones are dated past the clock: left out), oldest first. */
  sales(collectionId: number, after: number, until: number): MaybePromise<SaleForModel[]>;
  /** A collection's sales of seconds after `after` up to `until`, oldest first, and how many it has up to `until` in all: one snapshot of the store. */
  salesSince(collectionId: number, after: number, until: number): MaybePromise<{ sales: SaleForModel[]; total: number }>;
  /** The lowest price of each asset's open (CREATED) listings: what the asset can be bought for now. */
  openListingPrices(collectionId: number): MaybePromise<Map<string, bigint>>;
  /**
   * Replaces the collection's derived rarity and appraisals in one
   * transaction: readers see the old rows of both or the new rows of both.
   */
  replaceDerived(collectionId: number, rows: DerivedRows, replaceImported?: boolean): MaybePromise<DerivedWrites>;
  /** After a derive: the planner's statistics for what it wrote. */
  refreshPlannerStats(): MaybePromise<void>;
}


// import: checked records (ingest/) written in one transaction.

/** A checked record of one importable kind, in the API's JSON shape (ingest/kinds.ts checked it). */
export type ImportRecord = Record<string, unknown>;

/** How the written records compared with what the store held; kept up to date as records are written where the engine can. */
export interface ImportCounts {
  inserted: number;
  updated: number;
  unchanged: number;
}

export interface RecordImport {
  /**
   * One import in one transaction: `feed` hands each checked record to
   * `write` (awaited when it returns a promise); the transaction commits
   * when `feed` resolves and rolls back when it throws, so readers see the
   * whole import or none of it. `counts` is filled in.
   */
  importRecords(
    kind: Kind,
    feed: (write: (record: ImportRecord) => MaybePromise<void>) => Promise<void>,
    counts: ImportCounts,
    options?: ImportRecordsOptions,
  ): Promise<void>;
}

export interface ImportRecordsOptions {
  /** false only to measure what keeping the stats aggregates costs (bench:stats). */
  maintainStats?: boolean;
  /** SQLite's bulk path (indexes and triggers dropped, rebuilt at the end): true from the first row, false never (tests of each path); unset, once an import has inserted a quarter of the table's rows. */
  bulk?: boolean;
  /**
   * Refresh the planner's statistics after the commit (default true): right
   * after a file's import; not after each small batch of the ingest API,
   * whose rows move the statistics little (the SQLite writer refreshes them
   * now and then; PostgreSQL's autovacuum does).
   */
  refreshStatistics?: boolean;
  /**
   * How long the write may wait for another writer's lock before it fails
   * (PostgreSQL; the server's writer: a caller gets `unavailable` and
   * retries). Unset: as long as it takes (an import).
   */
  lockWaitMs?: number;
}

/**
 * The server's writes (the ingest API): one batch of checked records of one
 * kind in one transaction, durable once the promise resolves. Fails with
 * StoreUnavailableError when the store cannot take writes now (another
 * writer held it past the writer's patience), and with StoreReadOnlyError
 * where this server cannot write at all.
 */
export interface IngestWriter {
  write(kind: Kind, records: readonly ImportRecord[]): Promise<ImportCounts>;
  close(): Promise<void>;
}

/** This server's store takes no writes (a PostgreSQL replica, a read-only file): ingest goes to a server on the primary. */
export class StoreReadOnlyError extends Error {}

// keys: what `keys` does, on either engine.

export interface KeyAdmin {
  /** A new key (read scope unless told otherwise); only its digest is kept. */
  create(name: string, options?: { rateLimit?: number | null; scope?: KeyScope }): Promise<{ id: number; key: string }>;
  list(): Promise<ApiKeyInfo[]>;
  /** False when no such key exists. */
  setRateLimit(id: number, rateLimit: number | null): Promise<boolean>;
  /** False when no such key exists; revoking twice keeps the first time. */
  revoke(id: number): Promise<boolean>;
  close(): Promise<void>;
}

// webhooks: subscriptions, their positions, leases and delivery logs.

/** A webhook's position: per kind, the last feed position delivered (every event at or below it was acknowledged). */
export interface FeedPositions {
  sales: number;
  listings: number;
  offers: number;
  transfers: number;
}

export type WebhookState = "active" | "paused" | "failing" | "disabled";

export interface WebhookRecord {
  id: string;
  url: string;
  /** Lower-case contract addresses. */
  collections: string[];
  /** Feed kinds delivered. */
  kinds: FeedKind[];
  keyId: number;
  state: WebhookState;
  stateReason: string | null;
  createdAt: number;
  /** The feed epoch the positions are in (a store rebuilt since: they name nothing). */
  epoch: string;
  positions: FeedPositions;
  /** Grows on every replay and resume: a delivering process's commit from before it is refused. */
  generation: number;
  /** "whsec_..." secrets: the current one, and until `previousUntil` (epoch ms) the one before. */
  secret: string;
  previousSecret: string | null;
  previousUntil: number | null;
}

export interface NewWebhook {
  id: string;
  url: string;
  collections: string[];
  kinds: FeedKind[];
  keyId: number;
  secret: string;
  epoch: string;
  positions: FeedPositions;
}

/** One delivery attempt, as the log keeps it (the last WEBHOOK_LOG_SIZE per webhook). */
export interface WebhookAttemptRecord {
  /** Epoch ms. */
  at: number;
  messageId: string;
  events: number;
  firstPosition: number;
  lastPosition: number;
  /** HTTP status; 0: no answer. */
  status: number;
  latencyMs: number;
  error: string;
  attempt: number;
}

export const WEBHOOK_LOG_SIZE = 1000;

/** What a delivering process writes back for one webhook it holds. */
export interface WebhookProgress {
  id: string;
  /** The generation it delivered under: ignored when a replay or resume came since. */
  generation: number;
  positions?: FeedPositions;
  attempts: readonly WebhookAttemptRecord[];
  /** A new state (failing past the retry window, disabled by a 410 or a revoked key) and why. */
  state?: { state: WebhookState; reason: string };
  /** Cut its log back to its last WEBHOOK_LOG_SIZE attempts (asked now and then, not at every commit: it walks the log). */
  trim?: boolean;
}

/**
 * Webhook subscriptions (SQLite: a file of their own beside the store, as
 * keys have, so that their writes never wait for an import's or ingest's
 * write lock; PostgreSQL: tables of the store). Leases make one process at
 * a time deliver each webhook: taken when free or expired, renewed by the
 * holder, judged by the store's clock.
 */
export interface WebhookStore {
  create(webhook: NewWebhook): Promise<WebhookRecord>;
  list(): Promise<WebhookRecord[]>;
  get(id: string): Promise<WebhookRecord | undefined>;
  /** Sets the state (and reason); `resume`: also a new generation. Undefined when no such webhook. */
  setState(id: string, state: WebhookState, reason: string | null, resume?: boolean): Promise<WebhookRecord | undefined>;
  delete(id: string): Promise<boolean>;
  /** A new current secret; the old one kept until `previousUntil` (epoch ms). */
  rotateSecret(id: string, secret: string, previousUntil: number): Promise<WebhookRecord | undefined>;
  /** New positions (a replay), a new generation, and the webhook active again. */
  replay(id: string, epoch: string, positions: FeedPositions): Promise<WebhookRecord | undefined>;
  /** The webhook's last `limit` attempts, newest first. */
  attempts(id: string, limit: number): Promise<WebhookAttemptRecord[]>;
  /**
   * Takes or renews the lease of every active webhook that is free, expired
   * or already `holder`'s, for `ttlMs`, taking at most `max` new ones; answers
   * every webhook `holder` holds now, as stored.
   */
  lease(holder: string, ttlMs: number, max: number): Promise<WebhookRecord[]>;
  /** Gives back `holder`'s leases (shutdown): others take them at once. */
  release(holder: string): Promise<void>;
  /** Writes what `holder` delivered, in one transaction; answers the ids it no longer holds (their progress was not written). */
  commit(holder: string, progress: readonly WebhookProgress[]): Promise<string[]>;
  /** Notes that the feed had reached `position` at epoch second `at` (replay --from TIME), keeping `keepSeconds` of them. */
  mark(at: number, position: number, keepSeconds: number): Promise<void>;
  /** The position of the latest mark at or before epoch second `at`; undefined when none is that old. */
  markAt(at: number): Promise<number | undefined>;
  /** Which of the API keys `ids` exist unrevoked (a webhook delivers for its key while it stands). */
  liveKeys(ids: readonly number[]): Promise<Set<number>>;
  close(): Promise<void>;
}

// a store opened for writing (import, derive, demo, stats rebuild).

/** What a stats rebuild found and left. */
export interface StatsRebuildCounts {
  /** Hour and series rows that were wrong (inserted, changed or deleted by the rebuild). */
  changed: number;
  /** Hour rows after the rebuild. */
  rows: number;
}

/** One table or index of the store and the bytes it takes on disk. */
export interface DiskPart {
  name: string;
  /** The table it belongs to (itself for a table). */
  table: string;
  bytes: number;
  /** Rows (a table) or entries (an index); SQLite counts cells, PostgreSQL estimates. */
  rows: number;
}

/** Where a store's disk goes: every table and index, largest first, and the whole store's size. */
export interface DiskUsage {
  parts: DiskPart[];
  /** The file with its write-ahead log after a checkpoint (SQLite), or the database (PostgreSQL). */
  total: number;
}

export interface WritableStore {
  /** The store for messages: a file path, or a PostgreSQL URL without its password. */
  description: string;
  records: RecordImport;
  derive: DeriveRepository;
  /**
   * Recomputes the stats aggregates of one collection (or all) from the raw
   * sales, in one transaction; with `check`, writes nothing.
   */
  rebuildStats(collectionId: number | undefined, check: boolean): Promise<StatsRebuildCounts>;
  /** The collection with the most tokens (what `start` shows first); undefined in an empty store. */
  largestCollection(): Promise<string | undefined>;
  /** Where the store's disk goes (after a checkpoint on SQLite). */
  diskUsage(): Promise<DiskUsage>;
  close(): Promise<void>;
}
