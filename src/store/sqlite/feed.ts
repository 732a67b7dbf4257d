import type { ListingRow, OfferRow, SaleRow, TransferRow } from "../../domain/rows.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports/feed.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import { assetIdSql } from "./asset-key.js";
import { hexSql } from "./hex.js";
import type { SqliteStatements } from "./statements.js";

// The live feeds' reads on SQLite: a collection's rows above a position, in
// position order, one seek on (collection_id, feed_seq) (migration 6). The
// positions are written by record-writes.ts.

/** Each kind's columns and table (as `a`). */
const SELECT: Record<FeedKind, { sql: string; row: (r: Record<string, unknown>) => unknown }> = {
  sales: {
    sql: `SELECT a.feed_seq, c.address, ${hexSql("a.hash", "hash")}, ${hexSql("a.seller", "seller")}, ${hexSql("a.buyer", "buyer")},
          ${assetIdSql("a.")}, a.timestamp, a.block, a.price, a.amount_received, a.marketplace, a.block_hash
        FROM sales a INDEXED BY sales_by_feed JOIN collections c ON c.id = a.collection_id`,
    row: toSale,
  },
  listings: {
    sql: `SELECT a.feed_seq, c.address, a.marketplace_id, a.marketplace, ${assetIdSql("a.")}, a.created_at, a.last_updated_at,
          a.price, a.status
        FROM listings a INDEXED BY listings_by_feed JOIN collections c ON c.id = a.collection_id`,
    row: toListing,
  },
  transfers: {
    sql: `SELECT a.feed_seq, ${TRANSFER_COLUMNS("a")} FROM transfers a INDEXED BY transfers_by_feed JOIN collections c ON c.id = a.collection_id`,
    row: toTransfer,
  },
  offers: {
    sql: `SELECT a.feed_seq, c.address, a.marketplace_id, a.marketplace, ${assetIdSql("a.")}, a.trait_type, a.trait_value, a.maker, a.price,
          a.created_at, a.last_updated_at, a.expires_at, a.status
        FROM offers a INDEXED BY offers_by_feed JOIN collections c ON c.id = a.collection_id`,
    row: toOffer,
  },
};

/** The rows above a position of one collection. */
const ONE = " WHERE a.collection_id = ? AND a.feed_seq > ? ORDER BY a.feed_seq LIMIT ?";

export class SqliteFeed implements FeedRepository {
  constructor(private readonly s: SqliteStatements) {}

  epoch(): string {
    return this.s.prepare("SELECT feed_epoch FROM store_state WHERE id = 1").pluck().get() as string;
  }

  last(): number {
    return this.s.prepare("SELECT feed_seq FROM store_state WHERE id = 1").pluck().get() as number;
  }

  head(kind: FeedKind, collectionId: number): number {
    const sql = `SELECT coalesce(max(feed_seq), 0) FROM ${kind} INDEXED BY ${kind}_by_feed WHERE collection_id = ?`;
    return this.s.prepare(sql).pluck().get(collectionId) as number;
  }

  #read<T>(kind: FeedKind, collectionId: number, after: number, limit: number): FeedEntry<T>[] {
    const { sql, row } = SELECT[kind];
    return this.s.rows(sql + ONE, [collectionId, after, limit]).map((r) => ({ seq: r.feed_seq as number, row: row(r) as T }));
  }

  sales(collectionId: number, after: number, limit: number): FeedEntry<SaleRow>[] {
    return this.#read("sales", collectionId, after, limit);
  }

  listings(collectionId: number, after: number, limit: number): FeedEntry<ListingRow>[] {
    return this.#read("listings", collectionId, after, limit);
  }

  transfers(collectionId: number, after: number, limit: number): FeedEntry<TransferRow>[] {
    return this.#read("transfers", collectionId, after, limit);
  }

  offers(collectionId: number, after: number, limit: number): FeedEntry<OfferRow>[] {
    return this.#read("offers", collectionId, after, limit);
  }

  merged(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): FeedEntry<unknown>[] {
    if (collectionIds.length <= 1) return collectionIds.length === 0 ? [] : this.#read(kind, collectionIds[0]!, after, limit);
    // One statement, so one snapshot: each collection's `limit` lowest, then the lowest of those.
    const { sql, row } = SELECT[kind];
    const each = collectionIds.map(() => `SELECT * FROM (${sql}${ONE})`).join(" UNION ALL ");
    const params = collectionIds.flatMap((id) => [id, after, limit]);
    return this.s.rows(`${each} ORDER BY feed_seq LIMIT ?`, [...params, limit]).map((r) => ({ seq: r.feed_seq as number, row: row(r) }));
  }
}

