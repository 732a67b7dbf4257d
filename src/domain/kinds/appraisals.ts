import { declareKind } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
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
  naturalKey: ["contractAddress", "assetId"],
  moves: [],
});
