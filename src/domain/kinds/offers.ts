import type { Offer } from "../../../gen/marketdata/v1/resources_pb.js";
import type { OfferRow } from "../rows.js";
import { toOffer } from "../wire/messages.js";
import { declareKind, int, notAhead } from "./declaration.js";
import * as f from "./fields.js";
import { expiresAfterCreated, hashNamesBlock, OFF_CHAIN, onChainEvent, paymentCurrency, removalNamesBlock, statusOf, TEXT_LIMITS, traitValue, updatedAfterCreated } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord(
  {
    marketplaceId: f.marketplaceId,
    marketplace: f.marketplace,
    contractAddress: f.address,
    assetId: (v: unknown) => (v === "" ? "" : f.uint256(v)),
    traitType: f.text(TEXT_LIMITS.traitType),
    traitValue,
    maker: f.address,
    price: f.uint256,
    currency: f.paymentCurrency,
    createdAt: f.epochSeconds,
    lastUpdatedAt: f.epochSeconds,
    expiresAt: f.count,
    ...onChainEvent,
    status: f.listingStatus,
  },
  { assetId: "", traitType: "", traitValue: "", expiresAt: 0, ...OFF_CHAIN },
);

/** An offer (a bid): for one token, for any token of a trait, or for any token of the collection. */
export const offers = declareKind({
  name: "offers",
  shape,
  rules: (r, problems, ctx) => {
    updatedAfterCreated(r, problems);
    paymentCurrency(r, problems, true);
    hashNamesBlock(r, problems);
    removalNamesBlock(r, problems);
    expiresAfterCreated(r, problems);
    // A token offer names an asset, a trait offer a trait (type and value), a collection offer neither.
    if ((r.traitType === "") !== (r.traitValue === "")) {
      problems.push({ field: r.traitType === "" ? "traitType" : "traitValue", reason: "a trait offer names both traitType and traitValue" });
    }
    if (r.assetId !== "" && r.traitType !== "") problems.push({ field: "assetId", reason: "an offer is for one token (assetId) or for a trait (traitType, traitValue), not both" });
    notAhead("createdAt", r.createdAt, ctx, problems);
    notAhead("lastUpdatedAt", r.lastUpdatedAt, ctx, problems);
  },
  fromMessage: (r: Offer) => ({
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
    block: int(r.block),
    blockHash: r.blockHash,
    status: statusOf(r.status),
  }),
  naturalKey: ["marketplace", "marketplaceId"],
  moves: ["bids"],
  // Its status depends on the time (an offer past its expiry is expired).
  feed: { event: "offer", slot: 2, time: (r: OfferRow) => r.createdAt, toMessage: (r: OfferRow, now: number) => toOffer(r, now) },
});
