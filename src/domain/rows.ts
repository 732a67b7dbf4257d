// The records the service reads and writes, as the store hands them over:
// the domain's own types, shared by readers, writers, importers and derive
// (no writer imports them from the read side). Amounts and asset ids are
// canonical decimal strings; times are Unix seconds.

/** Every listing status, in the contract's order (one list for the whole service). */
export const LISTING_STATUSES = ["CREATED", "FULFILLED", "CANCELLED", "EXPIRED"] as const;
export type ListingStatusName = (typeof LISTING_STATUSES)[number];

export interface AppraisalRow {
  contractAddress: string;
  assetId: string;
  fairMarketValue: string;
  confidence: string;
}

export interface RarityRow {
  contractAddress: string;
  assetId: string;
  currentOwner: string;
  rarityScore: number;
  statisticalRarity: number;
  rarityRank: number;
}

/** A record's finality (docs/chains.md, "Finality"): "final" at or below its chain's finalized block. */
export type Finality = "final" | "pending";

export interface SaleRow {
  hash: string;
  from: string;
  to: string;
  contractAddress: string;
  assetId: string;
  timestamp: number;
  block: number;
  price: string;
  amountReceived: string;
  /** Its payment token's symbol (domain/currencies.ts); absent: ETH. */
  currency?: string;
  marketplace: string;
  /** The marketplace's fee and the creator's royalty, in the currency's smallest unit; "" or absent when its indexer sent none. */
  marketplaceFee?: string;
  royaltyFee?: string;
  /** US dollars at its time, to the cent (docs/money.md), as read; "" or absent when no price point is in force. */
  priceUsd?: string;
  /** The usd of the price point in force at its time, as read (null: none); what its other amounts are converted at (money.ts saleInUsd). */
  usdPoint?: string | null;
  /** Units sold (price is for them all), a canonical decimal string; absent: 1. */
  quantity?: string;
  /** Its block's hash (lower-case hex); "" or absent when its indexer sent none. */
  blockHash?: string;
  /** As read (absent on a record being written: its kept JSON holds no finality). */
  finality?: Finality;
  /** Its wash-trade rules (domain/wash.ts), as read; absent on a record being written (the store evaluates them). */
  washMask?: number;
}

/** A token moving between addresses (a mint from the zero address, a burn to it). */
export interface TransferRow {
  hash: string;
  logIndex: number;
  from: string;
  to: string;
  contractAddress: string;
  assetId: string;
  /** Units moved, a canonical decimal string; absent: 1. */
  amount?: string;
  timestamp: number;
  block: number;
  /** Its block's hash (lower-case hex); "" or absent when its indexer sent none. */
  blockHash?: string;
  /** As read. */
  finality?: Finality;
}

/** An offer (bid) as the API answers it: a token's (assetId), a trait's (traitType, traitValue) or the collection's (neither). */
export interface OfferRow {
  marketplaceId: string;
  marketplace: string;
  contractAddress: string;
  assetId: string;
  traitType: string;
  traitValue: string;
  maker: string;
  price: string;
  /** Its payment token's symbol (domain/currencies.ts); absent: ETH. */
  currency?: string;
  createdAt: number;
  lastUpdatedAt: number;
  /** 0: no expiry. */
  expiresAt: number;
  /** The block of its on-chain event, and its hash: 0 and "" (or absent) for an off-chain order. */
  block?: number;
  blockHash?: string;
  status: ListingStatusName;
}

export interface ListingRow {
  marketplaceId: string;
  marketplace: string;
  contractAddress: string;
  assetId: string;
  createdAt: number;
  lastUpdatedAt: number;
  price: string;
  /** As OfferRow's. */
  currency?: string;
  /** The seller; "" (or absent) when its indexer sent none. */
  maker?: string;
  /** 0 (or absent): no expiry. */
  expiresAt?: number;
  /** Units offered (price is each one's), a canonical decimal string; absent: 1. */
  quantity?: string;
  /** As OfferRow's. */
  block?: number;
  blockHash?: string;
  status: ListingStatusName;
}

export interface SocialUserRow {
  id: string;
  screenName: string;
  profileImageUrl: string;
  description: string;
  name: string;
  location: string;
  followersCount: number;
  verified: boolean;
  statusesCount: number;
  favouritesCount: number;
  protected: boolean;
}

export interface InfluencerRow {
  user: SocialUserRow;
  score: number;
}

export interface TweetRow {
  id: string;
  user: SocialUserRow;
  source: string;
  text: string;
  retweetCount: number;
  favoriteCount: number;
  possiblySensitive: boolean;
  lang: string;
  /** Canonical protobuf JSON of the retweeted post, or null. */
  retweetedStatusJson: string | null;
  createdAt: string;
  date: string;
  originalId: string;
  originalText: string;
  originalTweet: boolean;
  interaction: number;
}

export interface ScoreRow {
  name: string;
  contractAddress: string;
  hype: number;
  gains: number;
  community: number;
  total: number;
}

export interface MarketplaceTotals {
  marketplace: string;
  totalNumSales: number;
  totalVolume: string;
}

export interface SalesSummary {
  totalNumSales: number;
  totalVolume: string;
  /** By total volume descending, then marketplace. */
  groups: MarketplaceTotals[];
}

/**
 * A summary from per-marketplace totals: empty groups dropped, the rest in
 * decisions.md's order (volume descending, then marketplace), exact sums.
 */
export function summarize(totals: Iterable<[string, { n: number; volume: bigint }]>): SalesSummary {
  const groups = [...totals].filter(([, t]) => t.n > 0);
  groups.sort(([ma, a], [mb, b]) => (a.volume === b.volume ? (ma < mb ? -1 : 1) : a.volume > b.volume ? -1 : 1));
  let n = 0;
  let volume = 0n;
  for (const [, t] of groups) {
    n += t.n;
    volume += t.volume;
  }
  return {
    totalNumSales: n,
    totalVolume: volume.toString(),
    groups: groups.map(([marketplace, t]) => ({ marketplace, totalNumSales: t.n, totalVolume: t.volume.toString() })),
  };
}

// The rows of the market reads kept at write time (store/ports/market.ts).

export type KeyValue = number | string;

/** An active listing at a floor. */
export interface FloorListingRow {
  marketplace: string;
  marketplaceId: string;
  assetId: string;
  price: string;
  createdAt: number;
}

export interface HolderRow {
  address: string;
  tokens: number;
}

/** The wallets holding from `min` to `max` tokens (max 0: no bound) of a collection, and the tokens they hold. */
export interface HolderBucketRow {
  min: number;
  max: number;
  wallets: number;
  tokens: number;
}

/** The holder distribution's buckets (docs/endpoints.md, "Holders"): [min, max] tokens a wallet holds, max 0 for no bound. */
export const HOLDER_BUCKETS: readonly (readonly [number, number])[] = [[1, 1], [2, 5], [6, 20], [21, 0]];

export interface TokenRow {
  contractAddress: string;
  assetId: string;
  /** "" when unknown. */
  owner: string;
  /** The token record's attributes, values as text, display types "" where it gave none. */
  attributes: { traitType: string; value: string; displayType: string }[];
  /** Its record's OpenSea metadata, "" where untold (docs/data.md, "Metadata"). */
  name: string;
  description: string;
  image: string;
  animationUrl: string;
  externalUrl: string;
  /** Flagged (docs/data.md, "Spam and flags"), and the reason its flag record gave. */
  isFlagged: boolean;
  flagReason: string;
  /** 0: no rarity row. */
  rarityRank: number;
  /** Its latest sale (sales list order), if any. */
  lastSale: SaleRow | undefined;
  /** Its cheapest active listing (ties: marketplace, then listing id), if any. */
  listing: ListingRow | undefined;
  /** The page key of the row in the order asked. */
  key: KeyValue[];
}

/** A token whose record was written, as the live feeds carry it: its tokens-list row, and when its record was written (epoch seconds). */
export interface TokenEventRow extends TokenRow {
  fedAt: number;
}

export interface TraitValueRow {
  traitType: string;
  value: string;
  tokens: number;
  /** The cheapest active listing among the value's tokens, if any. */
  floor: FloorListingRow | undefined;
}

/** One owner of a token and the units it holds. */
export interface TokenOwnerRow {
  /** Lower-case address. */
  address: string;
  balance: number;
}

/** A collection's kept summary, with its counts. */
export interface CollectionSummaryRow {
  collectionId: number;
  contractAddress: string;
  chain: string;
  name: string;
  totalTokens: number;
  numHolders: number;
  /** The lowest active listing (ties: marketplace, then its id), if any. */
  floor: FloorListingRow | undefined;
  /** Wei, decimal: the sales of the 1, 7 and 30 days ending with the windows (CollectionsPage.windowsEnd). */
  volume1d: string;
  volume7d: string;
  volume30d: string;
  /** US dollars to the cent of the same sales, each at its price point in force (those with none add nothing: docs/money.md). */
  volumeUsd1d: string;
  volumeUsd7d: string;
  volumeUsd30d: string;
  sales1d: number;
  sales7d: number;
  sales30d: number;
  /** Its collection record's metadata, "" where untold (docs/data.md, "Metadata"). */
  description: string;
  image: string;
  externalUrl: string;
  twitter: string;
  discord: string;
  /** "ERC721" or "ERC1155": whether its token and holder counts are of tokens or of units held. */
  tokenStandard: string;
  /** Marked spam (docs/data.md, "Spam and flags"), and the reason its spam record gave. */
  isSpam: boolean;
  spamReason: string;
  /** Wei: the floor's price times the tokens; "" without a floor. */
  marketCap: string;
  /** Wei, decimal: every sale's volume (of clean sales, or every sale with includeWash). */
  volumeAll: string;
  key: KeyValue[];
}
