import type { ListingRow, OfferRow, SaleRow, TokenEventRow, TransferRow } from "../../domain/rows.js";
import type { MaybePromise } from "./paging.js";

// Live feeds: the sales, listings, offers and transfers each commit inserted
// or changed, and the sales and transfers each took back.

/** The kinds the feeds carry (their declarations say so: domain/kinds). */
export type { FeedKind } from "../../domain/kinds/index.js";
import type { FeedKind } from "../../domain/kinds/index.js";

/** The feed kinds a reorganisation can take back (docs/chains.md): a token's record is no chain event. */
export type RemovableKind = Exclude<FeedKind, "tokens">;

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
  /**
   * Set on a record a reorganisation took back (docs/chains.md): `row` is
   * the record as it was, `seq` its removal's position, `originalSeq` the
   * position it was last sent at. Only sales and transfers are taken back.
   */
  removed?: { originalSeq: number };
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
  /** The tokens whose record was written (inserted or changed), each at the position of its latest write. */
  tokens(collectionId: number, after: number, limit: number): MaybePromise<FeedEntry<TokenEventRow>[]>;
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
  /** Whether the collection's row of `kind` at position `seq` is still there (not changed since, nor taken back). */
  holds(kind: FeedKind, collectionId: number, seq: number): MaybePromise<boolean>;
}
