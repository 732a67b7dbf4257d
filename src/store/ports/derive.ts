import type { AppraisalRow, RarityRow } from "../../domain/rows.js";
import type { MaybePromise } from "./paging.js";

// Derive: what it reads of a collection and how it replaces the derived rows.

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
  /** Collections with tokens (rarity) or sales (appraisals), as references (domain/chains.ts collectionRef). */
  collectionsToDerive(): MaybePromise<string[]>;
  collectionId(ref: string): MaybePromise<number | undefined>;
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
