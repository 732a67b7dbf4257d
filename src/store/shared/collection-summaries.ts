import { HOUR } from "../../domain/series.js";
import type { CollectionSort } from "../ports/market.js";
import type { CollectionSummaryRow } from "../../domain/rows.js";
import { NO_ASK } from "./token-market.js";
import type { Row } from "./rows.js";
import { dollarsOfExact, exactUsd } from "../../domain/money.js";

// What both engines keep of each collection for the collections list
// (sqlite/collection-summaries.ts, postgres/collection-summaries.ts): its
// sales of the last 1, 7 and 30 days, its floor, and a text sort key per
// order, so that every order is one index range of the summaries.
//
// The windows are whole hours and end with the store's windows hour
// (store_state.windows_hour): the 1-day window is that hour and the 23
// before it, and any sale dated after it (the clock's skew allows a few).
// A write recomputes the summaries of the collections it changed, first
// moving the windows hour to the clock's hour when it is behind; moving it
// recomputes every summary with sales in its 30-day window (the others stay
// zero until a write adds a sale), so every summary in the store is of the
// same windows, and a reader sees them all as of one hour.
//
// Each collection is kept twice (migration 30): of its clean sales, and of
// every sale (the flagged ones added, for includeWash), so that either
// ranking is one index range.
//
// Each keeps its windows' US dollars too (migration 34: volume_usd_*, exact
// sums of the series' hours, docs/money.md "USD kept with the series"), of
// the clean sales in both tables: the flagged sales' dollars are added when
// a page is read with includeWash (addFlaggedUsd), a seek of each one's
// point, since keeping them would seek every flagged sale of 30 days at
// every write.

/** The summaries of clean sales (the default), and of every sale (includeWash: docs/wash-trades.md). */
export const CLEAN_SUMMARIES = "collection_summaries";
export const WASH_SUMMARIES = "collection_summaries_with_wash";
export type SummariesTable = typeof CLEAN_SUMMARIES | typeof WASH_SUMMARIES;

/** The first hour of each window that ends with hour `hour` (hours since the epoch). */
export function windowStarts(hour: number): { d1: number; d7: number; d30: number } {
  return { d1: hour - 23, d7: hour - 7 * 24 + 1, d30: hour - 30 * 24 + 1 };
}

/** The hour of epoch second `seconds`. */
export const hourOf = (seconds: number): number => Math.floor(seconds / HOUR);

/**
 * A key whose text order is the decimal's numeric order reversed (highest
 * first): 99 minus its length in two digits, then each digit's complement
 * to 9. PostgreSQL computes the same (postgres/collection-summaries.ts).
 */
export function descendingKey(decimal: string): string {
  let complement = "";
  for (const d of decimal) complement += String(9 - Number(d));
  return `${String(99 - decimal.length).padStart(2, "0")}${complement}`;
}

/** A price's ascending key (as a token's ask key: its length in two digits, then the price), NO_ASK without one. */
export function ascendingKey(price: string | undefined): string {
  return price === undefined ? NO_ASK : `${String(price.length).padStart(2, "0")}${price}`;
}

/** The kept column each order reads (its index: the column, then the address). */
export const SORT_COLUMNS: Readonly<Record<CollectionSort, string>> = {
  volume1d: "volume_1d_key",
  volume7d: "volume_7d_key",
  volumeAll: "volume_all_key",
  floor: "floor_key",
  sales: "sales_1d_key",
  marketCap: "market_cap_key",
};

/**
 * A collection's market cap (migration 38): its floor's price times its
 * tokens, wei; undefined without a floor. Its key sorts the highest first
 * and, as zero, a collection without a floor after every one with a cap.
 */
export function marketCapOf(floorPrice: string | null | undefined, tokens: number | bigint | null | undefined): string | undefined {
  return floorPrice === null || floorPrice === undefined ? undefined : (BigInt(floorPrice) * BigInt(tokens ?? 0)).toString();
}
export const marketCapKey = (cap: string | undefined): string => descendingKey(cap ?? "0");

/** A collections-list row (both engines name its columns alike), with its page key in the order `sort`. */
export function toCollectionSummary(r: Row, sort: CollectionSort): CollectionSummaryRow {
  const floorPrice = r.floor_price === null || r.floor_price === undefined ? undefined : String(r.floor_price);
  return {
    collectionId: Number(r.collection_id),
    contractAddress: r.address as string,
    chain: r.chain as string,
    name: r.name as string,
    totalTokens: Number(r.tokens ?? 0),
    numHolders: Number(r.holders ?? 0),
    floor:
      floorPrice === undefined
        ? undefined
        : {
            marketplace: r.floor_marketplace as string,
            marketplaceId: r.floor_marketplace_id as string,
            assetId: String(r.floor_asset_id),
            price: floorPrice,
            createdAt: Number(r.floor_created_at),
          },
    volume1d: String(r.volume_1d),
    volume7d: String(r.volume_7d),
    volume30d: String(r.volume_30d),
    volumeUsd1d: dollarsOfExact(BigInt(String(r.volume_usd_1d ?? 0))),
    volumeUsd7d: dollarsOfExact(BigInt(String(r.volume_usd_7d ?? 0))),
    volumeUsd30d: dollarsOfExact(BigInt(String(r.volume_usd_30d ?? 0))),
    sales1d: Number(r.sales_1d),
    sales7d: Number(r.sales_7d),
    sales30d: Number(r.sales_30d),
    description: String(r.description ?? ""),
    image: String(r.image ?? ""),
    externalUrl: String(r.external_url ?? ""),
    twitter: String(r.twitter ?? ""),
    discord: String(r.discord ?? ""),
    tokenStandard: String(r.token_standard ?? "ERC721"),
    // SQLite's 0/1, PostgreSQL's boolean.
    isSpam: r.is_spam === 1 || r.is_spam === true,
    spamReason: String(r.spam_reason ?? ""),
    marketCap: r.market_cap === null || r.market_cap === undefined ? "" : String(r.market_cap),
    volumeAll: String(r.volume_all ?? "0"),
    key: [r[SORT_COLUMNS[sort]] as string, r.address as string],
  };
}

/**
 * Adds to a summaries row read with includeWash (its volume_usd_* the clean
 * sales') the dollars of its flagged sales in the windows that end with
 * hour `hour`: each sale as [timestamp, price, currency, usd of its point].
 */
export function addFlaggedUsd(r: Row, hour: number, flagged: Iterable<readonly [number, string, string, string | null]>): void {
  const starts = windowStarts(hour);
  const sums = { d1: 0n, d7: 0n, d30: 0n };
  for (const [timestamp, price, currency, usd] of flagged) {
    const exact = exactUsd(BigInt(price), currency, usd) ?? 0n;
    const h = hourOf(Number(timestamp));
    if (h < starts.d30) continue;
    sums.d30 += exact;
    if (h >= starts.d7) sums.d7 += exact;
    if (h >= starts.d1) sums.d1 += exact;
  }
  r.volume_usd_1d = String(BigInt(String(r.volume_usd_1d ?? 0)) + sums.d1);
  r.volume_usd_7d = String(BigInt(String(r.volume_usd_7d ?? 0)) + sums.d7);
  r.volume_usd_30d = String(BigInt(String(r.volume_usd_30d ?? 0)) + sums.d30);
}
