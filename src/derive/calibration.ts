import { DAY, type Estimate } from "./appraisal.js";
import { sigmoid, solveSpd } from "./numeric.js";

// Confidence: the probability that the asset's next sale lands within ±20%
// of fairMarketValue (0.8·v ≤ price ≤ 1.2·v), learned from the model's own
// record. Every sale of the collection is appraised just before it happens
// (from strictly earlier sales: the same pass the backtest makes), and
// whether it landed in the band is an outcome. A logistic regression of
// those outcomes on what makes an appraisal uncertain gives the
// probability:
//
//   the spread of the market's latest trait-adjusted prices, how few of
//   them there are, how long ago the last sale was, how far the token's
//   traits put it from a plain token, how few sales its rarest trait value
//   has had, and how little of its own history there is.
//
// It is refitted every REFIT_EVERY outcomes (or REFIT_SHARE of them all) on
// the latest WINDOW of them, weighted by a half-life (a market's
// predictability changes with its regime), with a ridge penalty (RIDGE)
// keeping it sane while outcomes are few, then recalibrated on the latest
// RECENT outcomes (a regime change shows there first). Confidence blends
// that fit with the recent share of outcomes in the band, by how well each
// did lately: where the fit has no skill, it falls back towards the share.
// Before any outcome the fit answers the share a Laplace error of the
// market's spread would put in the band.

export const BAND = 0.2;
const LOW = Math.log(1 - BAND);
const HIGH = Math.log(1 + BAND);
const HALF_LIFE = 90 * DAY;
const WINDOW = 2_000;
const REFIT_EVERY = 250;
/** ... or this share of all outcomes so far, whichever is more: a long history is refitted ~100 times per tenfold growth, not once per 250 sales. */
const REFIT_SHARE = 0.05;
const RIDGE = 1;
/** The intercept's ridge: negligible beside a window's outcomes, enough to keep a fit of outcomes all alike finite. */
const INTERCEPT_RIDGE = 1e-3;
/** The first fit waits for this many outcomes (until then: the Laplace band of the market's spread). */
const FIRST_FIT_OUTCOMES = 20;
/** Per outcome, how much of the past the recent share and the skill scores keep (~500 outcomes). */
const SKILL_DECAY = 1 - 1 / 500;
/** How sharply the blend turns to the better of fit and share as their recent squared errors part. */
const SKILL_RATE = 1;
const RECENT = 300;
const RECENT_RIDGE = 5;
/**
 * Thin data: a market's spread measured from few sales is itself a guess
 * (one sale has a spread of 0), so before the first fit the spread is
 * shrunk towards PRIOR_SPREAD, a market of middling dispersion (the median
 * absolute deviation of ln prices whose standard deviation is ~0.45), as if
 * PRIOR_SALES sales had shown it. One sale is then appraised with the
 * confidence of an unknown market (~0.4), not that of a perfectly tight one
 * (0.74 before). Chosen so that markets of 1, 5 and 20 sales with
 * dispersions from 0.1 to 0.7 are calibrated within 0.05
 * (test/derive/appraisal.test.ts, "confidence on thin data").
 */
const PRIOR_SPREAD = 0.3;
const PRIOR_SALES = 4;
/** Where the recalibration starts: σ(0 + 1·z), no change. */
const IDENTITY = Float64Array.of(0, 1);

/** True when `actual` lands within ±BAND of `value`. */
export const inBand = (value: number, actual: number) => actual >= (1 - BAND) * value && actual <= (1 + BAND) * value;

/**
 * What confidence is learned from: each input of an estimate, by name (the
 * backtest's resolution table groups outcomes by it), and the transform
 * that makes it a regressor (each grows as the appraisal gets less certain,
 * and saturates). The features are an intercept and these, in this order.
 */
export const CONFIDENCE_INPUTS: readonly { name: string; of: (e: Estimate) => number; feature: (v: number) => number }[] = [
  { name: "market spread", of: (e) => e.levelSpread, feature: (v) => v },
  { name: "sales in the level's window", of: (e) => e.levelSales, feature: (v) => 1 / Math.sqrt(Math.max(1, v)) },
  { name: "days since the last sale", of: (e) => e.staleDays, feature: (v) => Math.log1p(v) },
  { name: "size of the trait premium", of: (e) => Math.abs(e.traits), feature: (v) => Math.log1p(v) },
  { name: "own-history weight", of: (e) => e.ownWeight, feature: (v) => 1 / (1 + v) },
  { name: "rarest value's evidence", of: (e) => e.traitEvidence, feature: (v) => 1 / Math.sqrt(1 + v) },
  { name: "days since the token's last sale", of: (e) => e.ownStaleDays, feature: (v) => Math.log1p(Math.min(v, 365)) / 6 },
  { name: "spread of comparable sales", of: (e) => e.comparableSpread, feature: (v) => v },
];

/** The regressors: the intercept, then one per input. */
const DIMS = 1 + CONFIDENCE_INPUTS.length;

export function features(e: Estimate): Float64Array {
  const x = new Float64Array(DIMS);
  x[0] = 1;
  CONFIDENCE_INPUTS.forEach((input, i) => {
    x[i + 1] = input.feature(input.of(e));
  });
  return x;
}

/** P(ln(price/value) in [LOW, HIGH]) when it is Laplace with mean absolute value m. */
export function laplaceBand(m: number): number {
  const b = Math.max(m, 1e-3);
  return 1 - 0.5 * Math.exp(LOW / b) - 0.5 * Math.exp(-HIGH / b);
}

/**
 * The mean absolute ln error a Laplace error would need to put `confidence`
 * of the sales in the band: laplaceBand inverted (by bisection; it falls as
 * the error grows), within [0.001, 10].
 */
export function impliedError(confidence: number): number {
  let lo = 1e-3;
  let hi = 10;
  if (!(confidence < laplaceBand(lo))) return lo;
  if (confidence <= laplaceBand(hi)) return hi;
  for (let i = 0; i < 50; i++) {
    const mid = Math.sqrt(lo * hi);
    if (laplaceBand(mid) > confidence) lo = mid;
    else hi = mid;
  }
  return Math.sqrt(lo * hi);
}

/** The band's share before any outcome: a Laplace error of the market's spread over `sales` sales, shrunk towards the prior's. */
export function priorBand(spread: number, sales: number): number {
  const n = Math.max(0, sales);
  return laplaceBand(Math.max(0.05, ((n * spread + PRIOR_SALES * PRIOR_SPREAD) / (n + PRIOR_SALES)) * 1.5));
}

/**
 * Weighted logistic regression by Newton's method (IRLS), starting from
 * `start`, with a ridge penalty on every coefficient (`ridge`; the
 * intercept, index 0, INTERCEPT_RIDGE). Each step is halved until the
 * penalised likelihood improves: a full Newton step from a start far from
 * the optimum (the last fit's coefficients after the market changed) can
 * overshoot into saturation, and from there the steps swung between two
 * points 1e5 apart for every iteration of every later refit.
 */
export function fitLogistic(
  xs: readonly Float64Array[],
  ys: readonly number[],
  ws: readonly number[],
  start: Float64Array,
  ridge = RIDGE,
): Float64Array {
  const d = start.length;
  const penalty = (i: number) => (i === 0 ? INTERCEPT_RIDGE : ridge);
  /** The penalised log-likelihood at b. */
  const objective = (b: Float64Array): number => {
    let l = 0;
    for (let k = 0; k < xs.length; k++) {
      const x = xs[k]!;
      let z = 0;
      for (let i = 0; i < d; i++) z += b[i]! * x[i]!;
      // y·z − ln(1 + e^z), without overflow for large |z|.
      l += ws[k]! * (ys[k]! * z - (z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z))));
    }
    for (let i = 0; i < d; i++) l -= 0.5 * penalty(i) * b[i]! * b[i]!;
    return l;
  };
  let beta = Float64Array.from(start);
  let current = objective(beta);
  for (let iter = 0; iter < 8; iter++) {
    const h = new Float64Array(d * d);
    const g = new Float64Array(d);
    for (let k = 0; k < xs.length; k++) {
      const x = xs[k]!;
      let z = 0;
      for (let i = 0; i < d; i++) z += beta[i]! * x[i]!;
      const p = sigmoid(z);
      const r = ws[k]! * (ys[k]! - p);
      const v = ws[k]! * p * (1 - p);
      for (let i = 0; i < d; i++) {
        g[i] = g[i]! + r * x[i]!;
        for (let j = 0; j <= i; j++) h[i * d + j] = h[i * d + j]! + v * x[i]! * x[j]!;
      }
    }
    for (let i = 0; i < d; i++) {
      g[i] = g[i]! - penalty(i) * beta[i]!;
      h[i * d + i] = h[i * d + i]! + penalty(i);
    }
    for (let i = 0; i < d; i++) for (let j = i + 1; j < d; j++) h[i * d + j] = h[j * d + i]!;
    const step = solveSpd(h, g, d);
    let scale = 1;
    let next = new Float64Array(d);
    let value = current;
    for (let halvings = 0; halvings < 20; halvings++, scale /= 2) {
      for (let i = 0; i < d; i++) next[i] = beta[i]! + scale * step[i]!;
      value = objective(next);
      if (value >= current) break;
    }
    if (!(value >= current)) break;
    let size = 0;
    for (let i = 0; i < d; i++) size += Math.abs(scale * step[i]!);
    [beta, next] = [next, beta];
    current = value;
    if (size < 1e-4) break;
  }
  return beta;
}

export class Calibrator {
  #coef: Float64Array | undefined;
  /** c and d of the recent recalibration σ(c + d·z). */
  #recal: Float64Array = IDENTITY;
  /** Per outcome, in time order: its features, whether it landed in the band (1) or not (0), its time. */
  readonly #rows: Float64Array[] = [];
  readonly #hits: number[] = [];
  readonly #times: number[] = [];
  #sinceFit = 0;
  #outcomes = 0;
  #pending: { x: Float64Array; hit: number; t: number; fitted: number; base: number }[] = [];
  /** The recent share of outcomes in the band (before any: an unknown market's), and the recent squared errors of the fit and of that share. */
  #base = priorBand(PRIOR_SPREAD, 0);
  #fitLoss = 0;
  #baseLoss = 0;

  /** The probability that the sale after estimate `e` lands within ±BAND of its value. */
  confidence(e: Estimate): number {
    const fitted = this.#fitted(e);
    // The fit where it has earned it, the recent share where it has not.
    const w = sigmoid(SKILL_RATE * (this.#baseLoss - this.#fitLoss));
    return w * fitted + (1 - w) * this.#base;
  }

  /** The logistic fit's probability (before any outcome, a Laplace error of the market's spread). */
  #fitted(e: Estimate, x = features(e)): number {
    if (this.#coef === undefined) return priorBand(e.levelSpread, e.levelSales);
    return sigmoid(this.#recal[0]! + this.#recal[1]! * this.#z(x));
  }

  #z(x: Float64Array): number {
    let z = 0;
    for (let i = 0; i < DIMS; i++) z += this.#coef![i]! * x[i]!;
    return z;
  }

  /** An appraisal and the sale that followed it; learned from at the next settle(). */
  pending(e: Estimate, value: number, actual: number, t: number): void {
    const x = features(e);
    this.#pending.push({ x, hit: inBand(value, actual) ? 1 : 0, t, fitted: this.#fitted(e, x), base: this.#base });
  }

  /** Learns from the pending outcomes (once every sale of one second is appraised). */
  settle(): void {
    for (const o of this.#pending) {
      this.#rows.push(o.x);
      this.#hits.push(o.hit);
      this.#times.push(o.t);
      this.#sinceFit++;
      this.#outcomes++;
      this.#fitLoss = this.#fitLoss * SKILL_DECAY + (o.fitted - o.hit) ** 2;
      this.#baseLoss = this.#baseLoss * SKILL_DECAY + (o.base - o.hit) ** 2;
      this.#base = this.#base * SKILL_DECAY + o.hit * (1 - SKILL_DECAY);
    }
    this.#pending = [];
    if (this.#rows.length > 2 * WINDOW) {
      this.#rows.splice(0, this.#rows.length - WINDOW);
      this.#hits.splice(0, this.#hits.length - WINDOW);
      this.#times.splice(0, this.#times.length - WINDOW);
    }
    if (this.#sinceFit >= Math.max(REFIT_EVERY, REFIT_SHARE * this.#outcomes) || (this.#coef === undefined && this.#rows.length >= FIRST_FIT_OUTCOMES)) this.#refit();
  }

  #refit(): void {
    this.#sinceFit = 0;
    const from = Math.max(0, this.#rows.length - WINDOW);
    const xs = this.#rows.slice(from);
    const ys = this.#hits.slice(from);
    const now = this.#times[this.#times.length - 1]!;
    const ws = this.#times.slice(from).map((t) => 0.5 ** ((now - t) / HALF_LIFE));
    this.#coef = fitLogistic(xs, ys, ws, this.#coef ?? new Float64Array(DIMS));
    // The latest RECENT outcomes, scored by the new fit, recalibrate it:
    // what the market's drift did to the fit's log-odds lately. The slope
    // is held towards 0 by RECENT_RIDGE: where the recent outcomes do not
    // bear the fit's spread out, confidence falls back towards their share.
    const r = Math.max(0, this.#rows.length - RECENT);
    const zs = this.#rows.slice(r).map((x) => Float64Array.of(1, this.#z(x)));
    this.#recal = fitLogistic(zs, this.#hits.slice(r), zs.map(() => 1), IDENTITY, RECENT_RIDGE);
  }
}
