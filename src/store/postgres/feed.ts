import type { ListingRow, OfferRow, SaleRow, TransferRow } from "../../domain/rows.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports/feed.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import type { PgQueries } from "./statements.js";
import { hexSql } from "./hex.js";

// The live feeds' reads on PostgreSQL: a collection's rows above a position,
// in position order, one seek on (collection_id, feed_seq) (migration 5).
// On a replica they answer what it has replayed. The positions are written by record-writes.ts.

/** Each kind's columns and table (as `a`). */
const SELECT: Record<FeedKind, { sql: string; row: (r: Record<string, unknown>) => unknown }> = {
  sales: {
    sql: `SELECT a.feed_seq, c.address, ${hexSql("a.hash", "hash")}, ${hexSql("a.seller", "seller")}, ${hexSql("a.buyer", "buyer")},
          a.asset_id::text AS asset_id, a.timestamp, a.block, a.price::text AS price, a.amount_received::text AS amount_received, a.marketplace,
          ${hexSql("a.block_hash", "block_hash")}
        FROM sales a JOIN collections c ON c.id = a.collection_id`,
    row: toSale,
  },
  listings: {
    sql: `SELECT a.feed_seq, c.address, a.marketplace_id, a.marketplace, a.asset_id::text AS asset_id, a.created_at, a.last_updated_at,
          a.price::text AS price, a.status
        FROM listings a JOIN collections c ON c.id = a.collection_id`,
    row: toListing,
  },
  transfers: {
    sql: `SELECT a.feed_seq, ${TRANSFER_COLUMNS("a")} FROM transfers a JOIN collections c ON c.id = a.collection_id`,
    row: toTransfer,
  },
  offers: {
    sql: `SELECT a.feed_seq, c.address, a.marketplace_id, a.marketplace, coalesce(a.asset_id::text, '') AS asset_id, a.trait_type, a.trait_value,
          a.maker, a.price::text AS price, a.created_at, a.last_updated_at, a.expires_at, a.status
        FROM offers a JOIN collections c ON c.id = a.collection_id`,
    row: toOffer,
  },
};

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

  async #read<T>(kind: FeedKind, collectionId: number, after: number, limit: number): Promise<FeedEntry<T>[]> {
    const { sql, row } = SELECT[kind];
    const rows = await this.q.rows(`${sql} WHERE a.collection_id = $1 AND a.feed_seq > $2 ORDER BY a.feed_seq LIMIT $3`, [collectionId, after, limit]);
    return rows.map((r) => ({ seq: Number(r.feed_seq), row: row(r) as T }));
  }

  sales(collectionId: number, after: number, limit: number): Promise<FeedEntry<SaleRow>[]> {
    return this.#read("sales", collectionId, after, limit);
  }

  listings(collectionId: number, after: number, limit: number): Promise<FeedEntry<ListingRow>[]> {
    return this.#read("listings", collectionId, after, limit);
  }

  transfers(collectionId: number, after: number, limit: number): Promise<FeedEntry<TransferRow>[]> {
    return this.#read("transfers", collectionId, after, limit);
  }

  offers(collectionId: number, after: number, limit: number): Promise<FeedEntry<OfferRow>[]> {
    return this.#read("offers", collectionId, after, limit);
  }

  async merged(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): Promise<FeedEntry<unknown>[]> {
    if (collectionIds.length <= 1) return collectionIds.length === 0 ? [] : this.#read(kind, collectionIds[0]!, after, limit);
    // One statement, so one snapshot: each collection's `limit` lowest (a seek each), then the lowest of those.
    const { sql, row } = SELECT[kind];
    const rows = await this.q.rows(
      `SELECT x.* FROM unnest($1::bigint[]) AS ids(id)
         CROSS JOIN LATERAL (${sql} WHERE a.collection_id = ids.id AND a.feed_seq > $2 ORDER BY a.feed_seq LIMIT $3) x
       ORDER BY x.feed_seq LIMIT $3`,
      [collectionIds, after, limit],
    );
    return rows.map((r) => ({ seq: Number(r.feed_seq), row: row(r) }));
  }
}
