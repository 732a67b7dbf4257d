import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { TEXT_LIMITS } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord(
  { contractAddress: f.address, isSpam: f.bool, reason: f.text(TEXT_LIMITS.description) },
  { reason: "" },
);

/**
 * Whether a collection is spam, and why (docs/data.md, "Spam and flags"):
 * its own kind, so that a spam list's source need not resend the
 * collection's record, nor the collection's indexer its spam mark.
 */
export const spam = declareKind({
  name: "spam",
  shape,
  naturalKey: ["contractAddress"],
  moves: [],
});
