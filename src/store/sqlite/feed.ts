import { usdPointSql } from "../shared/prices.js";
import type { ListingRow, OfferRow, SaleRow, TokenEventRow, TransferRow } from "../../domain/rows.js";
import { toToken } from "../shared/token-market.js";
import { TOKEN_ROW } from "./tokens.js";
import { TAKEN } from "../shared/token-feed.js";
import type { FeedEntry, FeedKind, FeedRepository } from "../ports/feed.js";
import { toListing, toOffer, toSale, toTransfer } from "../shared/rows.js";
import { feedEntry as toFeedEntry, REMOVAL_TABLES } from "../shared/removals.js";
import { finalitySql, finalizedOfChain } from "../shared/finality.js";
import { TRANSFER_COLUMNS } from "./transfers.js";
import { ORDER_FEED_COLUMNS, type OrderKind } from "../shared/order-log.js";
import { assetIdSql } from "./asset-key.js";
import { hexSql } from "./hex.js";
import type { SqliteStatements } from "./statements.js";

// The live feeds' reads on SQLite: a collection's rows above a position, in
// position order, one seek on (collection_id, feed_seq) (migration 6). The
// positions are written by record-writes.ts.

/** A sale row's columns (of the alias `a`, its collection `c`), as toSale reads them. */
export const SALE_COLUMNS = `c.address, ${hexSql("a.hash", "hash")}, ${hexSql("a.seller", "seller")}, ${hexSql("a.buyer", "buyer")},
  ${assetIdSql("a.")}, a.timestamp, a.block, a.price, a.amount_received, a.marketplace, a.block_hash, ${finalitySql("a.block", finalizedOfChain("c.chain"))} AS finality, a.wash_flags, a.currency, a.marketplace_fee, a.royalty_fee, a.quantity,
  ${usdPointSql("a")}`;

/** An order's feed columns (of its table or its removal table, as `a`: shared/order-log.ts ORDER_FEED_COLUMNS), as toListing and toOffer read them. */
const orderColumns = (kind: OrderKind) => `c.address, ${assetIdSql("a.")}, ${ORDER_FEED_COLUMNS[kind].map((c) => `a.${c}`).join(", ")}`;
export const LISTING_COLUMNS = orderColumns("listings");
export const OFFER_COLUMNS = orderColumns("offers");

/** A kind's rows (table as `a`) and the records taken back (reorgs.ts migration 24, order-reorgs.ts 28), with the same columns. */
const from = (table: string, columns: string) =>
  `${columns} FROM ${table} a INDEXED BY ${table}_by_feed JOIN collections c ON c.id = a.collection_id`;

/** Each kind's rows and its removals: `feed_seq, original_seq` (NULL for a row), then the kind's columns; the row's alias when not `a`. */
const SELECT: Record<FeedKind, { sql: string; removed?: string; alias?: string; row: (r: Record<string, unknown>) => unknown }> = {
  sales: {
    sql: `SELECT a.feed_seq, NULL AS original_seq, ${from("sales", SALE_COLUMNS)}`,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.sales, SALE_COLUMNS)}`,
    row: toSale,
  },
  listings: {
    sql: `SELECT a.feed_seq, NULL AS original_seq, ${from("listings", LISTING_COLUMNS)}`,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.listings, LISTING_COLUMNS)}`,
    row: toListing,
  },
  transfers: {
    sql: `SELECT a.feed_seq, NULL AS original_seq, ${from("transfers", TRANSFER_COLUMNS("a"))}`,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.transfers, TRANSFER_COLUMNS("a"))}`,
    row: toTransfer,
  },
  offers: {
    sql: `SELECT a.feed_seq, NULL AS original_seq, ${from("offers", OFFER_COLUMNS)}`,
    removed: `SELECT a.feed_seq, a.original_seq, ${from(REMOVAL_TABLES.offers, OFFER_COLUMNS)}`,
    row: toOffer,
  },
  // A token whose record was written, as the tokens list answers it (migration 39); never taken back.
  tokens: {
    sql: `SELECT t.feed_seq, NULL AS original_seq, t.fed_at, ${TOKEN_ROW.columns}
      FROM tokens t INDEXED BY tokens_by_feed JOIN collections c ON c.id = t.collection_id ${TOKEN_ROW.joins}`,
    alias: "t",
    row: (r): TokenEventRow => ({ ...toToken(r, "id"), fedAt: Number(r.fed_at) }),
  },
};

/** The rows above a position of one collection (its row as `alias`). */
const one = (alias = "a") => ` WHERE ${alias}.collection_id = ? AND ${alias}.feed_seq > ? AND ${TAKEN(alias)} ORDER BY ${alias}.feed_seq LIMIT ?`;

/** A kind's statements read for a collection: its rows, and its removals when it has any, each with its condition on a collection. */
const parts = (kind: FeedKind) => {
  const { sql, removed, alias } = SELECT[kind];
  return removed === undefined ? [sql + one(alias)] : [sql + one(alias), removed + one()];
};


/** A row read as a feed entry (shared/removals.ts). */
const feedEntry = (kind: FeedKind) => (r: Record<string, unknown>): FeedEntry<unknown> => toFeedEntry(r, SELECT[kind].row);

export class SqliteFeed implements FeedRepository {
  constructor(private readonly s: SqliteStatements) {}

  epoch(): string {
    return this.s.prepare("SELECT feed_epoch FROM store_state WHERE id = 1").pluck().get() as string;
  }

  last(): number {
    return this.s.prepare("SELECT feed_seq FROM store_state WHERE id = 1").pluck().get() as number;
  }

  holds(kind: FeedKind, collectionId: number, seq: number): boolean {
    return this.s.prepare(`SELECT 1 FROM ${kind} x INDEXED BY ${kind}_by_feed WHERE x.collection_id = ? AND x.feed_seq = ? AND ${TAKEN("x")}`).pluck().get(collectionId, seq) !== undefined;
  }

  head(kind: FeedKind, collectionId: number): number {
    const tables = kind === "tokens" ? [kind] : [kind, REMOVAL_TABLES[kind]];
    const sql = `SELECT max(${tables.map((t) => `(SELECT coalesce(max(x.feed_seq), 0) FROM ${t} x INDEXED BY ${t}_by_feed WHERE x.collection_id = ? AND ${TAKEN("x")})`).join(", ")}, 0)`;
    return this.s.prepare(sql).pluck().get(...tables.map(() => collectionId)) as number;
  }

  #read<T>(kind: FeedKind, collectionId: number, after: number, limit: number): FeedEntry<T>[] {
    return this.merged(kind, [collectionId], after, limit) as FeedEntry<T>[];
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

  tokens(collectionId: number, after: number, limit: number): FeedEntry<TokenEventRow>[] {
    return this.#read("tokens", collectionId, after, limit);
  }

  merged(kind: FeedKind, collectionIds: readonly number[], after: number, limit: number): FeedEntry<unknown>[] {
    if (collectionIds.length === 0) return [];
    // One statement, so one snapshot: each collection's `limit` lowest rows and removals, then the lowest of those.
    const statements = parts(kind);
    if (collectionIds.length === 1 && statements.length === 1) return this.s.rows(statements[0]!, [collectionIds[0], after, limit]).map(feedEntry(kind));
    const each = collectionIds.flatMap(() => statements.map((sql) => `SELECT * FROM (${sql})`)).join(" UNION ALL ");
    const params = collectionIds.flatMap((id) => statements.flatMap(() => [id, after, limit]));
    return this.s.rows(`${each} ORDER BY feed_seq LIMIT ?`, [...params, limit]).map(feedEntry(kind));
  }
}

