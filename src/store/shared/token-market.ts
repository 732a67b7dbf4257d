import type { KeyValue, TokenRow, TokenSort, TraitValueRow } from "../ports.js";
import { type Row, toListing, toSale } from "./rows.js";

const saleOf = (r: Row | undefined) => (r === undefined ? undefined : { ...toSale(r), timestamp: Number(r.timestamp), block: Number(r.block) });
const listingOf = (r: Row | undefined) =>
  r === undefined ? undefined : { ...toListing(r), createdAt: Number(r.created_at), lastUpdatedAt: Number(r.last_updated_at) };

// What both engines keep of a token's market (sqlite/token-market.ts,
// postgres/token-market.ts): its cheapest active listing price as an ask
// key, the price prefixed with its two-digit length so that text order is
// numeric order, and NO_ASK (after every digit) for a token not listed.

export const NO_ASK = "~";

/** A price's ask key. */
export function askKey(price: string): string {
  return String(price.length).padStart(2, "0") + price;
}

/** The rarity order's value of a token without a rank: after every rank. */
export const UNRANKED = Number.MAX_SAFE_INTEGER;

/** A trait value as the lists show it: a string as written, a number or boolean as its JSON text. */
export function traitText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

/** A token record's attributes (SQLite's JSON text, PostgreSQL's parsed jsonb) as the tokens list shows them. */
export function attributesOf(attributes: unknown): TokenRow["attributes"] {
  const list = (typeof attributes === "string" ? JSON.parse(attributes) : attributes) as { trait_type?: unknown; value?: unknown }[];
  return list.map((a) => ({ traitType: String(a.trait_type ?? ""), value: a.value === null || a.value === undefined ? "" : traitText(a.value) }));
}

/** A JSON object column (SQLite's text, PostgreSQL's parsed json), or null. */
const objectOf = (v: unknown) => (v === null || v === undefined ? undefined : ((typeof v === "string" ? JSON.parse(v) : v) as Row));

/**
 * A tokens-list row (both engines name its columns alike: address,
 * asset_id, collection_id, current_owner, attributes, ask_key, move_block,
 * move_log, rank, and last_sale and listing as JSON objects of the sales
 * and listings lists' columns), with its page key in the order `sort`.
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
    lastSale: saleOf(objectOf(r.last_sale)),
    listing: listingOf(objectOf(r.listing)),
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
