import { compareDecimal } from "../formats.js";
import type { SaleRow } from "../rows.js";
import { toSale } from "../wire/messages.js";
import { declareKind, notAhead } from "./declaration.js";
import * as f from "./fields.js";
import { paymentCurrency } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
  hash: f.txHash,
  from: f.address,
  to: f.address,
  contractAddress: f.address,
  assetId: f.uint256,
  timestamp: f.epochSeconds,
  block: f.count,
  price: f.uint256,
  amountReceived: f.uint256,
  currency: f.paymentCurrency,
  marketplace: f.marketplace,
  marketplaceFee: f.fee,
  royaltyFee: f.fee,
  blockHash: f.blockHash,
  removed: f.bool,
  finality: f.answeredFinality,
  washFlags: f.answeredWashFlags,
  washScore: f.answeredWashScore,
  priceUsd: f.answeredPriceUsd,
  quantity: f.quantity,
}, { marketplaceFee: "", royaltyFee: "", blockHash: "", removed: false, finality: undefined, washFlags: undefined, washScore: undefined, priceUsd: undefined, quantity: "1" });

/** A sale: units of one token (one, for an ERC-721 token) changing hands at a price for them all, in one transaction. */
export const sales = declareKind({
  name: "sales",
  shape,
  rules: (r, problems, ctx) => {
    if (compareDecimal(r.amountReceived, r.price) > 0) {
      problems.push({ field: "amountReceived", reason: `must not exceed price (${r.price}), got ${r.amountReceived}` });
    }
    paymentCurrency(r, problems);
    for (const field of ["marketplaceFee", "royaltyFee"] as const) {
      if (r[field] !== "" && compareDecimal(r[field], r.price) > 0) problems.push({ field, reason: `must not exceed price (${r.price}), got ${r[field]}` });
    }
    if (problems.length === 0 && r.marketplaceFee !== "" && r.royaltyFee !== "" && BigInt(r.marketplaceFee) + BigInt(r.royaltyFee) > BigInt(r.price)) {
      problems.push({ field: "royaltyFee", reason: `marketplaceFee and royaltyFee together must not exceed price (${r.price}), got ${r.marketplaceFee} and ${r.royaltyFee}` });
    }
    notAhead("timestamp", r.timestamp, ctx, problems);
  },
  naturalKey: ["hash", "contractAddress", "assetId"],
  moves: ["sales-stats", "owners", "fillable-listings", "appraisal-inputs", "appraisal-history"],
  feed: { event: "sale", slot: 0, time: (r: SaleRow) => r.timestamp, toMessage: (r: SaleRow) => toSale(r) },
});
