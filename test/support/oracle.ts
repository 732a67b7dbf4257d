import { compareDecimal } from "../../src/domain/formats.js";
import type { Fixture } from "./fixture.js";

// The documented orders of decisions.md, written independently of the SQL.

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const byAssetId = <T extends { assetId: string }>(rows: T[]) =>
  [...rows].sort((a, b) => compareDecimal(a.assetId, b.assetId));

export const byRarity = (rows: Fixture["rarity"]) =>
  [...rows].sort((a, b) => a.rarityRank - b.rarityRank || compareDecimal(a.assetId, b.assetId));

export const bySaleOrder = (rows: Fixture["sales"]) =>
  [...rows].sort(
    (a, b) =>
      b.timestamp - a.timestamp || b.block - a.block || cmp(a.hash, b.hash) || compareDecimal(a.assetId, b.assetId),
  );

export const byListingOrder = (rows: Fixture["listings"]) =>
  [...rows].sort(
    (a, b) => b.createdAt - a.createdAt || cmp(a.marketplace, b.marketplace) || cmp(a.marketplaceId, b.marketplaceId),
  );

export const byInfluence = (rows: Fixture["influencers"]) =>
  [...rows].sort((a, b) => b.score - a.score || cmp(a.user.id, b.user.id));

export const byInteraction = (rows: Fixture["tweets"]) =>
  [...rows].sort((a, b) => b.interaction - a.interaction || cmp(a.id, b.id));
