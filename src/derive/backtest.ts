import type { SaleForModel } from "../store/derive-store.js";
import { AppraisalModel, type Traits } from "./appraisal.js";

// Backtest of the appraisal model: each of the latest 20% of a collection's
// sales is appraised using only sales strictly before it, next to two naive
// baselines: the collection's median price over the prior 7 days, and the
// asset's own last sale (the 7-day median where the asset never sold).

export const HOLDOUT = 0.2;

export interface BacktestErrors {
  model: number[];
  weekMedian: number[];
  lastSale: number[];
  /** Predictions where the asset had an earlier sale of its own. */
  withOwnSale: number;
}

export function emptyErrors(): BacktestErrors {
  return { model: [], weekMedian: [], lastSale: [], withOwnSale: 0 };
}

/** Adds one collection's absolute percentage errors to `into`. `sales` oldest first. */
export function backtestCollection(
  sales: readonly SaleForModel[],
  traitsOf: (assetId: string) => Traits | undefined,
  into: BacktestErrors = emptyErrors(),
): BacktestErrors {
  const model = new AppraisalModel(traitsOf);
  const split = Math.floor(sales.length * (1 - HOLDOUT));
  for (let i = 0; i < split; i++) model.observe(sales[i]!);
  let i = split;
  while (i < sales.length) {
    // Sales at the same second (sweeps) are all predicted before any is observed.
    let j = i;
    while (j < sales.length && sales[j]!.timestamp === sales[i]!.timestamp) j++;
    for (let k = i; k < j; k++) {
      const sale = sales[k]!;
      const actual = Number(sale.price);
      const predicted = model.appraise(sale.assetId, sale.timestamp);
      const week = model.levelPrice(sale.timestamp);
      if (!predicted || week === undefined || actual <= 0) continue;
      const own = model.lastSalePrice(sale.assetId);
      if (own !== undefined) into.withOwnSale++;
      into.model.push(ape(Number(predicted.fairMarketValue), actual));
      into.weekMedian.push(ape(Number(week), actual));
      into.lastSale.push(ape(Number(own ?? week), actual));
    }
    for (let k = i; k < j; k++) model.observe(sales[k]!);
    i = j;
  }
  return into;
}

function ape(predicted: number, actual: number): number {
  return Math.abs(predicted - actual) / actual;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 === 1 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}
