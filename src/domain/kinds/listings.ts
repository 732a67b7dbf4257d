import type { Listing } from "../../../gen/marketdata/v1/resources_pb.js";
import type { ListingRow } from "../rows.js";
import { toListing } from "../wire/messages.js";
import { declareKind, int, notAhead } from "./declaration.js";
import * as f from "./fields.js";
import { expiresAfterCreated, hashNamesBlock, OFF_CHAIN, onChainEvent, paymentCurrency, removalNamesBlock, statusOf, updatedAfterCreated } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
  marketplaceId: f.marketplaceId,
  marketplace: f.marketplace,
  contractAddress: f.address,
  assetId: f.uint256,
  createdAt: f.epochSeconds,
  lastUpdatedAt: f.epochSeconds,
  price: f.uint256,
  currency: f.paymentCurrency,
  maker: f.ownerAddress,
  expiresAt: f.count,
  quantity: f.quantity,
  ...onChainEvent,
  status: f.listingStatus,
}, { maker: "", expiresAt: 0, quantity: "1", ...OFF_CHAIN });

/** A listing: units of a token (one, for an ERC-721 token) offered for sale on a marketplace at a price each, its latest record replacing the earlier. */
export const listings = declareKind({
  name: "listings",
  shape,
  rules: (r, problems, ctx) => {
    updatedAfterCreated(r, problems);
    paymentCurrency(r, problems, true);
    hashNamesBlock(r, problems);
    removalNamesBlock(r, problems);
    expiresAfterCreated(r, problems);
    notAhead("createdAt", r.createdAt, ctx, problems);
    notAhead("lastUpdatedAt", r.lastUpdatedAt, ctx, problems);
  },
  fromMessage: (r: Listing) => ({
    marketplaceId: r.marketplaceId,
    marketplace: r.marketplace,
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    createdAt: int(r.createdAt),
    lastUpdatedAt: int(r.lastUpdatedAt),
    price: r.price,
    currency: r.currency,
    maker: r.maker,
    expiresAt: int(r.expiresAt),
    quantity: r.quantity,
    block: int(r.block),
    blockHash: r.blockHash,
    status: statusOf(r.status),
  }),
  naturalKey: ["marketplace", "marketplaceId"],
  moves: ["asks", "appraisal-inputs"],
  feed: { event: "listing", slot: 1, time: (r: ListingRow) => r.createdAt, toMessage: (r: ListingRow) => toListing(r) },
});
