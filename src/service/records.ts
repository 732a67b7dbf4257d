import {
  type Appraisal,
  type AssetRarity,
  type FloorListing,
  type Offer,
  ListingStatus,
  type Token,
  type TraitValue,
  type Transfer,
} from "../../gen/marketdata/v1/resources_pb.js";
import { CURRENCY, toListing, toSale } from "../domain/wire/messages.js";
import type { FloorListingRow, TokenRow, TraitValueRow } from "../store/ports.js";
import type {
  AppraisalRow,
  ListingRow,
  OfferRow,
  RarityRow,
  SaleRow,
  TransferRow,
} from "../domain/records.js";

// Store rows to protobuf messages. Every amount in this service is wei.
// Each is built whole, with its $typeName and every field, so that create()
// takes it as it is instead of copying it field by field by reflection
// (a tenth of an uncached response's CPU in a profile). The lists' own
// records (sales, listings, social) are made in domain/wire/messages.ts.

export { CURRENCY, toInfluencer, toListing, toSale, toTweet } from "../domain/wire/messages.js";

export function toAppraisal(r: AppraisalRow): Appraisal {
  return { $typeName: "marketdata.v1.Appraisal", ...r, currency: CURRENCY };
}

export function toRarity(r: RarityRow): AssetRarity {
  return { $typeName: "marketdata.v1.AssetRarity", ...r, rarityRank: BigInt(r.rarityRank) };
}


export function toTransfer(r: TransferRow): Transfer {
  return { $typeName: "marketdata.v1.Transfer", ...r, logIndex: BigInt(r.logIndex), timestamp: BigInt(r.timestamp), block: BigInt(r.block) };
}


/** The clock, in epoch seconds: an offer stands until its expiresAt. */
export const nowSeconds = () => Math.floor(Date.now() / 1000);

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
    currency: CURRENCY,
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
    attributes: r.attributes.map((a) => ({ $typeName: "marketdata.v1.TokenTrait", traitType: a.traitType, value: a.value })),
    rarityRank: BigInt(r.rarityRank),
    lastSale: r.lastSale && toSale(r.lastSale),
    listing: r.listing && toListing(r.listing),
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
