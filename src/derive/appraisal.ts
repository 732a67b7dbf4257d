// Appraisals: a time-decayed, trait-adjusted comparable-sales estimate.
// Pure and incremental: feed sales in time order with observe(), ask for a
// token's value at any time after them with appraise(). The backtest uses
// the same model, so its figures describe exactly what derive serves.
//
//   level L(T)   median ln(price) of the collection's sales in the 7 days
//                before T (the last 25 sales when the week has fewer than 5)
//   residual     ρ = ln(price) − L(time of sale), for every observed sale
//   trait effect e(t,v) = W/(W + K) · (mean ρ of sales of tokens with value v
//                of trait t − mean ρ of all sales), means and W weighted by a
//                90-day half-life; null categories and the trait count count
//   token        ρ̂ = mean ρ + Σ_t e(t, v_t), blended with the token's own last
//                sale (weight 2·0.5^(age/30 days)); value = exp(L(T) + ρ̂)
//   confidence   (1 − e^(−evidence/8)) · e^(−spread), where evidence is the
//                decayed number of comparable sales per trait plus the own
//                sale, and spread the decayed std dev of residuals

const DAY = 86_400;
const LEVEL_WINDOW = 7 * DAY;
const LEVEL_MIN_SALES = 5;
const LEVEL_FALLBACK_SALES = 25;
const TRAIT_HALF_LIFE = 90 * DAY;
const OWN_HALF_LIFE = 30 * DAY;
const SHRINK = 2;

export type Traits = ReadonlyMap<string, string>;

export interface ObservedSale {
  assetId: string;
  timestamp: number;
  /** Wei. */
  price: bigint;
}

export interface Appraisal {
  /** Wei, rounded to an integer. */
  fairMarketValue: bigint;
  /** In [0, 1]. */
  confidence: number;
}

interface Stat {
  w: number;
  wr: number;
  wr2: number;
}

const emptyStat = (): Stat => ({ w: 0, wr: 0, wr2: 0 });

/** A sorted multiset of numbers with O(1) median (the level window). */
class SortedWindow {
  #values = new Float64Array(64);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  #index(x: number): number {
    let lo = 0;
    let hi = this.#size;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#values[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(x: number): void {
    if (this.#size === this.#values.length) {
      const bigger = new Float64Array(this.#values.length * 2);
      bigger.set(this.#values);
      this.#values = bigger;
    }
    const i = this.#index(x);
    this.#values.copyWithin(i + 1, i, this.#size);
    this.#values[i] = x;
    this.#size++;
  }

  remove(x: number): void {
    const i = this.#index(x);
    this.#values.copyWithin(i, i + 1, this.#size);
    this.#size--;
  }

  median(): number {
    const n = this.#size;
    const a = this.#values;
    return n % 2 === 1 ? a[(n - 1) / 2]! : (a[n / 2 - 1]! + a[n / 2]!) / 2;
  }
}

export class AppraisalModel {
  readonly #traitsOf: (assetId: string) => Traits | undefined;
  readonly #window = new SortedWindow();
  readonly #windowSales: { t: number; x: number }[] = [];
  #windowStart = 0;
  readonly #recent: number[] = [];
  readonly #traitStats = new Map<string, Stat>();
  readonly #all = emptyStat();
  readonly #lastSale = new Map<string, { t: number; residual: number; price: bigint }>();
  /** Decay weights are e^((t − t0)/τ), so that sums decay exactly as T moves. */
  #t0: number | undefined;

  constructor(traitsOf: (assetId: string) => Traits | undefined) {
    this.#traitsOf = traitsOf;
  }

  /** ln(price) level of the collection just before time t (sales observed so far). */
  level(t: number): number | undefined {
    const sales = this.#windowSales;
    while (this.#windowStart < sales.length && sales[this.#windowStart]!.t < t - LEVEL_WINDOW) {
      this.#window.remove(sales[this.#windowStart]!.x);
      this.#windowStart++;
    }
    if (this.#windowStart > 4096 && this.#windowStart * 2 > sales.length) {
      sales.splice(0, this.#windowStart);
      this.#windowStart = 0;
    }
    if (this.#window.size >= LEVEL_MIN_SALES) return this.#window.median();
    if (this.#recent.length === 0) return undefined;
    const sorted = [...this.#recent].sort((a, b) => a - b);
    const n = sorted.length;
    return n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  }

  /** The collection's median price over the week before t: the naive baseline. */
  levelPrice(t: number): bigint | undefined {
    const level = this.level(t);
    return level === undefined ? undefined : toWei(level);
  }

  lastSalePrice(assetId: string): bigint | undefined {
    return this.#lastSale.get(assetId)?.price;
  }

  /** Adds a sale; sales must come in time order. */
  observe(sale: ObservedSale): void {
    const x = Math.log(Number(sale.price) || 1);
    const level = this.level(sale.timestamp);
    this.#t0 ??= sale.timestamp;
    if (level !== undefined) {
      const residual = x - level;
      const w = Math.exp((sale.timestamp - this.#t0) / (TRAIT_HALF_LIFE / Math.LN2));
      add(this.#all, w, residual);
      const traits = this.#traitsOf(sale.assetId);
      if (traits) {
        for (const [type, value] of traits) {
          const key = `${type}\u0000${value}`;
          let s = this.#traitStats.get(key);
          if (!s) this.#traitStats.set(key, (s = emptyStat()));
          add(s, w, residual);
        }
      }
      this.#lastSale.set(sale.assetId, { t: sale.timestamp, residual, price: sale.price });
    } else {
      this.#lastSale.set(sale.assetId, { t: sale.timestamp, residual: 0, price: sale.price });
    }
    this.#windowSales.push({ t: sale.timestamp, x });
    this.#window.add(x);
    this.#recent.push(x);
    if (this.#recent.length > LEVEL_FALLBACK_SALES) this.#recent.shift();
  }

  /** The token's value at time t from the sales observed so far; undefined before any sale. */
  appraise(assetId: string, t: number, traits: Traits | undefined = this.#traitsOf(assetId)): Appraisal | undefined {
    const level = this.level(t);
    if (level === undefined) return undefined;
    const decay = this.#t0 === undefined ? 1 : Math.exp(-(t - this.#t0) / (TRAIT_HALF_LIFE / Math.LN2));
    const overall = this.#all.w > 0 ? this.#all.wr / this.#all.w : 0;
    let estimate = overall;
    let evidence = 0;
    let types = 0;
    if (traits) {
      for (const [type, value] of traits) {
        types++;
        const s = this.#traitStats.get(`${type}\u0000${value}`);
        if (!s || s.w === 0) continue;
        const weight = s.w * decay;
        estimate += (weight / (weight + SHRINK)) * (s.wr / s.w - overall);
        evidence += weight;
      }
    }
    evidence = types > 0 ? evidence / types : 0;
    const own = this.#lastSale.get(assetId);
    if (own && own.t <= t) {
      const w = 2 * 0.5 ** ((t - own.t) / OWN_HALF_LIFE);
      estimate = (estimate + w * own.residual) / (1 + w);
      evidence += 4 * w;
    }
    const variance = this.#all.w > 0 ? Math.max(0, this.#all.wr2 / this.#all.w - overall ** 2) : 1;
    const confidence = (1 - Math.exp(-evidence / 8)) * Math.exp(-Math.sqrt(variance));
    return { fairMarketValue: toWei(level + estimate), confidence: Math.min(1, Math.max(0, confidence)) };
  }
}

function add(s: Stat, w: number, r: number): void {
  s.w += w;
  s.wr += w * r;
  s.wr2 += w * r * r;
}

function toWei(lnPrice: number): bigint {
  const v = Math.exp(lnPrice);
  return Number.isFinite(v) && v >= 1 ? BigInt(Math.round(v)) : 0n;
}

/** Confidence as api.md writes it: a decimal fraction in text. */
export function formatConfidence(c: number): string {
  return c.toFixed(4);
}
