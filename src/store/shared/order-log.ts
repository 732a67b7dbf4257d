// Reorganisations of orders (docs/chains.md, "Orders taken back"), the
// parts both engines share. An order (a listing or an offer) is its latest
// record; to take one of its records back exactly, the store keeps the
// order's log while any of its records may still be taken back: the row the
// order had when the log began (its base, never taken back: a log begins
// at the first record that may be, so the base's record could not be) and
// every record since, in arrival order; for a listing also its versions
// (by time, the floor at= history) when the log began. A removal deletes
// the records it takes back from the log and replays what is left: the
// order's row becomes its last record left (or the base), written again as
// any record is (its ready answers made afresh: a log keeps a record's
// columns, not its answers, a third of a listing's bytes), its versions the
// base's with each time's last record left over them; with nothing left
// the order never existed and is deleted (kept in its removal table, at a
// feed position, as a sale taken back is). Off-chain records (block 0) and
// records of final blocks are never taken back, so an order made and
// updated off-chain keeps no log; a log is dropped once none of its
// records can be taken back (the chain's finality passed them).

import type { ListingRow, ListingStatusName, OfferRow } from "../../domain/rows.js";
import { REMOVAL_TABLES } from "./removals.js";

/** The order kinds and their tables. */
export const ORDER_KINDS = ["listings", "offers"] as const;
export type OrderKind = (typeof ORDER_KINDS)[number];

export const ORDER_LOGS: Readonly<Record<OrderKind, string>> = { listings: "listing_log", offers: "offer_log" };
/** A listing's versions when its log began. */
export const LISTING_LOG_VERSIONS = "listing_log_versions";

/** The order key of a log, as `(marketplace, marketplace_id)` of the alias `x`. */
export const orderKeyIs = (x: string, marketplace: string, marketplaceId: string) => `${x}.marketplace = ${marketplace} AND ${x}.marketplace_id = ${marketplaceId}`;

/** Migration 33 on either engine (its text type `text`): an order's payment token, in each table that holds an order's record; every order before was in ETH. */
export const ORDER_CURRENCY_MIGRATION = (text: string): string =>
  [...ORDER_KINDS, ORDER_LOGS.listings, ORDER_LOGS.offers, REMOVAL_TABLES.listings, REMOVAL_TABLES.offers]
    .map((t) => `ALTER TABLE ${t} ADD COLUMN currency ${text} NOT NULL DEFAULT 'ETH';`).join("\n");

/** The columns of a listing's and an offer's feed (and of their removal tables), after collection_id and the asset. */
export const ORDER_FEED_COLUMNS: Readonly<Record<OrderKind, readonly string[]>> = {
  listings: ["marketplace_id", "marketplace", "created_at", "last_updated_at", "price", "currency", "maker", "expires_at", "quantity", "block", "block_hash", "status"],
  offers: ["marketplace_id", "marketplace", "trait_type", "trait_value", "maker", "price", "currency", "created_at", "last_updated_at", "expires_at", "block", "block_hash", "status"],
};

/**
 * A log's record (its columns, with its collection's `address`, its
 * `asset_id` as text and its `block_hash_hex`) as the record it was, with
 * its chain: what a replay writes again, its answers made as any record's.
 */
export function orderRecordOf(kind: OrderKind, e: Record<string, unknown>): (ListingRow | OfferRow) & { chain: string } {
  const common = {
    chain: String(e.chain),
    marketplace: String(e.marketplace),
    marketplaceId: String(e.marketplace_id),
    contractAddress: String(e.address),
    assetId: e.asset_id === null ? "" : String(e.asset_id),
    price: String(e.price),
    // A log begun before migration 33 has no currency: every order then was in ETH.
    currency: e.currency === undefined || e.currency === null ? "ETH" : String(e.currency),
    createdAt: Number(e.created_at),
    block: Number(e.block),
    blockHash: e.block_hash_hex === null || e.block_hash_hex === undefined ? "" : String(e.block_hash_hex),
  };
  return kind === "listings"
    ? {
        ...common, lastUpdatedAt: Number(e.record_updated_at), status: e.record_status as ListingStatusName,
        // A log begun before migration 40 has neither: no maker, no expiry.
        maker: e.maker === undefined || e.maker === null ? "" : String(e.maker), expiresAt: Number(e.expires_at ?? 0),
        // And one begun before migration 44 no quantity: 1.
        quantity: String(e.quantity ?? 1),
      }
    : {
        ...common, traitType: String(e.trait_type), traitValue: String(e.trait_value), maker: String(e.maker),
        lastUpdatedAt: Number(e.last_updated_at), expiresAt: Number(e.expires_at), status: e.status as ListingStatusName,
      };
}
