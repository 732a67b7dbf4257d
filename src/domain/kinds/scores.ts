import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { TEXT_LIMITS } from "./parts.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
  name: f.text(TEXT_LIMITS.name),
  contractAddress: f.address,
  hype: f.finite,
  gains: f.finite,
  community: f.finite,
  total: f.finite,
});

/** A collection's scores (hype, gains, community); its name, when given, names the collection. */
export const scores = declareKind({
  name: "scores",
  shape,
  naturalKey: ["contractAddress"],
  moves: ["collection-names"],
});
