import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { TEXT_LIMITS } from "./parts.js";

/** A record's fields and their checks: its name, what a page about it shows (docs/data.md, "Metadata") and its contract's token standard. */
const shape = f.collectionRecord(
  {
    contractAddress: f.address,
    name: f.text(TEXT_LIMITS.name),
    description: f.text(TEXT_LIMITS.metadataDescription),
    image: f.mediaUri,
    externalUrl: f.optionalUrl,
    twitter: f.optionalUrl,
    discord: f.optionalUrl,
    tokenStandard: f.tokenStandard,
  },
  { description: "", image: "", externalUrl: "", twitter: "", discord: "", tokenStandard: "ERC721" },
);

/** A collection's name and metadata, by its contract: a record replaces the one before whole. */
export const collections = declareKind({
  name: "collections",
  shape,
  naturalKey: ["chain", "contractAddress"],
  moves: ["collection-names"],
});
