import { fromJsonString, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type AppraisalSchema,
  type AssetRaritySchema,
  type InfluencerSchema,
  type ListingSchema,
  ListingStatus,
  type SaleSchema,
  type SocialUserSchema,
  type TweetSchema,
  TweetSchema as TweetMessage,
} from "../../gen/marketdata/v1/resources_pb.js";
import type {
  AppraisalRow,
  InfluencerRow,
  ListingRow,
  RarityRow,
  SaleRow,
  SocialUserRow,
  TweetRow,
} from "../store/read-store.js";

// Store rows to protobuf message shapes. Every amount in this service is wei.

export const CURRENCY = "ETH";

export function toAppraisal(r: AppraisalRow): MessageInitShape<typeof AppraisalSchema> {
  return { ...r, currency: CURRENCY };
}

export function toRarity(r: RarityRow): MessageInitShape<typeof AssetRaritySchema> {
  return { ...r, rarityRank: BigInt(r.rarityRank) };
}

export function toSale(r: SaleRow): MessageInitShape<typeof SaleSchema> {
  return { ...r, timestamp: BigInt(r.timestamp), block: BigInt(r.block), currency: CURRENCY };
}

export function toListing(r: ListingRow): MessageInitShape<typeof ListingSchema> {
  return {
    ...r,
    createdAt: BigInt(r.createdAt),
    lastUpdatedAt: BigInt(r.lastUpdatedAt),
    currency: CURRENCY,
    status: ListingStatus[r.status],
  };
}

export function toSocialUser(u: SocialUserRow): MessageInitShape<typeof SocialUserSchema> {
  return {
    ...u,
    followersCount: BigInt(u.followersCount),
    statusesCount: BigInt(u.statusesCount),
    favouritesCount: BigInt(u.favouritesCount),
  };
}

export function toInfluencer(r: InfluencerRow): MessageInitShape<typeof InfluencerSchema> {
  return { user: toSocialUser(r.user), score: r.score };
}

export function toTweet(r: TweetRow): MessageInitShape<typeof TweetSchema> {
  const { retweetedStatusJson, ...rest } = r;
  return {
    ...rest,
    user: toSocialUser(r.user),
    retweetCount: BigInt(r.retweetCount),
    favoriteCount: BigInt(r.favoriteCount),
    interaction: BigInt(r.interaction),
    retweetedStatus:
      retweetedStatusJson === null ? undefined : fromJsonString(TweetMessage, retweetedStatusJson),
  };
}
