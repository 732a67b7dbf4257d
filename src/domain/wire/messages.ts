import { fromJsonString } from "@bufbuild/protobuf";
import {
  type Influencer,
  type Listing,
  ListingStatus,
  type Sale,
  type SocialUser,
  type Tweet,
  TweetSchema,
} from "../../../gen/marketdata/v1/resources_pb.js";
import type { InfluencerRow, ListingRow, SaleRow, SocialUserRow, TweetRow } from "../records.js";

// Rows to the protobuf messages of the lists whose answers the store keeps
// ready per row (fragments.ts): the service answers with these messages,
// and the store writes each row's wire forms from them, so both say the same.
// Each is built whole, with its $typeName and every field, so that create()
// takes it as it is instead of copying it field by field by reflection
// (a tenth of an uncached response's CPU in a profile). Every amount is wei.

export const CURRENCY = "ETH";

export function toSale(r: SaleRow): Sale {
  return { $typeName: "marketdata.v1.Sale", ...r, timestamp: BigInt(r.timestamp), block: BigInt(r.block), currency: CURRENCY };
}

export function toListing(r: ListingRow): Listing {
  return {
    $typeName: "marketdata.v1.Listing",
    ...r,
    createdAt: BigInt(r.createdAt),
    lastUpdatedAt: BigInt(r.lastUpdatedAt),
    currency: CURRENCY,
    status: ListingStatus[r.status],
  };
}

export function toSocialUser(u: SocialUserRow): SocialUser {
  return {
    $typeName: "marketdata.v1.SocialUser",
    ...u,
    followersCount: BigInt(u.followersCount),
    statusesCount: BigInt(u.statusesCount),
    favouritesCount: BigInt(u.favouritesCount),
  };
}

export function toInfluencer(r: InfluencerRow): Influencer {
  return { $typeName: "marketdata.v1.Influencer", user: toSocialUser(r.user), score: r.score };
}

export function toTweet(r: TweetRow): Tweet {
  const { retweetedStatusJson, ...rest } = r;
  return {
    $typeName: "marketdata.v1.Tweet",
    ...rest,
    user: toSocialUser(r.user),
    retweetCount: BigInt(r.retweetCount),
    favoriteCount: BigInt(r.favoriteCount),
    interaction: BigInt(r.interaction),
    retweetedStatus:
      retweetedStatusJson === null ? undefined : fromJsonString(TweetSchema, retweetedStatusJson),
  };
}
