import { hexOf, hexOrNone } from "./rows.js";
import { standardIs } from "./token-standard.js";
import { CURRENCY } from "../../domain/wire/messages.js";
import { usdValue } from "../../domain/money.js";
import type { TokenSort } from "../ports/market.js";
import type { TokenRow, TraitValueRow } from "../../domain/rows.js";
import type { KeyValue } from "../../domain/rows.js";
import type { Finality, ListingRow, ListingStatusName, SaleRow } from "../../domain/rows.js";
import type { Row } from "./rows.js";

// What both engines keep of a token's market (sqlite/token-market.ts,
// postgres/token-market.ts): its cheapest active listing price as an ask
// key, the price prefixed with its two-digit length so that text order is
// numeric order, and NO_ASK (after every digit) for a token not listed;
// and how both engines' rows of the tokens and traits lists become records.


/** A token row's owner as answered: none for an ERC-1155 collection's token, whose owners are many (its owners list: decisions.md, "ERC-1155"). */
export const ANSWERED_OWNER = "CASE c.token_standard WHEN 'ERC1155' THEN '' ELSE t.current_owner END AS current_owner";

/** A wallet's tokens by their one owner: of ERC-721 collections only (`t`: the token row). */
export const ONE_OWNER = standardIs("t.collection_id", "ERC721");

/** The row's latest sale from its s_* columns (null: none). */
function saleOf(r: Row): SaleRow | undefined {
  if (r.s_timestamp === null || r.s_timestamp === undefined) return undefined;
  return {
    hash: hexOf(r.s_hash), from: hexOf(r.s_seller), to: hexOf(r.s_buyer), contractAddress: r.address as string, assetId: r.asset_id as string,
    timestamp: Number(r.s_timestamp), block: Number(r.s_block), price: String(r.s_price), amountReceived: String(r.s_amount_received),
    currency: (r.s_currency as string | undefined) ?? CURRENCY, marketplace: r.s_marketplace as string,
    marketplaceFee: (r.s_marketplace_fee as string | undefined) ?? "", royaltyFee: (r.s_royalty_fee as string | undefined) ?? "",
    quantity: String(r.s_quantity ?? 1),
    priceUsd: usdValue(String(r.s_price), (r.s_currency as string | undefined) ?? CURRENCY, r.s_usd_point as string | null | undefined),
    blockHash: hexOrNone(r.s_block_hash), finality: r.s_finality as Finality | undefined,
    washMask: Number(r.s_wash_flags ?? 0),
  };
}

/** The row's cheapest listing from its l_* columns (null: none). */
function listingOf(r: Row): ListingRow | undefined {
  if (r.l_created_at === null || r.l_created_at === undefined) return undefined;
  return {
    marketplaceId: r.l_marketplace_id as string, marketplace: r.l_marketplace as string, contractAddress: r.address as string,
    assetId: r.asset_id as string, createdAt: Number(r.l_created_at), lastUpdatedAt: Number(r.l_last_updated_at), price: String(r.l_price),
    ...(r.l_currency === undefined ? {} : { currency: r.l_currency as string }),
    ...(r.l_maker === undefined ? {} : { maker: r.l_maker as string, expiresAt: Number(r.l_expires_at) }),
    ...(r.l_quantity === undefined ? {} : { quantity: String(r.l_quantity) }),
    block: Number(r.l_block), blockHash: hexOrNone(r.l_block_hash), status: r.l_status as ListingStatusName,
  };
}

export const NO_ASK = "~";

/** The rarity order's value of a token without a rank: after every rank. */
export const UNRANKED = Number.MAX_SAFE_INTEGER;

/** A trait value as the lists show it: a string as written, a number or boolean as its JSON text. */
function traitText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A token record's attributes (SQLite's JSON text, PostgreSQL's parsed jsonb) as the tokens list shows them. */
export function attributesOf(attributes: unknown): TokenRow["attributes"] {
  const list = (typeof attributes === "string" ? JSON.parse(attributes) : attributes) as { trait_type?: unknown; value?: unknown; display_type?: unknown }[];
  return list.map((a) => ({
    traitType: String(a.trait_type ?? ""),
    value: a.value === null || a.value === undefined ? "" : traitText(a.value),
    displayType: String(a.display_type ?? ""),
  }));
}

/**
 * A tokens-list row (both engines name its columns alike: address,
 * asset_id, collection_id, current_owner, attributes, its metadata
 * (shared/metadata.ts TOKEN_METADATA_COLUMNS), ask_key, move_block,
 * move_log, rank, its latest sale's s_* and cheapest listing's l_*
 * columns), with its page key in the order `sort`.
 */
export function toToken(r: Row, sort: TokenSort): TokenRow {
  const assetId = r.asset_id as string;
  const rank = Number(r.rank);
  const keys: Record<TokenSort, KeyValue[]> = {
    id: [Number(r.collection_id), assetId],
    price: [r.ask_key as string, assetId],
    rarity: [rank, assetId],
    recent: [Number(r.move_block), Number(r.move_log), assetId],
  };
  return {
    contractAddress: r.address as string,
    assetId,
    owner: r.current_owner as string,
    attributes: attributesOf(r.attributes),
    rarityRank: rank === UNRANKED ? 0 : rank,
    lastSale: saleOf(r),
    listing: listingOf(r),
    name: String(r.name ?? ""),
    description: String(r.description ?? ""),
    image: String(r.image ?? ""),
    animationUrl: String(r.animation_url ?? ""),
    externalUrl: String(r.external_url ?? ""),
    // SQLite's 0/1, PostgreSQL's boolean.
    isFlagged: r.is_flagged === 1 || r.is_flagged === true,
    flagReason: String(r.flag_reason ?? ""),
    key: keys[sort],
  };
}

/** A traits row: the value, its token count and its floor listing's columns (null without one). */
export function toTraitValue(r: Row): TraitValueRow {
  return {
    traitType: r.trait_type as string,
    value: r.value as string,
    tokens: Number(r.tokens),
    floor:
      r.marketplace === null
        ? undefined
        : {
            marketplace: r.marketplace as string,
            marketplaceId: r.marketplace_id as string,
            assetId: r.asset_id as string,
            price: r.price as string,
            createdAt: Number(r.created_at),
          },
  };
}

/** Decimal ids (or ask keys) in numeric order: by length, then text. */
const byNumber = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const lastId = (a: TokenRow, b: TokenRow) => byNumber(a.assetId, b.assetId);

/** Each order of the tokens list over its rows' keys (the stores' ORDER BY, for rows a join may have shuffled). */
export const TOKEN_ORDER: Readonly<Record<TokenSort, (a: TokenRow, b: TokenRow) => number>> = {
  id: (a, b) => (a.key[0] as number) - (b.key[0] as number) || lastId(a, b),
  price: (a, b) => byText(a.key[0] as string, b.key[0] as string) || lastId(a, b),
  rarity: (a, b) => (a.key[0] as number) - (b.key[0] as number) || lastId(a, b),
  recent: (a, b) => (b.key[0] as number) - (a.key[0] as number) || (b.key[1] as number) - (a.key[1] as number) || lastId(b, a),
};
