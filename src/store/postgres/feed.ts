import { usdPointSql } from "../shared/prices.js";
import type { ListingRow, OfferRow, SaleRow, TokenEventRow, TransferRow } from "../../domain/rows.js";
import { toToken } from "../shared/token-market.js";
import { tokenRowsOf } from "./tokens.js";
import { TAKEN } from "../shared/token-feed.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports/feed.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { feedEntry as toFeedEntry, REMOVAL_TABLES } from "../shared/removals.js";
import { finalitySql, finalizedOfChain } from "../shared/finality.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import type { PgQueries } from "./statements.js";
import { hexSql } from "./hex.js";

// The live feeds' reads on PostgreSQL: a collection's rows above a position,
// in position order, one seek on (collection_id, feed_seq) (migration 5).
// On a replica they answer what it has replayed. The positions are written by record-writes.ts.

/** A sale row's columns (of the alias `a`, its collection `c`), as toSale reads them. */
export const SALE_COLUMNS = `c.address, ${hexSql("a.hash", "hash")}, ${hexSql("a.seller", "seller")}, ${hexSql("a.buyer", "buyer")},
  a.asset_id::text AS asset_id, a.timestamp, a.block, a.price::text AS price, a.amount_received::text AS amount_received, a.marketplace,
  ${hexSql("a.block_hash", "block_hash")}, ${finalitySql("a.block", finalizedOfChain("c.chain"))} AS finality, a.wash_flags, a.currency, a.marketplace_fee, a.royalty_fee,
  a.quantity, ${usdPointSql("a")}`;

/** An order's feed columns (of its table or its removal table, as `a`: order-reorgs.ts migration 28), as toListing and toOffer read them. */
export const LISTING_COLUMNS = `c.address, a.marketplace_id, a.marketplace, a.asset_id::text AS asset_id,
  a.created_at, a.last_updated_at, a.price::text AS price, a.currency, a.maker, a.expires_at, a.quantity, a.block, ${hexSql("a.block_hash", "block_hash")}, a.status`;
export const OFFER_COLUMNS = `c.address, a.marketplace_id, a.marketplace, coalesce(a.asset_id::text, '') AS asset_id,
  a.trait_type, a.trait_value, a.maker, a.price::text AS price, a.currency, a.created_at, a.last_updated_at, a.expires_at, a.block, ${hexSql("a.block_hash", "block_hash")}, a.status`;

/** A kind's rows (table as `a`) and the records taken back (reorgs.ts migration 24, order-reorgs.ts 28), with the same columns. */
const from = (table: string, columns: string) => `${columns} FROM ${table} a JOIN collections c ON c.id = a.collection_id`;

/** Each kind's rows and its removals: `feed_seq, original_seq` (NULL for a row), then the kind's columns. */
const SELECT: Record<FeedKind, { table: string; sql: string; removals?: string; removed?: string; above?: (id: string) => string; row: (r: Record<string, unknown>) => unknown }> = {
  sales: {
    table: "sales",
    sql: `SELECT a.feed_seq, NULL::bigint AS original_seq, ${from("sales", SALE_COLUMNS)}`,
    removals: REMOVAL_TABLES.sales,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.sales, SALE_COLUMNS)}`,
    row: toSale,
  },
  listings: {
    table: "listings",
    sql: `SELECT a.feed_seq, NULL::bigint AS original_seq, ${from("listings", LISTING_COLUMNS)}`,
    removals: REMOVAL_TABLES.listings,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.listings, LISTING_COLUMNS)}`,
    row: toListing,
  },
  transfers: {
    table: "transfers",
    sql: `SELECT a.feed_seq, NULL::bigint AS original_seq, ${from("transfers", TRANSFER_COLUMNS("a"))}`,
    removals: REMOVAL_TABLES.transfers,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.transfers, TRANSFER_COLUMNS("a"))}`,
    row: toTransfer,
  },
  offers: {
    table: "offers",
    sql: `SELECT a.feed_seq, NULL::bigint AS original_seq, ${from("offers", OFFER_COLUMNS)}`,
    removals: REMOVAL_TABLES.offers,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.offers, OFFER_COLUMNS)}`,
    row: toOffer,
  },
  // A token whose record was written, as the tokens list answers it (migration 39); never taken back.
  tokens: {
    table: "tokens",
    sql: "",
    // One range of tokens_by_feed, each row's sale and listing a seek: the index's order (nested loops keep it).
    above: (id) => tokenRowsOf("tokens t", ` WHERE t.collection_id = ${id} AND t.feed_seq > $2 AND ${TAKEN("t")} ORDER BY t.feed_seq LIMIT $3`, "t.feed_seq, NULL::bigint AS original_seq, t.fed_at, "),
    row: (r): TokenEventRow => ({ ...toToken(r, "id"), fedAt: Number(r.fed_at) }),
  },
};

/** A row read as a feed entry (shared/removals.ts). */
const feedEntry = (kind: FeedKind) => (r: Record<string, unknown>): FeedEntry<unknown> => toFeedEntry(r, SELECT[kind].row);

/** A collection's rows and removals of a kind above a position (`id`: the collection's expression; $2 the position, $3 the limit). */
function above(kind: FeedKind, id: string): string {
  const { sql, removed, above: own } = SELECT[kind];
  if (own !== undefined) return own(id);
  const one = (q: string) => `${q} WHERE a.collection_id = ${id} AND a.feed_seq > $2 ORDER BY a.feed_seq LIMIT $3`;
  return removed === undefined ? one(sql) : `(${one(sql)}) UNION ALL (${one(removed)}) ORDER BY feed_seq LIMIT $3`;
}

export class PgFeed implements FeedRepository {
  constructor(private readonly q: PgQueries) {}

  async epoch(): Promise<string> {
    return (await this.q.rows<{ e: string }>("SELECT feed_epoch AS e FROM store_state WHERE id = 1", []))[0]?.e ?? "";
  }

  async last(): Promise<number> {
    const r = (await this.q.rows<{ v: string; called: boolean }>("SELECT last_value AS v, is_called AS called FROM feed_seq", []))[0];
    return r === undefined || !r.called ? 0 : Number(r.v);
  }

  async holds(kind: FeedKind, collectionId: number, seq: number): Promise<boolean> {
    return (await this.q.rows(`SELECT 1 FROM ${SELECT[kind].table} x WHERE x.collection_id = $1 AND x.feed_seq = $2 AND ${TAKEN("x")}`, [collectionId, seq])).length > 0;
  }

  async head(kind: FeedKind, collectionId: number): Promise<number> {
    const { table, removals } = SELECT[kind];
    const max = (t: string) => `(SELECT coalesce(max(x.feed_seq), 0) FROM ${t} x WHERE x.collection_id = $1 AND ${TAKEN("x")})`;
    const sql = `SELECT greatest(${max(table)}${removals === undefined ? "" : `, ${max(removals)}`}) AS s`;
    return Number((await this.q.rows<{ s: string }>(sql, [collectionId]))[0]?.s ?? 0);
  }

  async #read<T>(kind: FeedKind, collectionId: number, after: number, limit: number): Promise<FeedEntry<T>[]> {
    const rows = await this.q.rows(above(kind, "$1"), [collectionId, after, limit]);
    return rows.map(feedEntry(kind)) as FeedEntry<T>[];
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

  tokens(collectionId: number, after: number, limit: number): Promise<FeedEntry<TokenEventRow>[]> {
    return this.#read("tokens", collectionId, after, limit);
  }

  async merged(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): Promise<FeedEntry<unknown>[]> {
    if (collectionIds.length <= 1) return collectionIds.length === 0 ? [] : this.#read(kind, collectionIds[0]!, after, limit);
    // One statement, so one snapshot: each collection's `limit` lowest (a seek each), then the lowest of those.
    const rows = await this.q.rows(
      `SELECT x.* FROM unnest($1::bigint[]) AS ids(id) CROSS JOIN LATERAL (${above(kind, "ids.id")}) x ORDER BY x.feed_seq LIMIT $3`,
      [collectionIds, after, limit],
    );
    return rows.map(feedEntry(kind));
  }
}
