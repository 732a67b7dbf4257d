import type { ListingRow, OfferRow, SaleRow, TransferRow } from "../../domain/records.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import { assetIdSql } from "./asset-key.js";
import { hexSql } from "./hex.js";
import type { SqliteStatements } from "./statements.js";

// The live feeds' reads on SQLite: a collection's rows above a position, in
// position order, one seek on (collection_id, feed_seq) (migration 6). The
// positions are written by write-store.ts.

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

  sales(collectionId: number, after: number, limit: number): FeedEntry<SaleRow>[] {
    const rows = this.s.rows(
      `SELECT s.feed_seq, c.address, ${hexSql("s.hash", "hash")}, ${hexSql("s.seller", "seller")}, ${hexSql("s.buyer", "buyer")},
          ${assetIdSql("s.")}, s.timestamp, s.block, s.price, s.amount_received, s.marketplace
        FROM sales s INDEXED BY sales_by_feed JOIN collections c ON c.id = s.collection_id
        WHERE s.collection_id = ? AND s.feed_seq > ? ORDER BY s.feed_seq LIMIT ?`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toSale(r) }));
  }

  listings(collectionId: number, after: number, limit: number): FeedEntry<ListingRow>[] {
    const rows = this.s.rows(
      `SELECT l.feed_seq, c.address, l.marketplace_id, l.marketplace, ${assetIdSql("l.")}, l.created_at, l.last_updated_at,
          l.price, l.status
        FROM listings l INDEXED BY listings_by_feed JOIN collections c ON c.id = l.collection_id
        WHERE l.collection_id = ? AND l.feed_seq > ? ORDER BY l.feed_seq LIMIT ?`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toListing(r) }));
  }

  transfers(collectionId: number, after: number, limit: number): FeedEntry<TransferRow>[] {
    const rows = this.s.rows(
      `SELECT t.feed_seq, ${TRANSFER_COLUMNS} FROM transfers t INDEXED BY transfers_by_feed JOIN collections c ON c.id = t.collection_id
        WHERE t.collection_id = ? AND t.feed_seq > ? ORDER BY t.feed_seq LIMIT ?`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toTransfer(r) }));
  }

  offers(collectionId: number, after: number, limit: number): FeedEntry<OfferRow>[] {
    const rows = this.s.rows(
      `SELECT o.feed_seq, c.address, o.marketplace_id, o.marketplace, ${assetIdSql("o.")}, o.trait_type, o.trait_value, o.maker, o.price,
          o.created_at, o.last_updated_at, o.expires_at, o.status
        FROM offers o INDEXED BY offers_by_feed JOIN collections c ON c.id = o.collection_id
        WHERE o.collection_id = ? AND o.feed_seq > ? ORDER BY o.feed_seq LIMIT ?`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toOffer(r) }));
  }
}
