import type { SaleForModel } from "../store/ports/derive.js";
import { AppraisalModel, DEFAULT_PARAMS, type Estimate, type ModelParams, roundToEvidence, toWei, WEI_PER_ETH } from "./appraisal.js";
import { Calibrator, impliedError } from "./calibration.js";
import { type FeatureSpace, featureSpace } from "./features.js";
import type { TokenTraits } from "./rarity.js";

// What derive serves: every asset valued just after the collection's latest
// sale by a model fed the whole history, with a confidence calibrated on the
// model's own prequential record (each sale appraised just before it
// happened, from strictly earlier sales; calibration.ts).

/** One sale as the prequential pass appraised it, just before observing it. */
export interface Appraised {
  /** Its index in the sales. */
  index: number;
  sale: SaleForModel;
  estimate: Estimate;
  confidence: number;
}

type Visit = { appraised?(a: Appraised): void; observed?(sale: SaleForModel): void };

/**
 * The prequential pass as a state that more sales can be fed to later
 * (derive's background refresh, refresh.ts): feeding a history in parts
 * leaves the very model and calibrator that feeding it whole does, as long
 * as each part holds whole seconds (every sale of a second in one part) and
 * comes after the one before.
 */
export class PrequentialPass {
  readonly model: AppraisalModel;
  readonly calibrator = new Calibrator();
  /** Sales fed so far. */
  observed = 0;
  /** The timestamp of the last sale fed; -Infinity before any. */
  lastTimestamp = -Infinity;

  constructor(space: FeatureSpace, params: ModelParams = DEFAULT_PARAMS) {
    this.model = new AppraisalModel(space, params);
  }

  /**
   * Appraises each sale just before it is observed (sales of one second,
   * sweeps, are all appraised before any of them is observed), and teaches
   * the calibrator each outcome. `visit` sees each appraisal and each
   * observed sale (the backtest's hooks).
   */
  feed(sales: readonly SaleForModel[], visit: Visit = {}): void {
    const { model, calibrator } = this;
    let i = 0;
    while (i < sales.length) {
      let j = i;
      while (j < sales.length && sales[j]!.timestamp === sales[i]!.timestamp) j++;
      for (let k = i; k < j; k++) {
        const sale = sales[k]!;
        const estimate = model.estimate(sale.assetId, sale.timestamp);
        if (estimate === undefined || sale.price <= 0n) continue;
        if (visit.appraised) visit.appraised({ index: this.observed + k, sale, estimate, confidence: calibrator.confidence(estimate) });
        calibrator.pending(estimate, Math.exp(estimate.ln), Number(sale.price) / WEI_PER_ETH, sale.timestamp);
      }
      for (let k = i; k < j; k++) {
        model.observe(sales[k]!);
        visit.observed?.(sales[k]!);
      }
      calibrator.settle();
      i = j;
    }
    this.observed += sales.length;
    if (sales.length > 0) this.lastTimestamp = sales[sales.length - 1]!.timestamp;
  }

  /**
   * The latest value of each of `assets` just after the last sale fed,
   * bounded by its lowest open listing (`listed`): the token can be bought
   * for that.
   */
  *appraise(assets: Iterable<string>, listed: ReadonlyMap<string, bigint> = new Map()): Generator<AssetAppraisal> {
    if (this.observed === 0) return;
    const at = this.lastTimestamp + 1;
    for (const assetId of assets) {
      const e = this.model.estimate(assetId, at);
      if (e === undefined) continue;
      const confidence = this.calibrator.confidence(e);
      // Rounded before the listing's bound: a token listed below its value is worth what it can be bought for, to the wei.
      const value = roundToEvidence(toWei(e.ln), impliedError(confidence));
      const listing = listed.get(assetId);
      yield { assetId, fairMarketValue: listing !== undefined && listing > 0n && listing < value ? listing : value, confidence };
    }
  }
}

/** Feeds `sales` (oldest first) to a new model: PrequentialPass.feed on the whole history. */
export function prequential(
  sales: readonly SaleForModel[],
  space: FeatureSpace,
  params: ModelParams = DEFAULT_PARAMS,
  visit: Visit = {},
): { model: AppraisalModel; calibrator: Calibrator } {
  const pass = new PrequentialPass(space, params);
  pass.feed(sales, visit);
  return pass;
}

export interface AssetAppraisal {
  assetId: string;
  fairMarketValue: bigint;
  confidence: number;
}

/**
 * Runs the model over `sales` (oldest first), appraising each before it is
 * observed, and yields the latest value of each of `assets`, bounded by its
 * lowest open listing (`listed`): the token can be bought for that.
 */
export function* appraiseCollection(
  tokens: readonly TokenTraits[],
  sales: readonly SaleForModel[],
  assets: readonly string[],
  listed: ReadonlyMap<string, bigint> = new Map(),
  params: ModelParams = DEFAULT_PARAMS,
): Generator<AssetAppraisal> {
  if (sales.length === 0) return;
  const pass = new PrequentialPass(featureSpace(tokens), params);
  pass.feed(sales);
  yield* pass.appraise(assets, listed);
}
