import type { SaleForModel } from "../store/ports/derive.js";
import { median } from "./numeric.js";
import { DAY, DEFAULT_PARAMS, type Estimate, type ModelParams, WEI_PER_ETH } from "./appraisal.js";
import { prequential } from "./appraise.js";
import { inBand } from "./calibration.js";
import type { FeatureSpace } from "./features.js";

// Backtest of the appraisal model: each of the latest 20% of a collection's
// sales is appraised from strictly earlier sales only (sales in the same
// second, sweeps, are all appraised before any of them is observed), next
// to two naive baselines: the collection's median price over the prior 7
// days (the last 25 sales when the week has fewer than 5), and the asset's
// own last sale (that median when the asset never sold).

export const HOLDOUT = 0.2;
const WEEK_MIN_SALES = 5;
const FALLBACK_SALES = 25;

/** One held-out sale: what it sold for and what each predictor said before it. */
export interface Prediction {
  actual: number;
  model: number;
  weekMedian: number;
  lastSale: number;
  /** The model's probability that the sale lands within ±20% of `model`. */
  confidence: number;
  /** The estimate it came from. */
  estimate: Estimate;
  /**
   * The constant-confidence baseline: the share of the collection's
   * training-period appraisals (each made just before its sale, as here)
   * that landed within ±20%, one number fixed before the held-out period.
   */
  constantConfidence: number;
  /**
   * The sale's price over the median price of the collection's sales within
   * 7 days either side of it (later ones included): what its price tier is
   * ranked by. It looks ahead on purpose: no predictor sees it, so tiers
   * favour none of them (ranking by price over the trailing 7-day median
   * would put in the floor tier the sales that baseline happened to fit).
   */
  relative: number;
}

/** The collection's median raw price over the week before t: the naive baseline, from raw prices only. */
export class WeekMedian {
  readonly #t: number[] = [];
  readonly #p: number[] = [];

  observe(t: number, price: number): void {
    this.#t.push(t);
    this.#p.push(price);
  }

  at(t: number): number | undefined {
    let to = this.#t.length;
    while (to > 0 && this.#t[to - 1]! >= t) to--;
    let from = to;
    while (from > 0 && this.#t[from - 1]! >= t - 7 * DAY) from--;
    if (to - from < WEEK_MIN_SALES) from = Math.max(0, to - FALLBACK_SALES);
    if (to === from) return undefined;
    return median(this.#p.slice(from, to));
  }
}

/** Appraises each held-out sale of one collection (`sales` oldest first). */
export function backtestCollection(sales: readonly SaleForModel[], space: FeatureSpace, params: ModelParams = DEFAULT_PARAMS): Prediction[] {
  const week = new WeekMedian();
  const last = new Map<string, number>();
  const split = Math.floor(sales.length * (1 - HOLDOUT));
  const out: Prediction[] = [];
  let trainHits = 0;
  let trainCount = 0;
  prequential(sales, space, params, {
    appraised({ index, sale, estimate, confidence }) {
      const actual = Number(sale.price);
      const predicted = Math.exp(estimate.ln) * WEI_PER_ETH;
      if (index < split) {
        trainCount++;
        if (inBand(predicted, actual)) trainHits++;
        return;
      }
      const w = week.at(sale.timestamp);
      if (w === undefined) return;
      out.push({
        actual,
        model: predicted,
        weekMedian: w,
        lastSale: last.get(sale.assetId) ?? w,
        confidence,
        estimate,
        constantConfidence: 0,
        relative: actual / centeredMedian(sales, index),
      });
    },
    observed(sale) {
      week.observe(sale.timestamp, Number(sale.price));
      last.set(sale.assetId, Number(sale.price));
    },
  });
  const constant = trainCount === 0 ? 0.5 : trainHits / trainCount;
  for (const p of out) p.constantConfidence = constant;
  return out;
}

/** The median price of the sales within 7 days either side of sales[k]. */
function centeredMedian(sales: readonly SaleForModel[], k: number): number {
  const t = sales[k]!.timestamp;
  let from = k;
  while (from > 0 && sales[from - 1]!.timestamp >= t - 7 * DAY) from--;
  let to = k + 1;
  while (to < sales.length && sales[to]!.timestamp <= t + 7 * DAY) to++;
  return median(sales.slice(from, to).map((s) => Number(s.price)));
}

export const ape = (predicted: number, actual: number) => Math.abs(predicted - actual) / actual;

