import type { AppraisalRow, Finality, InfluencerRow, ListingRow, ListingStatusName, OfferRow, RarityRow, SaleRow, ScoreRow, SocialUserRow, TransferRow, TweetRow } from "../../domain/rows.js";
import { CURRENCY } from "../../domain/wire/messages.js";
import { usdValue } from "../../domain/money.js";

// Result rows to domain records, for both engines: their queries name the
// columns alike (SQLite's 0/1 booleans and PostgreSQL's booleans, SQLite's
// JSON text and PostgreSQL's parsed jsonb, both taken), and the page keys of
// the keyset lists.

/** A result row, column by name. */
export type Row = Record<string, unknown>;

export function toAppraisal(r: Row): AppraisalRow {
  return {
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    fairMarketValue: r.fair_market_value as string,
    confidence: r.confidence as string,
  };
}

export function toRarity(r: Row): RarityRow {
  return {
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    currentOwner: r.current_owner as string,
    rarityScore: r.rarity_score as number,
    statisticalRarity: r.statistical_rarity as number,
    rarityRank: r.rarity_rank as number,
  };
}

export function toScore(r: Row): ScoreRow {
  return {
    name: r.name as string,
    contractAddress: r.address as string,
    hype: r.hype as number,
    gains: r.gains as number,
    community: r.community as number,
    total: r.total as number,
  };
}

export function listingKey(r: ListingRow): [number, string, string] {
  return [r.createdAt, r.marketplace, r.marketplaceId];
}

export function toListing(r: Row): ListingRow {
  return {
    marketplaceId: r.marketplace_id as string,
    marketplace: r.marketplace as string,
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    createdAt: r.created_at as number,
    lastUpdatedAt: r.last_updated_at as number,
    price: r.price as string,
    ...orderCurrency(r),
    ...(r.maker === undefined ? {} : { maker: r.maker as string, expiresAt: Number(r.expires_at) }),
    ...(r.quantity === undefined ? {} : { quantity: String(r.quantity) }),
    ...orderBlock(r),
    status: r.status as ListingStatusName,
  };
}

/** An order's payment token (column currency), when its query selects it. */
function orderCurrency(r: Row): { currency?: string } {
  return r.currency === undefined ? {} : { currency: r.currency as string };
}

/** A listing's or an offer's on-chain block and its hash (columns block, block_hash), when its query selects them. */
function orderBlock(r: Row): { block?: number; blockHash?: string } {
  return r.block === undefined ? {} : { block: Number(r.block), blockHash: hexOrNone(r.block_hash) };
}

export function offerKey(r: OfferRow): [number, string, string] {
  return [r.createdAt, r.marketplace, r.marketplaceId];
}

export function toOffer(r: Row): OfferRow {
  return {
    marketplaceId: r.marketplace_id as string,
    marketplace: r.marketplace as string,
    contractAddress: r.address as string,
    assetId: (r.asset_id as string | null) ?? "",
    traitType: r.trait_type as string,
    traitValue: r.trait_value as string,
    maker: r.maker as string,
    price: r.price as string,
    ...orderCurrency(r),
    createdAt: Number(r.created_at),
    lastUpdatedAt: Number(r.last_updated_at),
    expiresAt: Number(r.expires_at),
    ...orderBlock(r),
    status: r.status as ListingStatusName,
  };
}

/** The page key of a sale: its position in the list's order. */
export function transferKey(r: TransferRow): [number, number, number, string, string] {
  return [r.timestamp, r.block, r.logIndex, r.hash, r.assetId];
}

/** A hash or address column: SQLite's bytes, PostgreSQL's hex text. */
export const hexOf = (v: unknown): string => (typeof v === "string" ? v : `0x${(v as Buffer).toString("hex")}`);

/** A block hash column, as hexOf, "" for none (NULL). */
export function hexOrNone(v: unknown): string {
  return v === null || v === undefined ? "" : hexOf(v);
}

/** A transfer row (hash, sender, recipient as hex). */
export function toTransfer(r: Row): TransferRow {
  return {
    hash: r.hash as string,
    logIndex: Number(r.log_index),
    from: r.sender as string,
    to: r.recipient as string,
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    amount: String(r.amount),
    timestamp: Number(r.timestamp),
    block: Number(r.block),
    blockHash: hexOrNone(r.block_hash),
    finality: r.finality as Finality | undefined,
  };
}

export function saleKey(r: SaleRow): [number, number, string, string] {
  return [r.timestamp, r.block, r.hash, r.assetId];
}

export function toSale(r: Row): SaleRow {
  return {
    hash: r.hash as string,
    from: r.seller as string,
    to: r.buyer as string,
    contractAddress: r.address as string,
    assetId: r.asset_id as string,
    timestamp: r.timestamp as number,
    block: r.block as number,
    price: r.price as string,
    amountReceived: r.amount_received as string,
    currency: (r.currency as string | undefined) ?? CURRENCY,
    marketplace: r.marketplace as string,
    marketplaceFee: (r.marketplace_fee as string | undefined) ?? "",
    royaltyFee: (r.royalty_fee as string | undefined) ?? "",
    quantity: String(r.quantity ?? 1),
    priceUsd: usdValue(String(r.price), (r.currency as string | undefined) ?? CURRENCY, r.usd_point as string | null | undefined),
    usdPoint: (r.usd_point as string | null | undefined) ?? null,
    blockHash: hexOrNone(r.block_hash),
    finality: r.finality as Finality | undefined,
    washMask: Number(r.wash_flags ?? 0),
  };
}

/** The user columns of influencers and tweets (alias u), named as toUser reads them. */
export const USER_COLUMNS = `u.id AS "userId", u.screen_name, u.profile_image_url, u.description, u.name AS "userName",
  u.location, u.followers_count, u.verified, u.statuses_count, u.favourites_count, u.protected`;

/** SQLite's 0/1 and PostgreSQL's booleans alike. */
const bool = (v: unknown) => v === 1 || v === true;

export function toInfluencer(r: Row): InfluencerRow {
  return { user: toUser(r), score: r.score as number };
}

/** A retweeted post: SQLite keeps its JSON text, PostgreSQL its jsonb (parsed by the driver). */
function jsonText(v: unknown): string | null {
  return v === null || v === undefined ? null : typeof v === "string" ? v : JSON.stringify(v);
}

export function toTweet(r: Row): TweetRow {
  return {
    id: r.id as string,
    user: toUser(r),
    source: r.source as string,
    text: r.text as string,
    retweetCount: r.retweet_count as number,
    favoriteCount: r.favorite_count as number,
    possiblySensitive: bool(r.possibly_sensitive),
    lang: r.lang as string,
    retweetedStatusJson: jsonText(r.retweeted_status),
    createdAt: r.created_at as string,
    date: r.date as string,
    originalId: r.original_id as string,
    originalText: r.original_text as string,
    originalTweet: bool(r.original_tweet),
    interaction: r.interaction as number,
  };
}

/** A social user from the user columns of influencers and tweets (userId, userName and the rest by their column names). */
export function toUser(r: Row): SocialUserRow {
  return {
    id: r.userId as string,
    screenName: r.screen_name as string,
    profileImageUrl: r.profile_image_url as string,
    description: r.description as string,
    name: r.userName as string,
    location: r.location as string,
    followersCount: r.followers_count as number,
    verified: bool(r.verified),
    statusesCount: r.statuses_count as number,
    favouritesCount: r.favourites_count as number,
    protected: bool(r.protected),
  };
}
