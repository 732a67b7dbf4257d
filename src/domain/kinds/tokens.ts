import type { TokenAttribute, TokenRecord } from "../../../gen/marketdata/v1/ingest_service_pb.js";
import type { TokenEventRow } from "../rows.js";
import { toToken } from "../wire/messages.js";
import { declareKind } from "./declaration.js";
import * as f from "./fields.js";
import { attribute, MAX_ATTRIBUTES, NO_TOKEN_METADATA, tokenMetadata } from "./parts.js";

const attributeOf = (a: TokenAttribute) => ({
  trait_type: a.traitType,
  // A missing value is refused by the checker (null is not a string, number or boolean).
  value: a.value.case === undefined ? null : a.value.value,
  display_type: a.displayType,
});

/** A record's fields and their checks. */
const shape = f.collectionRecord(
  {
    contractAddress: f.address,
    assetId: f.uint256,
    currentOwner: f.ownerAddress,
    attributes: f.arrayOf(attribute, MAX_ATTRIBUTES),
    ...tokenMetadata,
  },
  { currentOwner: "", ...NO_TOKEN_METADATA },
);

/** A token: its attributes, its metadata and the owner its record names (until a sale or transfer moves it). */
export const tokens = declareKind({
  name: "tokens",
  shape,
  fromMessage: (r: TokenRecord) => ({
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    currentOwner: r.currentOwner,
    attributes: r.attributes.map(attributeOf),
    name: r.name,
    description: r.description,
    image: r.image,
    animation_url: r.animationUrl,
    external_url: r.externalUrl,
  }),
  naturalKey: ["contractAddress", "assetId"],
  moves: ["owners", "traits", "asks", "rarity-inputs"],
  // A record written (inserted, or changed: metadata refreshed) is an event, at the second it was written: the token as the tokens list answers it.
  // Asked for by name only: the feeds' default is the market's events.
  feed: { event: "token", slot: 4, time: (r: TokenEventRow) => r.fedAt, toMessage: (r: TokenEventRow) => toToken(r), askedOnly: true },
});
