import type { AppraisalRow, RarityRow } from "../domain/rows.js";
import type { DerivedWrite, DeriveRepository, SaleForModel, TokenRecord } from "../store/ports/derive.js";
import { PrequentialPass } from "./appraise.js";
import { formatConfidence } from "./appraisal.js";
import { featureSpace } from "./features.js";
import { type CollectionRarity, computeRarity } from "./rarity.js";
import { DEFAULTS } from "../config/settings.js";
import { latestTimeAllowed } from "../domain/formats.js";

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
  /**
   * Sales dated more than this many seconds past the clock are left out of
   * the model (a stored outlier from before such times were refused would
   * otherwise be its "now" for ever); --max-clock-skew's default when absent.
   */
  maxClockSkewSeconds?: number;
}

/**
 * What derive computed of a collection, kept by the background refresh
 * (refresh.ts) to take later sales incrementally: the tokens and their
 * rarity, the model's pass over every sale so far, each asset's last buyer.
 */
export interface FittedCollection {
  contractAddress: string;
  collectionId: number;
  tokens: TokenRecord[];
  rarity: CollectionRarity;
  pass: PrequentialPass;
  lastBuyer: Map<string, string>;
}

/** Reads a collection's tokens and sales and fits rarity and the model to them (timings of the two computations). */
export async function fitCollection(
  store: DeriveRepository,
  contractAddress: string,
  until: number,
): Promise<{ fitted: FittedCollection; sales: SaleForModel[]; rarityMs: number; appraisalMs: number }> {
  const collectionId = await store.collectionId(contractAddress);
  if (collectionId === undefined) throw new Error(`collection ${contractAddress} not found`);
  const tokens = await store.tokens(collectionId);
  const sales = await store.sales(collectionId, -1, until);
  let started = performance.now();
  const rarity = computeRarity(tokens);
  const rarityMs = performance.now() - started;
  started = performance.now();
  const pass = new PrequentialPass(featureSpace(tokens));
  pass.feed(sales);
  const lastBuyer = new Map<string, string>();
  for (const s of sales) lastBuyer.set(s.assetId, s.buyer);
  const appraisalMs = performance.now() - started;
  return { fitted: { contractAddress, collectionId, tokens, rarity, pass, lastBuyer }, sales, rarityMs, appraisalMs };
}

/** Feeds later sales (every one after the last fed, whole seconds) to a fitted collection. */
export function feedSales(fitted: FittedCollection, sales: readonly SaleForModel[]): void {
  fitted.pass.feed(sales);
  for (const s of sales) fitted.lastBuyer.set(s.assetId, s.buyer);
}

/**
 * The rarity rows of a fitted collection (none without tokens: rarity
 * imported from elsewhere is kept), each owner the token's or else its last
 * buyer.
 */
export function rarityRows(f: FittedCollection): RarityRow[] | undefined {
  if (f.tokens.length === 0) return undefined;
  const ownerOf = new Map(f.tokens.map((t) => [t.assetId, t.currentOwner || f.lastBuyer.get(t.assetId) || ""]));
  return f.rarity.tokens.map((t) => ({
    contractAddress: f.contractAddress,
    assetId: t.assetId,
    currentOwner: ownerOf.get(t.assetId) ?? "",
    rarityScore: t.rarityScore,
    statisticalRarity: t.statisticalRarity,
    rarityRank: t.rarityRank,
  }));
}

/** The appraisal of every token and every asset that sold (even if its token was never imported); none without sales. */
function appraisalRows(f: FittedCollection, listed: ReadonlyMap<string, bigint>): AppraisalRow[] {
  const assets = new Set([...f.tokens.map((t) => t.assetId), ...f.lastBuyer.keys()]);
  const rows: AppraisalRow[] = [];
  for (const a of f.pass.appraise(assets, listed)) {
    if (a.fairMarketValue > 0n) {
      rows.push({ contractAddress: f.contractAddress, assetId: a.assetId, fairMarketValue: a.fairMarketValue.toString(), confidence: formatConfidence(a.confidence) });
    }
  }
  return rows;
}

/**
 * A fitted collection's appraisals, its open listings read; none when no
 * sale is left (all taken back by a reorganisation, say), so that no
 * derived appraisal made of those sales outlives them (replaceDerived keeps
 * imported ones).
 */
export async function derivedAppraisals(store: DeriveRepository, f: FittedCollection): Promise<AppraisalRow[]> {
  return f.pass.observed === 0 ? [] : appraisalRows(f, await store.openListingPrices(f.collectionId));
}

export async function deriveCollection(store: DeriveRepository, contractAddress: string, options: DeriveOptions = {}): Promise<DeriveResult> {
  const until = latestTimeAllowed(options.maxClockSkewSeconds ?? DEFAULTS.maxClockSkew);
  const { fitted, rarityMs: rarityFitMs, appraisalMs: fitMs } = await fitCollection(store, contractAddress, until);
  let started = performance.now();
  const rarity = rarityRows(fitted);
  const rarityMs = rarityFitMs + performance.now() - started;
  started = performance.now();
  const appraisals = await derivedAppraisals(store, fitted);
  const appraisalMs = fitMs + performance.now() - started;

  // Both data sets in one transaction: no reader sees new rarity beside old appraisals.
  started = performance.now();
  const writes = await store.replaceDerived(
    fitted.collectionId,
    { ...(rarity === undefined ? {} : { rarity }), appraisals },
    options.replaceImported,
  );
  const writeMs = performance.now() - started;
  const rarityWrite = writes.rarity;
  const appraisalWrite = writes.appraisals;
  return {
    contractAddress,
    tokens: fitted.tokens.length,
    entropy: fitted.rarity.entropy,
    rarityMs,
    sales: fitted.pass.observed,
    appraisals: appraisalWrite?.written ?? 0,
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
