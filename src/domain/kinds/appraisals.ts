import type { Appraisal } from "../../../gen/marketdata/v1/resources_pb.js";
import { declareKind } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.object({
  contractAddress: f.address,
  assetId: f.uint256,
  fairMarketValue: f.uint256,
  confidence: f.confidence,
  currency: f.currency,
});

/** A token's fair market value (imported, or made by derive). */
export const appraisals = declareKind({
  name: "appraisals",
  shape,
  fromMessage: (r: Appraisal) => ({
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    fairMarketValue: r.fairMarketValue,
    confidence: r.confidence,
    currency: r.currency,
  }),
  naturalKey: ["contractAddress", "assetId"],
  moves: [],
});
