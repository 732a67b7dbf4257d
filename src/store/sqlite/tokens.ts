import { notFlagged, TOKEN_FLAG_COLUMNS, TOKEN_FLAG_JOIN } from "./flags.js";
import { standardIs } from "../shared/token-standard.js";
import { metadataSql } from "../shared/metadata.js";
import { usdPointSql } from "../shared/prices.js";
import { assetIdSql, assetKey } from "./asset-key.js";
import type { TokensFilter, TokensRepository } from "../ports/market.js";
import type { TokenOwnerRow, TokenRow, TraitValueRow } from "../../domain/rows.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import { ANSWERED_OWNER, NO_ASK, ONE_OWNER, toToken, toTraitValue } from "../shared/token-market.js";
import type { SqliteStatements } from "./statements.js";
import { finalitySql, finalizedOfChain } from "../shared/finality.js";

// The tokens list and the traits of a collection, from what token-market.ts
// keeps: a page is one index range in the order asked where an index holds
// that order (by id, by price, with or without a trait; by latest move),
// then one seek per row for its latest sale and its cheapest listing, read
// with it in the same statement.

/** The cheapest active listing of a token (the floor's tie order). */
const CHEAPEST_LISTING = (collection: string, asset: string) => `(SELECT l.id FROM listings l INDEXED BY listings_open_by_asset
    WHERE l.collection_id = ${collection} AND l.asset_key = ${asset} AND l.status = 'CREATED'
    ORDER BY length(l.price), l.price, l.marketplace, l.marketplace_id LIMIT 1)`;

/** The id of the latest sale of the token row `t`, in the sales list's order. */
const LATEST_SALE = (t: string) => `(SELECT s.id FROM sales s INDEXED BY sales_by_asset
    WHERE s.collection_id = ${t}.collection_id AND s.asset_key = ${t}.asset_key
    ORDER BY s.timestamp DESC, s.block DESC, s.hash, s.asset_key LIMIT 1)`;

/**
 * Each row's latest sale (ls) and cheapest listing (ll), one seek each, as
 * columns s_* and l_* (null without one): read as columns, not as JSON
 * objects built and parsed per row (a fifth of a page's time).
 */
const SALE_AND_LISTING = {
  columns: `ls.hash AS s_hash, ls.seller AS s_seller, ls.buyer AS s_buyer, ls.timestamp AS s_timestamp, ls.block AS s_block,
    ls.price AS s_price, ls.amount_received AS s_amount_received, ls.marketplace AS s_marketplace, ls.block_hash AS s_block_hash, ls.wash_flags AS s_wash_flags, ls.currency AS s_currency, ls.marketplace_fee AS s_marketplace_fee, ls.royalty_fee AS s_royalty_fee, ls.quantity AS s_quantity, ${usdPointSql("ls", "s_usd_point")},
    ${finalitySql("ls.block", finalizedOfChain("c.chain"))} AS s_finality,
    ll.marketplace_id AS l_marketplace_id, ll.marketplace AS l_marketplace, ll.created_at AS l_created_at,
    ll.last_updated_at AS l_last_updated_at, ll.price AS l_price, ll.currency AS l_currency, ll.maker AS l_maker, ll.expires_at AS l_expires_at, ll.quantity AS l_quantity, ll.block AS l_block, ll.block_hash AS l_block_hash, ll.status AS l_status`,
  joins: `LEFT JOIN sales ls ON ls.id = ${LATEST_SALE("t")}
      LEFT JOIN listings ll ON ll.id = ${CHEAPEST_LISTING("t.collection_id", "t.asset_key")}`,
};

/** The first token of the trait value row `v` by ask (unflagged unless `includeFlagged`): its floor's token. */
const floorToken = (includeFlagged: boolean) => `(SELECT tt.asset_key FROM token_traits tt INDEXED BY token_traits_by_ask
    WHERE tt.collection_id = v.collection_id AND tt.trait_type = v.trait_type AND tt.value = v.value AND tt.ask_key < '${NO_ASK}'${includeFlagged ? "" : ` AND ${notFlagged("tt")}`}
    ORDER BY tt.ask_key, tt.asset_key LIMIT 1)`;

const MOVE_BLOCK = "coalesce(t.owner_block, -1)";
const MOVE_LOG = "coalesce(t.owner_log, -1)";

/** A tokens-list row's columns and joins, of the token row `t` and its collection `c`, as shared/token-market.ts toToken reads them (the live feed of tokens too). */
export const TOKEN_ROW = {
  columns: `c.address, ${assetIdSql("t.")}, t.collection_id, ${ANSWERED_OWNER}, t.attributes, ${metadataSql("t", "tokens")}, ${TOKEN_FLAG_COLUMNS}, t.ask_key,
        ${MOVE_BLOCK} AS move_block, ${MOVE_LOG} AS move_log, t.rarity_rank AS rank,
        ${SALE_AND_LISTING.columns}`,
  joins: `${TOKEN_FLAG_JOIN}
      ${SALE_AND_LISTING.joins}`,
};

export class SqliteTokens implements TokensRepository {
  constructor(private readonly s: SqliteStatements) {}

  ownersPage(collectionId: number, assetId: string, page: PageRequest): Page<TokenOwnerRow> {
    const token = [collectionId, assetKey(assetId)];
    // The leading "<=" bounds the index seek; the rest breaks ties, so a page costs the same however deep it is.
    const after = (balance: string, owner: string) => (page.after ? `AND ${balance} <= ? AND (${balance} < ? OR (${balance} = ? AND ${owner} > ?))` : "");
    const key = page.after ? [page.after[0], page.after[0], page.after[0], page.after[1]] : [];
    // One statement (one snapshot): the standard's side only, an ERC-1155 token's one range of token_balances_by_balance.
    const rows = this.s.rows(
      `SELECT * FROM (SELECT owner, balance FROM token_balances INDEXED BY token_balances_by_balance
         WHERE collection_id = ? AND asset_key = ? AND balance > 0 ${after("balance", "owner")} AND ${standardIs("?", "ERC1155")}
         ORDER BY balance DESC, owner LIMIT ?)
       UNION ALL
       SELECT current_owner, 1 FROM tokens WHERE collection_id = ? AND asset_key = ? AND current_owner <> ''
         ${after("1", "current_owner")} AND ${standardIs("?", "ERC721")}
       ORDER BY balance DESC, owner LIMIT ?`,
      [...token, ...key, collectionId, page.limit + 1, ...token, ...key, collectionId, page.limit + 1],
    );
    return toPage(rows, page.limit, (r) => ({ address: r.owner as string, balance: Number(r.balance) }), (r) => [r.balance, r.address]);
  }

  tokensPage(filter: TokensFilter, page: PageRequest): Page<TokenRow> {
    const where: string[] = [];
    const params: unknown[] = [];
    const trait = filter.trait !== undefined;
    // With a trait, its rows lead: token_traits holds the id, price and
    // rarity orders of each value (by latest move, the value's tokens are
    // sorted). Without, the sort's own index of tokens;
    // a wallet's tokens, its owner index (sorted when by another order).
    const x = trait ? "tt" : "t";
    let from: string;
    if (trait) {
      const index = { id: "token_traits_by_value", price: "token_traits_by_ask", rarity: "token_traits_by_rank", recent: "token_traits_by_value" }[filter.sort];
      from = `token_traits tt INDEXED BY ${index} JOIN tokens t ON t.collection_id = tt.collection_id AND t.asset_key = tt.asset_key`;
      where.push("tt.collection_id = ? AND tt.trait_type = ? AND tt.value = ?");
      params.push(filter.collectionId, filter.trait!.type, filter.trait!.value);
    } else if (filter.owner !== undefined) {
      from = "tokens t INDEXED BY tokens_by_owner";
    } else {
      from = `tokens t ${{ id: "", price: "INDEXED BY tokens_by_ask", rarity: "INDEXED BY tokens_by_rank", recent: "INDEXED BY tokens_by_move" }[filter.sort]}`;
    }
    if (filter.collectionId !== undefined && !trait) {
      where.push("t.collection_id = ?");
      params.push(filter.collectionId);
    }
    if (filter.owner !== undefined) {
      where.push(`t.current_owner = ? AND ${ONE_OWNER}`);
      params.push(filter.owner);
    }
    if (filter.collectionId === undefined && filter.chain !== undefined) {
      where.push("t.collection_id IN (SELECT id FROM collections WHERE chain = ?)");
      params.push(filter.chain);
    }
    if (filter.assetId !== undefined) {
      where.push(`${x}.asset_key = ?`);
      params.push(assetKey(filter.assetId));
    }
    const after = page.after;
    const rank = `${x}.rarity_rank`;
    let order: string;
    switch (filter.sort) {
      case "id":
        order = `${x}.collection_id, ${x}.asset_key`;
        // Within one collection the id alone bounds the seek (a row value
        // repeating the bound collection would not).
        if (after && filter.collectionId !== undefined) {
          where.push(`${x}.asset_key > ?`);
          params.push(assetKey(after[1] as string));
        } else if (after) {
          where.push(`(${x}.collection_id, ${x}.asset_key) > (?, ?)`);
          params.push(after[0], assetKey(after[1] as string));
        }
        break;
      case "price":
        order = `${x}.ask_key, ${x}.asset_key`;
        if (after) {
          where.push(`(${x}.ask_key, ${x}.asset_key) > (?, ?)`);
          params.push(after[0], assetKey(after[1] as string));
        }
        break;
      case "rarity":
        order = `${rank}, ${x}.asset_key`;
        if (after) {
          where.push(`(${rank}, ${x}.asset_key) > (?, ?)`);
          params.push(after[0], assetKey(after[1] as string));
        }
        break;
      case "recent":
        // Latest first, ties by id descending too: one backward range of
        // tokens_by_move, its keyset a row comparison.
        order = `${MOVE_BLOCK} DESC, ${MOVE_LOG} DESC, ${x}.asset_key DESC`;
        if (after) {
          where.push(`(${MOVE_BLOCK}, ${MOVE_LOG}, ${x}.asset_key) < (?, ?, ?)`);
          params.push(after[0], after[1], assetKey(after[2] as string));
        }
        break;
    }
    const sql = `SELECT ${TOKEN_ROW.columns}
      FROM ${from} JOIN collections c ON c.id = t.collection_id
      ${TOKEN_ROW.joins}
      WHERE ${where.join(" AND ")}
      ORDER BY ${order} LIMIT ?`;
    params.push(page.limit + 1);
    return toPage(this.s.rows(sql, params), page.limit, (r) => toToken(r, filter.sort), (t) => t.key);
  }

  traits(collectionId: number, includeFlagged = false): TraitValueRow[] {
    // Each value's floor: the first of its tokens by ask (one seek in
    // token_traits_by_ask), then that token's cheapest listing.
    const sql = `SELECT v.trait_type, v.value, v.tokens, l.marketplace, l.marketplace_id, ${assetIdSql("l.")}, l.price, l.created_at
      FROM trait_values v LEFT JOIN listings l ON l.id = ${CHEAPEST_LISTING("v.collection_id", floorToken(includeFlagged))}
      WHERE v.collection_id = ? ORDER BY v.trait_type, v.value`;
    return this.s.rows(sql, [collectionId]).map(toTraitValue);
  }
}
