import { compareDecimal } from "../formats.js";
import type { SaleRow } from "../rows.js";
import { toSale } from "../wire/messages.js";
import { declareKind, notAhead } from "./declaration.js";
import * as f from "./fields.js";

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
  currency: f.currency,
  marketplace: f.marketplace,
  blockHash: f.blockHash,
  removed: f.bool,
  finality: f.answeredFinality,
  washFlags: f.answeredWashFlags,
  washScore: f.answeredWashScore,
}, { blockHash: "", removed: false, finality: undefined, washFlags: undefined, washScore: undefined });

/** A sale: one token's change of hands at a price, in one transaction. */
export const sales = declareKind({
  name: "sales",
  shape,
  rules: (r, problems, ctx) => {
    if (compareDecimal(r.amountReceived, r.price) > 0) {
      problems.push({ field: "amountReceived", reason: `must not exceed price (${r.price}), got ${r.amountReceived}` });
    }
    notAhead("timestamp", r.timestamp, ctx, problems);
  },
  naturalKey: ["hash", "contractAddress", "assetId"],
  moves: ["sales-stats", "owners", "fillable-listings", "appraisal-inputs", "appraisal-history"],
  feed: { event: "sale", slot: 0, time: (r: SaleRow) => r.timestamp, toMessage: (r: SaleRow) => toSale(r) },
});
