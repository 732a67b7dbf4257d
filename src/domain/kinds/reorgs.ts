import { declareKind } from "./declaration.js";
import * as f from "./fields.js";

/** Block hashes one reorganisation names at most. */
export const MAX_REORG_BLOCKS = 1000;

/** One block hash of a reorganisation's list (none may be ""). */
const namedBlock = (v: unknown, problems: f.Problem[], path = ""): string | undefined => {
  try {
    if (v === "") throw new f.FieldError('must be 0x followed by 64 hex characters, got ""');
    return f.blockHash(v);
  } catch (err) {
    if (!(err instanceof f.FieldError)) throw err;
    problems.push({ field: path, reason: err.message });
    return undefined;
  }
};

/** A record's fields and their checks. */
const shape = f.collectionRecord({ fromBlock: f.count, blockHashes: f.arrayOf(namedBlock, MAX_REORG_BLOCKS) }, { blockHashes: [] });

/**
 * A reorganisation (docs/chains.md): the chain's blocks from fromBlock on
 * (those of blockHashes, when it names any) are no longer the chain's;
 * every sale and transfer in them is taken back, and every answer made from
 * them with it. No collection: it reaches every collection of its chain.
 */
export const reorgs = declareKind({
  name: "reorgs",
  shape,
  naturalKey: ["chain", "fromBlock"],
  moves: ["sales-stats", "owners", "fillable-listings", "appraisal-inputs", "appraisal-history"],
});
