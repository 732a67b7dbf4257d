import { RecordConflictError } from "../ports/errors.js";

// The records a store refuses against what it holds, worded once for both engines.

/** A listing (or an offer) named under another collection than the one holding it: refused (decisions.md, "A listing stays with its collection"). */
export function listingMoved(marketplace: string, marketplaceId: string, heldBy: string, named: string, what = "listing"): RecordConflictError {
  return new RecordConflictError(
    `${what} ${marketplaceId} of ${marketplace} is a${what === "offer" ? "n" : ""} ${what} of collection ${heldBy}; a record naming it under ${named} is refused ` +
      `(a marketplace's ${what} stays with its collection: send it under that collection, or as a new ${what})`,
  );
}

/** A removal at or below its chain's finalized block: refused (docs/chains.md, "Finality"). */
export function finalizedRemoval(chain: string, block: number, finalized: number, what: string): RecordConflictError {
  return new RecordConflictError(
    `${what} is in block ${block} of ${chain}, at or below its finalized block ${finalized}: a final block is not taken back ` +
      "(an indexer that saw this block replaced has a bug, or its finality came too early)",
  );
}
