import type { FeatureSpace, FeatureVector } from "./features.js";
import { isRarityColumn } from "./features.js";
import { clamp, insertionSort, medianOfSorted } from "./numeric.js";

// Appraisals: a hedonic model of ln(price), fitted from the sales a
// collection has had so far, robust to the way real NFT markets behave.
// Pure and incremental: feed sales in time order with observe(), ask for a
// token's estimate at any later time with estimate(); the backtest runs the
// very same object, so its figures describe what derive serves.
//
//   ln p = L(T) + x·β + a + ε
//
//   x·β  trait premiums: one column per trait value (repeated trait types
//        included), per attribute count, and per trait type the rarity
//        −ln(share) of the token's values (features.ts). β is a ridge
//        regression of each sale's ln price over the market level at its
//        time, sales weighted by a half-life, so premiums drift with the
//        market; the ridge shrinks a value seen in few sales towards what
//        its rarity implies. Each sale enters with its error clipped at
//        ±CLIP (wash trades and gifts at a thousandth of the price move it
//        as little as any other sale).
//   L(T) the market level: the median, over the collection's latest sales
//        before T (the last 7 days, at least 5 and at most 20 sales), of
//        ln p − x·β: trait-adjusted prices, so that the level is that of a
//        plain token whatever mix of tokens sold, and follows a boom within
//        days.
//   a    the asset's own history: the mean of its earlier sales' errors
//        (ln p − L − x·β at their time, clipped at ±CLIP too), weighted by
//        a half-life and shrunk by OWN_PRIOR pseudo-sales towards 0: one
//        wash trade moves its asset by at most CLIP/(1 + OWN_PRIOR).
//
// The value is exp(L + x·β + a); appraise.ts bounds it by an open listing.
// Confidence is calibration.ts's.

export const DAY = 86_400;
export const WEI_PER_ETH = 1e18;
const SWEEPS = 8;
/** β is refitted once at least this many sales (and refitShare of all) came since the last fit. */
const MIN_REFIT_SALES = 20;
/** A trait value's error spread is shrunk towards the collection's as if this many sales had shown the collection's. */
const COMPARABLE_PRIOR = 2;
/** Estimate.ownStaleDays of a token that has not sold (and the most it says of one that has): ten years. */
export const NEVER_SOLD_DAYS = 3_650;

export interface ModelParams {
  levelDays: number;
  levelMin: number;
  levelMax: number;
  traitHalfLifeDays: number;
  /** Ridge penalty of a trait value's premium, in (decayed) sales. */
  ridge: number;
  /** Ridge penalty of a rarity slope. */
  rarityRidge: number;
  /** Largest |error| (ln units) a sale brings to the premiums. */
  clip: number;
  ownHalfLifeDays: number;
  /** Pseudo-sales at the trait model's value that an asset's own history is averaged with. */
  ownPrior: number;
  /** Refit β once the sales observed since the last fit reach this share of all (and at least MIN_REFIT_SALES). */
  refitShare: number;
}

export const DEFAULT_PARAMS: ModelParams = {
  levelDays: 7,
  levelMin: 5,
  levelMax: 20,
  traitHalfLifeDays: 365,
  ridge: 2,
  rarityRidge: 0.1,
  clip: 1,
  ownHalfLifeDays: 90,
  ownPrior: 4,
  refitShare: 0.02,
};

export interface ModelSale {
  assetId: string;
  timestamp: number;
  /** Wei. */
  price: bigint;
}

/** The parts of one appraisal, in ln(ETH): what confidence and the backtest look at. */
export interface Estimate {
  /** ln of the value in ETH. */
  ln: number;
  level: number;
  traits: number;
  own: number;
  /** Decayed weight of the asset's own earlier sales. */
  ownWeight: number;
  /** Sales in the level's window. */
  levelSales: number;
  /** Median absolute trait-adjusted deviation within the level's window. */
  levelSpread: number;
  /** Days since the collection's latest sale. */
  staleDays: number;
  /** Days since the token's own latest sale (NEVER_SOLD_DAYS when it has none): how stale its own evidence is. */
  ownStaleDays: number;
  /**
   * The spread of comparable sales: per trait value of the token, the
   * half-life weighted mean absolute error of the earlier sales that had it
   * (shrunk towards the collection's as if COMPARABLE_PRIOR sales had shown
   * that), the largest of them: a token is as predictable as its least
   * predictable trait.
   */
  comparableSpread: number;
  /** Sales (half-life weighted) of the token's least-sold trait value: how well its premiums are known. */
  traitEvidence: number;
}

const EMPTY: FeatureVector = { ids: new Int32Array(0), values: new Float64Array(0) };

export class AppraisalModel {
  readonly #space: FeatureSpace;
  readonly #params: ModelParams;
  readonly #columns: number;
  readonly #ridge: Float64Array;
  /** 1 for a trait value's (or attribute count's) column, 0 for a rarity slope's. */
  readonly #valueColumn: Uint8Array;
  /**
   * The normal equations' decayed sums, with w = e^((t − t0)/τ) so that they
   * decay exactly as time moves: the Gram matrix Σ w·x·xᵀ (columns × columns,
   * row-major) and the moments Σ w·x·r of the clipped targets r.
   */
  readonly #gram: Float64Array;
  readonly #moments: Float64Array;
  #beta: Float64Array;
  #t0: number | undefined;
  #lastT = Number.NEGATIVE_INFINITY;
  #sinceFit = 0;
  /** Per observed sale, in time order: its time, ln price (ETH) and feature row. */
  readonly #times: number[] = [];
  readonly #lnPrices: number[] = [];
  readonly #rows: FeatureVector[] = [];
  /** Per sale: ln p − x·β, and the fit of β it was computed with. */
  readonly #adjusted: number[] = [];
  readonly #fitOf: number[] = [];
  #fits = 0;
  #scratch = new Float64Array(64);
  readonly #own = new Map<string, { t: number; u: number }[]>();
  /** Per column, the decayed sums Σ w·|error| and Σ w of the sales that had it (comparableSpread), and of every sale (the last entry). */
  readonly #absError: Float64Array;
  readonly #absWeight: Float64Array;
  readonly #tau: number;
  /** ln 2 / the own history's half-life in seconds. */
  readonly #ownRate: number;

  constructor(space: FeatureSpace, params: ModelParams = DEFAULT_PARAMS) {
    this.#space = space;
    this.#params = params;
    this.#columns = space.names.length;
    this.#valueColumn = Uint8Array.from(space.names, (n) => (isRarityColumn(n) ? 0 : 1));
    this.#ridge = Float64Array.from(this.#valueColumn, (v) => (v === 1 ? params.ridge : params.rarityRidge));
    this.#gram = new Float64Array(this.#columns * this.#columns);
    this.#moments = new Float64Array(this.#columns);
    this.#beta = new Float64Array(this.#columns);
    this.#absError = new Float64Array(this.#columns + 1);
    this.#absWeight = new Float64Array(this.#columns + 1);
    this.#tau = (params.traitHalfLifeDays * DAY) / Math.LN2;
    this.#ownRate = Math.LN2 / (params.ownHalfLifeDays * DAY);
  }

  #features(assetId: string): FeatureVector {
    return this.#space.byAsset.get(assetId) ?? EMPTY;
  }

  #dot(x: FeatureVector): number {
    let s = 0;
    for (let k = 0; k < x.ids.length; k++) s += this.#beta[x.ids[k]!]! * x.values[k]!;
    return s;
  }

  /** How many observed sales are before t (sales come in time order). */
  #before(t: number): number {
    let to = this.#times.length;
    while (to > 0 && this.#times[to - 1]! >= t) to--;
    return to;
  }

  /** e^((now − t0)/τ)⁻¹: what turns the decayed sums into weights relative to the latest sale. */
  #weightScale(): number {
    return Math.exp(-(this.#lastT - (this.#t0 ?? this.#lastT)) / this.#tau);
  }

  /** The level window before t: [from, to) indices of the sales. */
  #window(t: number): [number, number] {
    const to = this.#before(t);
    let from = to;
    const since = t - this.#params.levelDays * DAY;
    while (from > 0 && to - from < this.#params.levelMax && (this.#times[from - 1]! >= since || to - from < this.#params.levelMin)) from--;
    return [from, to];
  }

  /** The last level computed, reused while neither t, the sales nor β change (derive appraises every token at one t). */
  #levelCache: { t: number; sales: number; beta: Float64Array; value: { level: number; n: number; spread: number } | undefined } | undefined;

  #level(t: number): { level: number; n: number; spread: number } | undefined {
    const c = this.#levelCache;
    if (c !== undefined && c.t === t && c.sales === this.#times.length && c.beta === this.#beta) return c.value;
    const value = this.#computeLevel(t);
    this.#levelCache = { t, sales: this.#times.length, beta: this.#beta, value };
    return value;
  }

  #computeLevel(t: number): { level: number; n: number; spread: number } | undefined {
    const [from, to] = this.#window(t);
    if (to === from) return undefined;
    const n = to - from;
    // Scratch arrays reused across calls (at most levelMax + levelMin values).
    if (this.#scratch.length < n) this.#scratch = new Float64Array(2 * n);
    const z = this.#scratch;
    for (let i = from; i < to; i++) {
      // Each sale's x·β is computed once per fit of β, not once per level.
      if (this.#fitOf[i] !== this.#fits) {
        this.#fitOf[i] = this.#fits;
        this.#adjusted[i] = this.#lnPrices[i]! - this.#dot(this.#rows[i]!);
      }
      z[i - from] = this.#adjusted[i]!;
    }
    insertionSort(z, n);
    const level = medianOfSorted(z, n);
    for (let i = 0; i < n; i++) z[i] = Math.abs(z[i]! - level);
    insertionSort(z, n);
    return { level, n, spread: medianOfSorted(z, n) };
  }

  #ownEffect(assetId: string, t: number): { a: number; w: number } {
    const own = this.#own.get(assetId);
    if (!own) return { a: 0, w: 0 };
    let w = 0;
    let wu = 0;
    for (const s of own) {
      if (s.t >= t) continue;
      const k = Math.exp(-(t - s.t) * this.#ownRate);
      w += k;
      wu += k * s.u;
    }
    return { a: wu / (w + this.#params.ownPrior), w };
  }

  /** Adds a sale; sales must come in time order. */
  observe(sale: ModelSale): void {
    if (sale.timestamp < this.#lastT) throw new Error("sales must be observed in time order");
    this.#lastT = sale.timestamp;
    const eth = Number(sale.price) / WEI_PER_ETH;
    if (!(eth > 0)) return;
    const y = Math.log(eth);
    const x = this.#features(sale.assetId);
    this.#refitIfDue();
    const lv = this.#level(sale.timestamp);
    if (lv !== undefined) {
      const fitted = this.#dot(x);
      const error = y - lv.level - fitted;
      const target = fitted + clamp(error, this.#params.clip);
      this.#t0 ??= sale.timestamp;
      const w = Math.exp((sale.timestamp - this.#t0) / this.#tau);
      const f = this.#columns;
      for (let i = 0; i < x.ids.length; i++) {
        const col = x.ids[i]!;
        const wx = w * x.values[i]!;
        this.#moments[col] = this.#moments[col]! + wx * target;
        for (let j = 0; j < x.ids.length; j++) {
          const idx = col * f + x.ids[j]!;
          this.#gram[idx] = this.#gram[idx]! + wx * x.values[j]!;
        }
      }
      const u = clamp(error, this.#params.clip);
      this.#addAbsError(f, w, Math.abs(u));
      for (let i = 0; i < x.ids.length; i++) if (this.#valueColumn[x.ids[i]!] === 1) this.#addAbsError(x.ids[i]!, w, Math.abs(u));
      let own = this.#own.get(sale.assetId);
      if (!own) this.#own.set(sale.assetId, (own = []));
      own.push({ t: sale.timestamp, u });
      this.#sinceFit++;
    }
    this.#times.push(sale.timestamp);
    this.#lnPrices.push(y);
    this.#rows.push(x);
    this.#adjusted.push(0);
    this.#fitOf.push(-1);
  }

  #addAbsError(column: number, w: number, e: number): void {
    this.#absError[column] = this.#absError[column]! + w * e;
    this.#absWeight[column] = this.#absWeight[column]! + w;
  }

  /** Estimate.comparableSpread of a token with features x (0 before any sale was appraised). */
  #comparableSpread(x: FeatureVector): number {
    const all = this.#columns;
    if (this.#absWeight[all] === 0) return 0;
    // The weights are relative to the same t0, so their ratios need no rescaling; the prior is COMPARABLE_PRIOR sales of now's weight.
    const prior = COMPARABLE_PRIOR / this.#weightScale();
    const overall = this.#absError[all]! / this.#absWeight[all]!;
    let spread = overall;
    for (let k = 0; k < x.ids.length; k++) {
      const c = x.ids[k]!;
      if (this.#valueColumn[c] === 1) spread = Math.max(spread, (this.#absError[c]! + prior * overall) / (this.#absWeight[c]! + prior));
    }
    return spread;
  }

  /** Days since the token's own latest sale before t. */
  #ownStaleDays(assetId: string, t: number): number {
    const own = this.#own.get(assetId);
    if (own !== undefined) for (let i = own.length - 1; i >= 0; i--) if (own[i]!.t < t) return Math.min(NEVER_SOLD_DAYS, (t - own[i]!.t) / DAY);
    return NEVER_SOLD_DAYS;
  }

  #refitIfDue(): void {
    if (this.#sinceFit === 0 || this.#sinceFit < Math.max(MIN_REFIT_SALES, this.#params.refitShare * this.#times.length)) return;
    this.#sinceFit = 0;
    this.#beta = this.#solve(this.#weightScale());
    this.#fits++;
  }

  /**
   * β of (scale·G + Λ)·β = scale·m (G the Gram matrix, m the moments) over the columns some sale has touched:
   * SWEEPS Gauss-Seidel sweeps from the last β. Refits are frequent and β
   * moves little between them, so a few sweeps track the exact solution; a
   * sweep costs one pass over the matrix where a factorization costs a
   * third of its size times more (hundreds of columns for a collection
   * of a few trait types).
   */
  #solve(scale: number): Float64Array {
    const f = this.#columns;
    const gram = this.#gram;
    const beta = Float64Array.from(this.#beta);
    const moments = this.#moments;
    const ridge = this.#ridge;
    const active: number[] = [];
    for (let i = 0; i < f; i++) if (gram[i * f + i]! > 0) active.push(i);
    const idx = Int32Array.from(active);
    const n = idx.length;
    for (let sweep = 0; sweep < SWEEPS; sweep++) {
      for (let p = 0; p < n; p++) {
        const i = idx[p]!;
        const row = i * f;
        let dot = 0;
        for (let q = 0; q < n; q++) {
          const j = idx[q]!;
          dot += gram[row + j]! * beta[j]!;
        }
        const gii = gram[row + i]!;
        dot -= gii * beta[i]!;
        beta[i] = (scale * (moments[i]! - dot)) / (scale * gii + ridge[i]!);
      }
    }
    return beta;
  }

  /** The parts of the token's estimate at time t from the sales observed so far; undefined before any sale. */
  estimate(assetId: string, t: number): Estimate | undefined {
    this.#refitIfDue();
    const lv = this.#level(t);
    if (lv === undefined) return undefined;
    const x = this.#features(assetId);
    const traits = this.#dot(x);
    const own = this.#ownEffect(assetId, t);
    const last = this.#before(t);
    const scale = this.#weightScale();
    let evidence = Number.POSITIVE_INFINITY;
    for (let k = 0; k < x.ids.length; k++) {
      const c = x.ids[k]!;
      if (this.#valueColumn[c] === 1) evidence = Math.min(evidence, this.#gram[c * this.#columns + c]! * scale);
    }
    return {
      ln: lv.level + traits + own.a,
      level: lv.level,
      traits,
      own: own.a,
      ownWeight: own.w,
      levelSales: lv.n,
      levelSpread: lv.spread,
      staleDays: last > 0 ? (t - this.#times[last - 1]!) / DAY : 0,
      ownStaleDays: this.#ownStaleDays(assetId, t),
      comparableSpread: this.#comparableSpread(x),
      traitEvidence: Number.isFinite(evidence) ? evidence : 0,
    };
  }
}

export function toWei(lnEth: number): bigint {
  const v = Math.exp(lnEth) * WEI_PER_ETH;
  return Number.isFinite(v) && v >= 1 ? BigInt(Math.round(v)) : 0n;
}

/**
 * A value to the precision its evidence supports (docs/appraisal-model.md,
 * "Rounding"): to the power of ten at or below a tenth of its expected
 * error, `error` being a relative one (a mean absolute ln error, e.g.
 * calibration.ts impliedError of its confidence). A value whose error is
 * expected near 10% keeps three significant digits, near 1% four, near
 * 100% one or two; the digits after those are noise that looked like
 * knowledge (19 of them before).
 */
export function roundToEvidence(value: bigint, error: number): bigint {
  if (value <= 0n) return value;
  const step = Number(value) * error * 0.1;
  if (!(step >= 10)) return value;
  const unit = 10n ** BigInt(Math.floor(Math.log10(step)));
  return ((value + unit / 2n) / unit) * unit;
}

/** Confidence as api.md writes it: a decimal fraction in text. */
export function formatConfidence(c: number): string {
  return c.toFixed(4);
}
