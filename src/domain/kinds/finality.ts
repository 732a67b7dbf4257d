import { declareKind } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({ block: f.count });

/**
 * A chain's finalized block (docs/chains.md): its blocks up to it are
 * final, and a removal at or below it is refused. Only ever moves forward:
 * a record below the chain's finalized block changes nothing.
 */
export const finality = declareKind({
  name: "finality",
  shape,
  naturalKey: ["chain"],
  moves: [],
});
