import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { TEXT_LIMITS } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord(
  { contractAddress: f.address, assetId: f.uint256, isFlagged: f.bool, reason: f.text(TEXT_LIMITS.description) },
  { reason: "" },
);

/**
 * Whether a token is flagged (stolen, suspicious), and why (docs/data.md,
 * "Spam and flags"): its own kind, as spam is, so that a flag's source need
 * not resend the token's record. A flagged token's listings are no floor.
 */
export const flags = declareKind({
  name: "flags",
  shape,
  naturalKey: ["contractAddress", "assetId"],
  moves: ["asks"],
});
