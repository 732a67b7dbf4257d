import type { SeriesBucket, SeriesInterval } from "../../domain/series.js";
import type { CollectionSummaryRow, FloorListingRow, HolderBucketRow, HolderRow, ListingStatusName, OfferRow, TokenOwnerRow, TokenRow, TraitValueRow } from "../../domain/rows.js";
import type { FloorBucket, FloorPrice, FloorSpanLength } from "../../domain/floor-candles.js";
import type { KeySpec, MaybePromise, Page, PageRequest } from "./paging.js";

// The market's reads kept at write time: analytics (floor, holders,
// series), tokens and traits, offers, and the collections list.

// analytics: floor, holders and sales series, from aggregates kept at write time.

export interface FloorFilter {
  marketplace?: string | undefined;
  /** Epoch seconds: the floor then, from the listings' history; undefined: now (status CREATED). */
  at?: number | undefined;
  /** Count flagged tokens' listings too; default: they are no floor (docs/data.md, "Spam and flags"; flagged as of now, for `at` too). */
  includeFlagged?: boolean | undefined;
}

export interface HoldersPage {
  totalTokens: number;
  numHolders: number;
  page: Page<HolderRow>;
  /** The wallets of each of HOLDER_BUCKETS (domain/rows.ts), in its order, read in the page's snapshot. */
  distribution: HolderBucketRow[];
}

export interface SeriesFilter {
  interval: SeriesInterval;
  /** Starts of the first and last interval (inclusive). */
  from: number;
  to: number;
  marketplace?: string | undefined;
  assetId?: string | undefined;
  /** Sales flagged as wash trades counted too (docs/wash-trades.md); left out by default. */
  includeWash?: boolean | undefined;
  /** The buckets' dollars are not read (false: a sum of raw sales skips each sale's price point); default: they are. */
  usd?: boolean | undefined;
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
  /**
   * The floor's history kept at write time (decisions.md, "Floor history";
   * flagged tokens left out), of one marketplace or all (""): the floor
   * before second `from`, and the summaries of the intervals of `span` that
   * start from `from` to before `until` and hold a change of the floor,
   * oldest first. One seek and one range, whatever the history's length.
   */
  floorHistory(collectionId: number, marketplace: string, span: FloorSpanLength, from: number, until: number): MaybePromise<{ before: FloorPrice; rows: FloorBucket[] }>;
  /** Times of the first and last change of the floor (of one marketplace or all: ""); undefined when it never had one. */
  floorExtent(collectionId: number, marketplace: string): MaybePromise<{ first: number; last: number } | undefined>;
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
  /** Without a collection: the chain whose collections are searched (domain/chains.ts); undefined: every chain. */
  chain?: string | undefined;
  assetId?: string | undefined;
  /** Lower-case address. */
  owner?: string | undefined;
  trait?: { type: string; value: string } | undefined;
  sort: TokenSort;
}

/** A token's owners: balance (descending), then address. */
export const TOKEN_OWNER_KEY: KeySpec = ["int", "text"];

export interface TokensRepository {
  tokensPage(filter: TokensFilter, page: PageRequest): MaybePromise<Page<TokenRow>>;
  /**
   * A token's owners by balance descending, then address (decisions.md,
   * "ERC-1155"): of an ERC-1155 collection's token, every positive balance;
   * of an ERC-721 token, its owner with a balance of 1 (none when unknown).
   */
  ownersPage(collectionId: number, assetId: string, page: PageRequest): MaybePromise<Page<TokenOwnerRow>>;
  /** Every trait value of the collection, by type then value (code-point order), with its token count and floor (of unflagged tokens unless includeFlagged). */
  traits(collectionId: number, includeFlagged?: boolean): MaybePromise<TraitValueRow[]>;
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

/** Price points (docs/money.md): a token's USD price by minute. */
export interface PricesRepository {
  /**
   * The usd of each symbol's point in force at second `at` (its latest at
   * or before, no older than a day), null with none: one seek each, one
   * snapshot. `symbols` are those points are kept under (money.ts PRICED_AS).
   */
  pointsInForce(symbols: readonly string[], at: number): MaybePromise<Map<string, string | null>>;
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

/** Orders of the collections list: 1-day, 7-day and all-time volume (highest first), floor (cheapest first, none last), 1-day sales (most first), market cap (floor × tokens, highest first, none last); ties by address. */
export type CollectionSort = "volume1d" | "volume7d" | "volumeAll" | "floor" | "sales" | "marketCap";

export const COLLECTION_SORTS: readonly CollectionSort[] = ["volume1d", "volume7d", "volumeAll", "floor", "sales", "marketCap"];

/** The page key of every order: the order's kept sort key (text), then the address. */
export const COLLECTION_KEY: KeySpec = ["text", "text"];

export interface CollectionsListFilter {
  /** The chain whose collections are listed (domain/chains.ts). */
  chain: string;
  /** Lower-case text found in the name (lower-cased) or the address; undefined: every collection. */
  query?: string | undefined;
  sort: CollectionSort;
  /** The windows (and so the ranking) of every sale, flagged ones included; default: clean sales only (docs/wash-trades.md). */
  includeWash?: boolean | undefined;
  /** List spam collections too; default: a collection marked spam is not listed (docs/data.md, "Spam and flags"). */
  includeSpam?: boolean | undefined;
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
