import { ape, type Prediction } from "./backtest.js";
import { median } from "./numeric.js";
import { BAND, inBand } from "./calibration.js";

// The figures of a backtest, from its predictions: error by predictor and
// price tier, and how well confidence is calibrated.

export const PREDICTORS = ["model", "weekMedian", "lastSale"] as const;
export type Predictor = (typeof PREDICTORS)[number];

export interface ErrorFigures {
  count: number;
  /** Median absolute percentage error, |predicted − actual| / actual. */
  mdape: number;
  /** Share of sales within ±10% and ±20% of the predicted value. */
  within10: number;
  within20: number;
}

export const TIERS = ["floor", "middle", "top"] as const;
export type Tier = (typeof TIERS)[number];

const within = (band: number) => (predicted: number, actual: number) =>
  actual >= (1 - band) * predicted && actual <= (1 + band) * predicted;

export function errorFigures(ps: readonly Pick<Prediction, Predictor | "actual">[], predictor: Predictor): ErrorFigures {
  const in10 = within(0.1);
  const in20 = within(BAND);
  return {
    count: ps.length,
    mdape: median(ps.map((p) => ape(p[predictor], p.actual))),
    within10: ps.length === 0 ? Number.NaN : ps.filter((p) => in10(p[predictor], p.actual)).length / ps.length,
    within20: ps.length === 0 ? Number.NaN : ps.filter((p) => in20(p[predictor], p.actual)).length / ps.length,
  };
}

/**
 * Price tiers of held-out sales, ranked by price over the collection's
 * 7-day median at the time (so that a tier means the same in a quiet year
 * and in a boom): floor, the lower half; middle, up to the 95th
 * percentile; top, the highest 5%.
 */
export function byTier(ps: readonly Prediction[]): Record<Tier, Prediction[]> {
  const sorted = [...ps].sort((a, b) => a.relative - b.relative);
  const n = sorted.length;
  const half = Math.floor(n * 0.5);
  const top = n - Math.ceil(n * 0.05);
  return { floor: sorted.slice(0, half), middle: sorted.slice(half, top), top: sorted.slice(top) };
}

export interface CalibrationRow {
  count: number;
  meanConfidence: number;
  /** Observed share of sales within ±20% of the model's value. */
  observed: number;
}

export interface Calibration {
  deciles: CalibrationRow[];
  brier: number;
  /** The Brier score of the constant-confidence baseline (each prediction's constantConfidence). */
  constantBrier: number;
  /** The Brier score of the best constant in hindsight: the held-out share itself, known only afterwards. */
  hindsightBrier: number;
  /** The held-out share within ±20%. */
  observed: number;
}

/** What calibration reads of a prediction (bench:replay's come from the API, without the model's estimate). */
type Calibrated = Pick<Prediction, "model" | "actual" | "confidence" | "constantConfidence">;

const hit = (p: Calibrated) => (inBand(p.model, p.actual) ? 1 : 0);

/** Predictions in ten groups of equal size by confidence, and the Brier scores. */
export function calibration(ps: readonly Calibrated[], groups = 10): Calibration {
  const sorted = [...ps].sort((a, b) => a.confidence - b.confidence);
  const deciles: CalibrationRow[] = [];
  for (let g = 0; g < groups; g++) {
    const part = sorted.slice(Math.floor((g * sorted.length) / groups), Math.floor(((g + 1) * sorted.length) / groups));
    if (part.length === 0) continue;
    deciles.push({
      count: part.length,
      meanConfidence: part.reduce((s, p) => s + p.confidence, 0) / part.length,
      observed: part.reduce((s, p) => s + hit(p), 0) / part.length,
    });
  }
  const n = Math.max(1, ps.length);
  const observed = ps.reduce((s, p) => s + hit(p), 0) / n;
  return {
    deciles,
    brier: ps.reduce((s, p) => s + (p.confidence - hit(p)) ** 2, 0) / n,
    constantBrier: ps.reduce((s, p) => s + (p.constantConfidence - hit(p)) ** 2, 0) / n,
    hindsightBrier: ps.reduce((s, p) => s + (observed - hit(p)) ** 2, 0) / n,
    observed,
  };
}

export interface ResolutionGroup {
  /** The smallest value in the group. */
  from: number;
  count: number;
  /** Observed share of sales within ±20% of the model's value. */
  observed: number;
}

/**
 * Predictions in `groups` groups of equal size by `value` (ties kept in the
 * given order), with the share of each that landed within ±20%: whether an
 * input can tell likelier hits from likelier misses at all. Where every
 * group's share is the same up to sampling noise, no confidence built on
 * that input can beat a constant.
 */
export function resolution(ps: readonly Prediction[], value: (p: Prediction) => number, groups = 5): ResolutionGroup[] {
  const sorted = ps.map((p) => ({ p, v: value(p) })).sort((a, b) => a.v - b.v);
  const out: ResolutionGroup[] = [];
  for (let g = 0; g < groups; g++) {
    const part = sorted.slice(Math.floor((g * sorted.length) / groups), Math.floor(((g + 1) * sorted.length) / groups));
    if (part.length === 0) continue;
    out.push({ from: part[0]!.v, count: part.length, observed: part.reduce((s, x) => s + hit(x.p), 0) / part.length });
  }
  return out;
}

/** Two standard errors of an observed share p over n sales: the spread sampling alone gives group shares. */
export const shareNoise = (p: number, n: number) => (n === 0 ? Number.NaN : 2 * Math.sqrt((p * (1 - p)) / n));
