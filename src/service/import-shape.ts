import type { Kind } from "../domain/kinds.js";
import type { CollectionRecord, InfluencerRecord, TokenAttribute, TokenRecord, TweetRecord } from "../../gen/marketdata/v1/ingest_service_pb.js";
import {
  type Appraisal,
  type AssetRarity,
  type CollectionScore,
  type Listing,
  ListingStatus,
  type Offer,
  type Sale,
  type SocialUser,
  type Transfer,
  type Tweet,
} from "../../gen/marketdata/v1/resources_pb.js";

// The ingest RPCs' records as the JSON records `marketdata import KIND`
// reads (decisions.md's importable kinds), so that one checker
// (ingest/kinds.ts) rules on both: a record the API takes is exactly a line
// the import takes, and the other way round.

/** An int64 as a JSON number when it is one exactly; otherwise its digits, which the checker refuses by name. */
function int(v: bigint): number | string {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v.toString();
}

/** A listing status as the API writes it ("CREATED"); unspecified or unknown stays a number, refused by the checker. */
function status(s: ListingStatus): string | number {
  return s === ListingStatus.UNSPECIFIED ? s : (ListingStatus[s] ?? s);
}

const collection = (r: CollectionRecord) => ({ contractAddress: r.contractAddress, name: r.name });

const attribute = (a: TokenAttribute) => ({
  trait_type: a.traitType,
  // A missing value is refused by the checker (null is not a string, number or boolean).
  value: a.value.case === undefined ? null : a.value.value,
  display_type: a.displayType,
});

const token = (r: TokenRecord) => ({
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  currentOwner: r.currentOwner,
  attributes: r.attributes.map(attribute),
});

const sale = (r: Sale) => ({
  hash: r.hash,
  from: r.from,
  to: r.to,
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  timestamp: int(r.timestamp),
  block: int(r.block),
  price: r.price,
  amountReceived: r.amountReceived,
  currency: r.currency,
  marketplace: r.marketplace,
});

const listing = (r: Listing) => ({
  marketplaceId: r.marketplaceId,
  marketplace: r.marketplace,
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  createdAt: int(r.createdAt),
  lastUpdatedAt: int(r.lastUpdatedAt),
  price: r.price,
  currency: r.currency,
  status: status(r.status),
});

const offer = (r: Offer) => ({
  marketplaceId: r.marketplaceId,
  marketplace: r.marketplace,
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  traitType: r.traitType,
  traitValue: r.traitValue,
  maker: r.maker,
  price: r.price,
  currency: r.currency,
  createdAt: int(r.createdAt),
  lastUpdatedAt: int(r.lastUpdatedAt),
  expiresAt: int(r.expiresAt),
  status: status(r.status),
});

const transfer = (r: Transfer) => ({
  hash: r.hash,
  logIndex: int(r.logIndex),
  from: r.from,
  to: r.to,
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  timestamp: int(r.timestamp),
  block: int(r.block),
});

const appraisal = (r: Appraisal) => ({
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  fairMarketValue: r.fairMarketValue,
  confidence: r.confidence,
  currency: r.currency,
});

const rarity = (r: AssetRarity) => ({
  contractAddress: r.contractAddress,
  assetId: r.assetId,
  currentOwner: r.currentOwner,
  rarityScore: r.rarityScore,
  statisticalRarity: r.statisticalRarity,
  rarityRank: int(r.rarityRank),
});

const user = (u: SocialUser | undefined) =>
  u === undefined
    ? null
    : {
        id: u.id,
        screenName: u.screenName,
        profileImageUrl: u.profileImageUrl,
        description: u.description,
        name: u.name,
        location: u.location,
        followersCount: int(u.followersCount),
        verified: u.verified,
        statusesCount: int(u.statusesCount),
        favouritesCount: int(u.favouritesCount),
        protected: u.protected,
      };

const influencer = (r: InfluencerRecord) => ({ contractAddress: r.contractAddress, user: user(r.user), score: r.score });

function tweetFields(t: Tweet): Record<string, unknown> {
  return {
    id: t.id,
    user: user(t.user),
    source: t.source,
    text: t.text,
    retweetCount: int(t.retweetCount),
    favoriteCount: int(t.favoriteCount),
    possiblySensitive: t.possiblySensitive,
    lang: t.lang,
    retweetedStatus: t.retweetedStatus === undefined ? null : tweetFields(t.retweetedStatus),
    createdAt: t.createdAt,
    date: t.date,
    originalId: t.originalId,
    originalText: t.originalText,
    originalTweet: t.originalTweet,
    interaction: int(t.interaction),
  };
}

/** A TweetRecord without its tweet is refused by the checker, field by field (every field missing). */
const tweet = (r: TweetRecord) => ({ contractAddress: r.contractAddress, ...(r.tweet === undefined ? {} : tweetFields(r.tweet)) });

const score = (r: CollectionScore) => ({
  name: r.name,
  contractAddress: r.contractAddress,
  hype: r.hype,
  gains: r.gains,
  community: r.community,
  total: r.total,
});

/** Each kind's RPC record as its import line's JSON value. */
export const IMPORT_SHAPE: { [K in Kind]: (record: never) => Record<string, unknown> } = {
  collections: collection,
  tokens: token,
  sales: sale,
  listings: listing,
  transfers: transfer,
  offers: offer,
  appraisals: appraisal,
  rarity,
  influencers: influencer,
  tweets: tweet,
  scores: score,
};
