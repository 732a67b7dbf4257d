import type { AppraisalRow } from "../domain/records.js";
import type { DerivedWrite, DeriveRepository } from "../store/ports.js";
import { appraiseCollection } from "./appraise.js";
import { formatConfidence } from "./appraisal.js";
import { computeRarity } from "./rarity.js";

// Derived data sets of a collection: rarity from its tokens, appraisals from
// its sales (valued at the time of its latest sale).

export interface DeriveResult {
  contractAddress: string;
  tokens: number;
  entropy: number;
  /** Computing rarity (its write is in writeMs). */
  rarityMs: number;
  sales: number;
  appraisals: number;
  /** Computing the appraisals (their write is in writeMs). */
  appraisalMs: number;
  /** Writing both data sets, in one transaction. */
  writeMs: number;
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
  const rarityRows =
    tokens.length > 0
      ? rarity.tokens.map((t) => ({
          contractAddress,
          assetId: t.assetId,
          currentOwner: ownerOf.get(t.assetId) ?? "",
          rarityScore: t.rarityScore,
          statisticalRarity: t.statisticalRarity,
          rarityRank: t.rarityRank,
        }))
      : undefined;
  const rarityMs = performance.now() - started;

  started = performance.now();
  let appraisalRows: AppraisalRow[] | undefined;
  if (sales.length > 0) {
    // Every token, and every asset that sold even if its token was never imported.
    const assets = [...new Set([...tokens.map((t) => t.assetId), ...lastBuyer.keys()])];
    appraisalRows = [];
    const listed = await store.openListingPrices(collectionId);
    for (const a of appraiseCollection(tokens, sales, assets, listed)) {
      if (a.fairMarketValue > 0n) {
        appraisalRows.push({
          contractAddress,
          assetId: a.assetId,
          fairMarketValue: a.fairMarketValue.toString(),
          confidence: formatConfidence(a.confidence),
        });
      }
    }
  }
  const appraisalMs = performance.now() - started;

  // Both data sets in one transaction: no reader sees new rarity beside old appraisals.
  started = performance.now();
  const writes = await store.replaceDerived(
    collectionId,
    { ...(rarityRows === undefined ? {} : { rarity: rarityRows }), ...(appraisalRows === undefined ? {} : { appraisals: appraisalRows }) },
    options.replaceImported,
  );
  const writeMs = performance.now() - started;
  const rarityWrite = writes.rarity;
  const appraisalWrite = writes.appraisals;
  const appraisals = appraisalWrite?.written ?? 0;
  return {
    contractAddress,
    tokens: tokens.length,
    entropy: rarity.entropy,
    rarityMs,
    sales: sales.length,
    appraisals,
    appraisalMs,
    writeMs,
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
