import { compareDecimal } from "../../src/domain/formats.js";
import type { Fixture } from "./fixture.js";
import { washFlagsOf, washNames, washScore } from "../../src/domain/wash.js";

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

/**
 * The fixture's rarity records as the API answers them: a sold token's
 * owner is the buyer of its latest sale by block, then hash (decisions.md,
 * "Ownership"; the fixture has no transfers), else the record's owner.
 */
export function rarityAnswers(f: Pick<Fixture, "rarity" | "sales">): Fixture["rarity"] {
  const latest = new Map<string, Fixture["sales"][number]>();
  for (const s of f.sales) {
    const l = latest.get(s.assetId);
    if (l === undefined || s.block > l.block || (s.block === l.block && s.hash > l.hash)) latest.set(s.assetId, s);
  }
  return f.rarity.map((r) => ({ ...r, currentOwner: latest.get(r.assetId)?.to ?? r.currentOwner }));
}

/** Each fixture sale's wash answer (docs/wash-trades.md), by `hash:assetId`: the rules applied to all of them (domain/wash.ts). */
export function washAnswers(rows: Fixture["sales"]): Map<string, { washFlags: string[]; washScore: number }> {
  const masks = washFlagsOf(rows.map((s) => ({ id: `${s.hash}:${s.assetId}`, assetId: s.assetId, seller: s.from, buyer: s.to, timestamp: s.timestamp, block: s.block,
    hash: s.hash.slice(2), price: BigInt(s.price) })));
  return new Map([...masks].map(([id, m]) => [id, { washFlags: washNames(m), washScore: washScore(m) }]));
}
