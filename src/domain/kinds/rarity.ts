import type { AssetRarity } from "../../../gen/marketdata/v1/resources_pb.js";
import { declareKind, int } from "./declaration.js";
import * as f from "./fields.js";

/** A record's fields and their checks. */
const shape = f.object({
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
  fromMessage: (r: AssetRarity) => ({
    contractAddress: r.contractAddress,
    assetId: r.assetId,
    currentOwner: r.currentOwner,
    rarityScore: r.rarityScore,
    statisticalRarity: r.statisticalRarity,
    rarityRank: int(r.rarityRank),
  }),
  naturalKey: ["contractAddress", "assetId"],
  moves: [],
});
