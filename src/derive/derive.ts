import type { DerivedWrite, DeriveRepository } from "../store/derive-store.js";
import { appraiseCollection } from "./appraise.js";
import { formatConfidence } from "./appraisal.js";
import { computeRarity } from "./rarity.js";

// Derived data sets of a collection: rarity from its tokens, appraisals from
// its sales (valued at the time of its latest sale).

export interface DeriveResult {
  contractAddress: string;
  tokens: number;
  entropy: number;
  rarityMs: number;
  sales: number;
  appraisals: number;
  appraisalMs: number;
  /** How imported rows fared; absent when that data set was not derived. */
  rarityWrite?: DerivedWrite;
  appraisalWrite?: DerivedWrite;
}

export interface DeriveOptions {
  /** Overwrite imported rows with computed ones (derive --replace-imported); by default imported rows win. */
  replaceImported?: boolean;
}

export async function deriveCollection(store: DeriveRepository, contractAddress: string, options: DeriveOptions = {}): Promise<DeriveResult> {
  const collectionId = await store.collectionId(contractAddress);
  if (collectionId === undefined) throw new Error(`collection ${contractAddress} not found`);
  const tokens = await store.tokens(collectionId);
  const sales = await store.sales(collectionId);

  let started = performance.now();
  const rarity = computeRarity(tokens);
  const lastBuyer = new Map<string, string>();
  for (const s of sales) lastBuyer.set(s.assetId, s.buyer);
  const ownerOf = new Map(tokens.map((t) => [t.assetId, t.currentOwner || lastBuyer.get(t.assetId) || ""]));
  // Without tokens there is nothing to derive rarity from; rarity imported
  // from elsewhere is kept.
  const rarityWrite =
    tokens.length > 0
      ? await store.replaceRarity(
          collectionId,
          rarity.tokens.map((t) => ({
            contractAddress,
            assetId: t.assetId,
            currentOwner: ownerOf.get(t.assetId) ?? "",
            rarityScore: t.rarityScore,
            statisticalRarity: t.statisticalRarity,
            rarityRank: t.rarityRank,
          })),
          options.replaceImported,
        )
      : undefined;
  const rarityMs = performance.now() - started;

  started = performance.now();
  let appraisals = 0;
  let appraisalWrite: DerivedWrite | undefined;
  if (sales.length > 0) {
    // Every token, and every asset that sold even if its token was never imported.
    const assets = [...new Set([...tokens.map((t) => t.assetId), ...lastBuyer.keys()])];
    const rows = [];
    const listed = await store.openListingPrices(collectionId);
    for (const a of appraiseCollection(tokens, sales, assets, listed)) {
      if (a.fairMarketValue > 0n) {
        rows.push({
          contractAddress,
          assetId: a.assetId,
          fairMarketValue: a.fairMarketValue.toString(),
          confidence: formatConfidence(a.confidence),
        });
      }
    }
    appraisalWrite = await store.replaceAppraisals(collectionId, rows, options.replaceImported);
    appraisals = appraisalWrite.written;
  }
  return {
    contractAddress,
    tokens: tokens.length,
    entropy: rarity.entropy,
    rarityMs,
    sales: sales.length,
    appraisals,
    appraisalMs: performance.now() - started,
    ...(rarityWrite === undefined ? {} : { rarityWrite }),
    ...(appraisalWrite === undefined ? {} : { appraisalWrite }),
  };
}

/** Derives every collection that has tokens or sales, or just `only`. */
export async function deriveAll(store: DeriveRepository, only?: string, options: DeriveOptions = {}): Promise<DeriveResult[]> {
  const targets = only === undefined ? await store.collectionsToDerive() : [only];
  const results: DeriveResult[] = [];
  for (const address of targets) results.push(await deriveCollection(store, address, options));
  await store.refreshPlannerStats();
  return results;
}
