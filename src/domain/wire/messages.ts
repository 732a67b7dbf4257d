import { fromJsonString } from "@bufbuild/protobuf";
import {
  type Appraisal,
  type AssetRarity,
  type FloorListing,
  type Influencer,
  type Listing,
  ListingStatus,
  type Offer,
  type Sale,
  type SocialUser,
  type Token,
  type TraitValue,
  type Transfer,
  type Tweet,
  TweetSchema,
} from "../../../gen/marketdata/v1/resources_pb.js";
import type {
  AppraisalRow,
  FloorListingRow,
  InfluencerRow,
  ListingRow,
  OfferRow,
  RarityRow,
  SaleRow,
  SocialUserRow,
  TokenRow,
  TraitValueRow,
  TransferRow,
  TweetRow,
} from "../rows.js";

// Rows to protobuf messages, every one (the one home of these mappers): the
// service answers with them, and for the lists whose answers the store keeps
// ready per row (fragments.ts) the store writes each row's wire forms from
// them too, so both say the same.
// Each is built whole, with its $typeName and every field, so that create()
// takes it as it is instead of copying it field by field by reflection
// (a tenth of an uncached response's CPU in a profile). Every amount is wei.

import { washNames, washScore } from "../wash.js";

/** The currency of every figure in wei (volumes, floors, values), and of a record that names none. */
export const CURRENCY = "ETH";

export function toSale({ washMask = 0, ...r }: SaleRow): Sale {
  return { $typeName: "marketdata.v1.Sale", ...r, timestamp: BigInt(r.timestamp), block: BigInt(r.block), currency: r.currency ?? CURRENCY, blockHash: r.blockHash ?? "", finality: r.finality ?? "pending",
    washFlags: washNames(washMask), washScore: washScore(washMask), marketplaceFee: r.marketplaceFee ?? "", royaltyFee: r.royaltyFee ?? "",
    priceUsd: r.priceUsd ?? "", quantity: r.quantity ?? "1" };
}

export function toListing(r: ListingRow): Listing {
  return {
    $typeName: "marketdata.v1.Listing",
    ...r,
    createdAt: BigInt(r.createdAt),
    lastUpdatedAt: BigInt(r.lastUpdatedAt),
    currency: r.currency ?? CURRENCY,
    maker: r.maker ?? "",
    expiresAt: BigInt(r.expiresAt ?? 0),
    quantity: r.quantity ?? "1",
    block: BigInt(r.block ?? 0),
    blockHash: r.blockHash ?? "",
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

export function toAppraisal(r: AppraisalRow): Appraisal {
  return { $typeName: "marketdata.v1.Appraisal", ...r, currency: CURRENCY };
}

export function toRarity(r: RarityRow): AssetRarity {
  return { $typeName: "marketdata.v1.AssetRarity", ...r, rarityRank: BigInt(r.rarityRank) };
}

export function toTransfer(r: TransferRow): Transfer {
  return { $typeName: "marketdata.v1.Transfer", ...r, logIndex: BigInt(r.logIndex), timestamp: BigInt(r.timestamp), block: BigInt(r.block), blockHash: r.blockHash ?? "",
    finality: r.finality ?? "pending", amount: r.amount ?? "1" };
}

/**
 * An offer as answered at second `now`: a standing (CREATED) offer past its
 * expiresAt is EXPIRED from then (decisions.md, "Offers").
 */
export function toOffer(r: OfferRow, now: number): Offer {
  const lapsed = r.status === "CREATED" && r.expiresAt !== 0 && r.expiresAt <= now;
  return {
    $typeName: "marketdata.v1.Offer",
    ...r,
    createdAt: BigInt(r.createdAt),
    lastUpdatedAt: BigInt(lapsed ? Math.max(r.lastUpdatedAt, r.expiresAt) : r.lastUpdatedAt),
    expiresAt: BigInt(r.expiresAt),
    currency: r.currency ?? CURRENCY,
    block: BigInt(r.block ?? 0),
    blockHash: r.blockHash ?? "",
    status: ListingStatus[lapsed ? "EXPIRED" : r.status],
  };
}

export function toFloorListing(r: FloorListingRow): FloorListing {
  return {
    $typeName: "marketdata.v1.FloorListing",
    marketplace: r.marketplace,
    marketplaceId: r.marketplaceId,
    assetId: r.assetId,
    price: r.price,
    currency: CURRENCY,
    createdAt: BigInt(r.createdAt),
  };
}

export function toToken(r: TokenRow): Token {
  return {
    $typeName: "marketdata.v1.Token",
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    owner: r.owner,
    attributes: r.attributes.map((a) => ({ $typeName: "marketdata.v1.TokenTrait", traitType: a.traitType, value: a.value, displayType: a.displayType })),
    rarityRank: BigInt(r.rarityRank),
    lastSale: r.lastSale && toSale(r.lastSale),
    listing: r.listing && toListing(r.listing),
    name: r.name,
    description: r.description,
    image: r.image,
    animationUrl: r.animationUrl,
    externalUrl: r.externalUrl,
    isFlagged: r.isFlagged,
    flagReason: r.flagReason,
  };
}

export function toTraitValue(r: TraitValueRow, topOffer: OfferRow | undefined, now: number): TraitValue {
  return {
    $typeName: "marketdata.v1.TraitValue",
    traitType: r.traitType,
    value: r.value,
    tokenCount: BigInt(r.tokens),
    floor: r.floor && toFloorListing(r.floor),
    topOffer: topOffer && toOffer(topOffer, now),
  };
}
