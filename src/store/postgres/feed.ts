import type { ListingRow, SaleRow } from "../../domain/records.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports.js";
import { toListing, toSale } from "../shared/rows.js";
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

  async head(kind: FeedKind, collectionId: number): Promise<number> {
    const sql = `SELECT coalesce(max(feed_seq), 0) AS s FROM ${kind === "sales" ? "sales" : "listings"} WHERE collection_id = $1`;
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
}
