import { declareKind } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.collectionRecord({
  contractAddress: f.address,
  assetId: f.uint256,
  currentOwner: f.ownerAddress,
  rarityScore: f.finite,
  statisticalRarity: f.finite,
  rarityRank: f.positiveInt,
});

/** A token's rarity (imported, or ranked by derive). */
export const rarity = declareKind({
  name: "rarity",
  shape,
  naturalKey: ["contractAddress", "assetId"],
  moves: [],
});
