import { notFlagged, TOKEN_FLAG_COLUMNS } from "./flags.js";
import { standardIs } from "../shared/token-standard.js";
import { metadataSql } from "../shared/metadata.js";
import { usdPointSql } from "../shared/prices.js";
import type { PgQueries } from "./statements.js";
import type { TokensFilter, TokensRepository } from "../ports/market.js";
import type { TokenOwnerRow, TokenRow, TraitValueRow } from "../../domain/rows.js";
import { type Page, type PageRequest, toPage } from "../ports/paging.js";
import { ANSWERED_OWNER, NO_ASK, ONE_OWNER, TOKEN_ORDER, toToken, toTraitValue } from "../shared/token-market.js";
import { finalitySql, finalizedOfChain } from "../shared/finality.js";
import { hexExpr } from "./hex.js";

// The tokens list and the traits of a collection, as SQLite's
// (store/sqlite/tokens.ts): one index range in the order asked, each row's
// latest sale and cheapest listing read with it (LATERAL: one seek into
// the token's sales, and its listings, few, sorted by price), all in one
// statement and so one snapshot.

const MOVE_BLOCK = "coalesce(t.owner_block, -1)";
const MOVE_LOG = "coalesce(t.owner_log, -1)";

/** The latest sale (s_*) and the cheapest active listing (l_*) of the token row `t`, as columns (null without one). */
const SALE_AND_LISTING = `
  LEFT JOIN LATERAL (
    SELECT ${hexExpr("s.hash")} AS s_hash, ${hexExpr("s.seller")} AS s_seller, ${hexExpr("s.buyer")} AS s_buyer, s.timestamp AS s_timestamp,
      s.block AS s_block, s.price::text AS s_price, s.amount_received::text AS s_amount_received, s.marketplace AS s_marketplace,
      ${hexExpr("s.block_hash")} AS s_block_hash, ${finalitySql("s.block", finalizedOfChain("c.chain"))} AS s_finality, s.wash_flags AS s_wash_flags,
      s.currency AS s_currency, s.marketplace_fee AS s_marketplace_fee, s.royalty_fee AS s_royalty_fee, s.quantity AS s_quantity, ${usdPointSql("s", "s_usd_point")}
    FROM sales s WHERE s.collection_id = t.collection_id AND s.asset_id = t.asset_id
    ORDER BY s.timestamp DESC, s.block DESC, s.hash LIMIT 1) ls ON true
  LEFT JOIN LATERAL (
    SELECT l.marketplace_id AS l_marketplace_id, l.marketplace AS l_marketplace, l.created_at AS l_created_at,
      l.last_updated_at AS l_last_updated_at, l.price::text AS l_price, l.currency AS l_currency, l.maker AS l_maker, l.expires_at AS l_expires_at, l.quantity AS l_quantity, l.block AS l_block, ${hexExpr("l.block_hash")} AS l_block_hash, l.status AS l_status
    FROM listings l WHERE l.collection_id = t.collection_id AND l.asset_id = t.asset_id AND l.status = 'CREATED'
    ORDER BY l.price, l.marketplace, l.marketplace_id COLLATE "C" LIMIT 1) ll ON true`;

/** A tokens-list row's columns, of the token row `t`, its collection `c` and SALE_AND_LISTING's joins, as shared/token-market.ts toToken reads them. */
const TOKEN_ROW_COLUMNS = `c.address, t.asset_id::text AS asset_id, t.collection_id, ${ANSWERED_OWNER}, t.attributes, ${metadataSql("t", "tokens")}, ${TOKEN_FLAG_COLUMNS}, t.ask_key,
         ${MOVE_BLOCK} AS move_block, ${MOVE_LOG} AS move_log, t.rarity_rank AS rank, ls.*, ll.*`;

/** Tokens-list rows of the tokens `from` names as `t` (the table, or a subquery of its rows) and `where` keeps, `columns` before theirs. */
export const tokenRowsOf = (from: string, where = "", columns = "") => `SELECT ${columns}${TOKEN_ROW_COLUMNS}
       FROM ${from}
       JOIN collections c ON c.id = t.collection_id
       ${SALE_AND_LISTING}${where}`;

export class PgTokens implements TokensRepository {
  constructor(private readonly q: PgQueries) {}

  async ownersPage(collectionId: number, assetId: string, page: PageRequest): Promise<Page<TokenOwnerRow>> {
    // The leading "<=" bounds the index seek; the rest breaks ties, so a page costs the same however deep it is.
    const after = (balance: string, owner: string) =>
      page.after ? `AND ${balance} <= $4 AND (${balance} < $4 OR (${balance} = $4 AND ${owner} > $5 COLLATE "C"))` : "";
    // One statement (one snapshot): the standard's side only, an ERC-1155 token's one range of token_balances_by_balance.
    const rows = await this.q.rows(
      `SELECT * FROM (
         (SELECT owner, balance FROM token_balances WHERE collection_id = $1 AND asset_id = $2 AND balance > 0 ${after("balance", "owner")} AND ${standardIs("$1", "ERC1155")}
          ORDER BY balance DESC, owner COLLATE "C" LIMIT $3)
         UNION ALL
         SELECT current_owner, 1 FROM tokens WHERE collection_id = $1 AND asset_id = $2 AND current_owner <> '' ${after("1", "current_owner")} AND ${standardIs("$1", "ERC721")}) o
       ORDER BY balance DESC, owner COLLATE "C" LIMIT $3`,
      [collectionId, assetId, page.limit + 1, ...(page.after ? [page.after[0], page.after[1]] : [])],
    );
    return toPage(rows, page.limit, (r) => ({ address: r.owner as string, balance: Number(r.balance) }), (r) => [r.balance, r.address]);
  }

  async tokensPage(filter: TokensFilter, page: PageRequest): Promise<Page<TokenRow>> {
    const values: unknown[] = [];
    const $ = (v: unknown) => `$${values.push(v)}`;
    const where: string[] = [];
    const trait = filter.trait !== undefined;
    const x = trait ? "tt" : "t";
    let from = "tokens t";
    if (trait) {
      from = "token_traits tt JOIN tokens t ON t.collection_id = tt.collection_id AND t.asset_id = tt.asset_id";
      where.push(`tt.collection_id = ${$(filter.collectionId)} AND tt.trait_type = ${$(filter.trait!.type)} AND tt.value = ${$(filter.trait!.value)}`);
    } else if (filter.collectionId !== undefined) {
      where.push(`t.collection_id = ${$(filter.collectionId)}`);
    }
    if (filter.owner !== undefined) where.push(`t.current_owner = ${$(filter.owner)} AND ${ONE_OWNER}`);
    if (filter.collectionId === undefined && filter.chain !== undefined) where.push(`t.collection_id IN (SELECT id FROM collections WHERE chain = ${$(filter.chain)})`);
    if (filter.assetId !== undefined) where.push(`${x}.asset_id = ${$(filter.assetId)}`);
    const rank = `${x}.rarity_rank`;
    const after = page.after;
    let order: string;
    switch (filter.sort) {
      case "id":
        order = `${x}.collection_id, ${x}.asset_id`;
        // Within one collection the id alone bounds the seek.
        if (after && filter.collectionId !== undefined) where.push(`${x}.asset_id > ${$(after[1])}::numeric`);
        else if (after) where.push(`(${x}.collection_id, ${x}.asset_id) > (${$(after[0])}, ${$(after[1])}::numeric)`);
        break;
      case "price":
        order = `${x}.ask_key, ${x}.asset_id`;
        if (after) where.push(`(${x}.ask_key, ${x}.asset_id) > (${$(after[0])}, ${$(after[1])}::numeric)`);
        break;
      case "rarity":
        order = `${rank}, ${x}.asset_id`;
        if (after) where.push(`(${rank}, ${x}.asset_id) > (${$(after[0])}::bigint, ${$(after[1])}::numeric)`);
        break;
      case "recent":
        // Latest first, ties by id descending too: one backward range of
        // tokens_by_move, its keyset a row comparison.
        order = `${MOVE_BLOCK} DESC, ${MOVE_LOG} DESC, ${x}.asset_id DESC`;
        if (after) where.push(`(${MOVE_BLOCK}, ${MOVE_LOG}, ${x}.asset_id) < (${$(after[0])}::bigint, ${$(after[1])}::bigint, ${$(after[2])}::numeric)`);
        break;
    }
    // The page is found first, in the order asked (an index range, or a
    // wallet's or a trait's tokens sorted), then only its rows read their
    // latest sale and cheapest listing; the joins need not keep its order,
    // so the rows are put back in it here.
    const rows = await this.q.rows(tokenRowsOf(`(SELECT t.* FROM ${from} WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT ${$(page.limit + 1)}) t`), values);
    const tokens = rows.map((r) => toToken(r, filter.sort)).sort(TOKEN_ORDER[filter.sort]);
    return toPage(tokens, page.limit, (t) => t, (t) => t.key);
  }

  async traits(collectionId: number, includeFlagged = false): Promise<TraitValueRow[]> {
    return this.q.rows(
      `SELECT v.trait_type, v.value, v.tokens, l.marketplace, l.marketplace_id, l.asset_id::text AS asset_id, l.price::text AS price, l.created_at
       FROM trait_values v
       LEFT JOIN LATERAL (
         SELECT tt.asset_id FROM token_traits tt
         WHERE tt.collection_id = v.collection_id AND tt.trait_type = v.trait_type AND tt.value = v.value AND tt.ask_key < '${NO_ASK}'${includeFlagged ? "" : ` AND ${notFlagged("tt")}`}
         ORDER BY tt.ask_key, tt.asset_id LIMIT 1) f ON true
       LEFT JOIN LATERAL (
         SELECT l.* FROM listings l WHERE l.collection_id = v.collection_id AND l.asset_id = f.asset_id AND l.status = 'CREATED'
         ORDER BY l.price, l.marketplace, l.marketplace_id COLLATE "C" LIMIT 1) l ON true
       WHERE v.collection_id = $1 ORDER BY v.trait_type, v.value`,
      [collectionId],
    ).then((rows) => rows.map(toTraitValue));
  }
}
