import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { TEXT_LIMITS } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({ contractAddress: f.address, name: f.text(TEXT_LIMITS.name) });

/** A collection's name, by its contract. */
export const collections = declareKind({
  name: "collections",
  shape,
  naturalKey: ["chain", "contractAddress"],
  moves: ["collection-names"],
});
