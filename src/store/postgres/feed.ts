import type { ListingRow, OfferRow, SaleRow, TransferRow } from "../../domain/records.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import { hexOf, type PgQueries } from "./queries.js";

// The live feeds' reads on PostgreSQL: a collection's rows above a position,
// in position order, one seek on (collection_id, feed_seq) (migration 5; on
// sales, in the collection's partition). On a replica they answer what it
// has replayed. The positions are written by bulk-kinds.ts.

export class PgFeed implements FeedRepository {
  constructor(private readonly q: PgQueries) {}

  async epoch(): Promise<string> {
    return (await this.q.rows<{ e: string }>("SELECT feed_epoch AS e FROM store_state WHERE id = 1", []))[0]?.e ?? "";
  }

  async last(): Promise<number> {
    const r = (await this.q.rows<{ v: string; called: boolean }>("SELECT last_value AS v, is_called AS called FROM feed_seq", []))[0];
    return r === undefined || !r.called ? 0 : Number(r.v);
  }

  async head(kind: FeedKind, collectionId: number): Promise<number> {
    const table = { sales: "sales", listings: "listings", offers: "offers", transfers: "transfers" }[kind];
    const sql = `SELECT coalesce(max(feed_seq), 0) AS s FROM ${table} WHERE collection_id = $1`;
    return (await this.q.rows<{ s: number }>(sql, [collectionId]))[0]?.s ?? 0;
  }

  async sales(collectionId: number, after: number, limit: number): Promise<FeedEntry<SaleRow>[]> {
    const rows = await this.q.rows(
      `SELECT s.feed_seq, c.address, ${hexOf("s.hash", "hash")}, ${hexOf("s.seller", "seller")}, ${hexOf("s.buyer", "buyer")},
          s.asset_id::text AS asset_id, s.timestamp, s.block, s.price::text AS price, s.amount_received::text AS amount_received, s.marketplace
        FROM sales s JOIN collections c ON c.id = s.collection_id
        WHERE s.collection_id = $1 AND s.feed_seq > $2 ORDER BY s.feed_seq LIMIT $3`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toSale(r) }));
  }

  async listings(collectionId: number, after: number, limit: number): Promise<FeedEntry<ListingRow>[]> {
    const rows = await this.q.rows(
      `SELECT l.feed_seq, c.address, l.marketplace_id, l.marketplace, l.asset_id::text AS asset_id, l.created_at, l.last_updated_at,
          l.price::text AS price, l.status
        FROM listings l JOIN collections c ON c.id = l.collection_id
        WHERE l.collection_id = $1 AND l.feed_seq > $2 ORDER BY l.feed_seq LIMIT $3`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: r.feed_seq as number, row: toListing(r) }));
  }

  async transfers(collectionId: number, after: number, limit: number): Promise<FeedEntry<TransferRow>[]> {
    const rows = await this.q.rows(
      `SELECT t.feed_seq, ${TRANSFER_COLUMNS} FROM transfers t JOIN collections c ON c.id = t.collection_id
        WHERE t.collection_id = $1 AND t.feed_seq > $2 ORDER BY t.feed_seq LIMIT $3`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: Number(r.feed_seq), row: toTransfer(r) }));
  }

  async offers(collectionId: number, after: number, limit: number): Promise<FeedEntry<OfferRow>[]> {
    const rows = await this.q.rows(
      `SELECT o.feed_seq, c.address, o.marketplace_id, o.marketplace, coalesce(o.asset_id::text, '') AS asset_id, o.trait_type, o.trait_value,
          o.maker, o.price::text AS price, o.created_at, o.last_updated_at, o.expires_at, o.status
        FROM offers o JOIN collections c ON c.id = o.collection_id
        WHERE o.collection_id = $1 AND o.feed_seq > $2 ORDER BY o.feed_seq LIMIT $3`,
      [collectionId, after, limit],
    );
    return rows.map((r) => ({ seq: Number(r.feed_seq), row: toOffer(r) }));
  }
}
