import { describe, expect, it } from "vitest";
import { appraiseCollection, prequential } from "../../src/derive/appraise.js";
import { AppraisalModel, roundToEvidence } from "../../src/derive/appraisal.js";
import { solveSpd } from "../../src/derive/numeric.js";
import { backtestCollection, type Prediction } from "../../src/derive/backtest.js";
import { byTier, calibration, errorFigures, resolution, shareNoise } from "../../src/derive/backtest-report.js";
import { fitLogistic, impliedError, inBand, laplaceBand } from "../../src/derive/calibration.js";
import { featureSpace } from "../../src/derive/features.js";
import type { TokenTraits } from "../../src/derive/rarity.js";
import { Random } from "../../src/demo/random.js";
import type { SaleForModel } from "../../src/store/ports/derive.js";

// The appraisal model, its backtest and its figures, on small synthetic
// markets whose answers are known.

const DAY = 86_400;
const ETH = 10n ** 18n;

/** 300 tokens with a type and 0-3 accessories; the market's level doubles over the period. */
function market(seed: number, count = 3000): { tokens: TokenTraits[]; sales: SaleForModel[] } {
  const rnd = new Random(seed);
  const types = ["plain", "plain", "plain", "plain", "rare"];
  const accessories = ["hat", "pipe", "earring", "mask"];
  const tokens: TokenTraits[] = Array.from({ length: 300 }, (_, i) => {
    const attributes = [{ trait_type: "type", value: types[rnd.int(0, types.length - 1)]! }];
    for (const a of accessories) if (rnd.next() < 0.3) attributes.push({ trait_type: "accessory", value: a });
    return { assetId: String(i), attributes };
  });
  const premium = (t: TokenTraits) =>
    (t.attributes.some((a) => a.value === "rare") ? 1.5 : 0) + 0.2 * t.attributes.filter((a) => a.trait_type === "accessory").length;
  const sales: SaleForModel[] = [];
  const start = 1_600_000_000;
  for (let i = 0; i < count; i++) {
    const t = start + Math.floor((i * 400 * DAY) / count);
    const token = tokens[rnd.int(0, tokens.length - 1)]!;
    const level = Math.log(1 + i / count);
    const eth = Math.exp(level + premium(token) + rnd.normal(0, 0.1));
    sales.push({ assetId: token.assetId, timestamp: t, price: BigInt(Math.round(eth * 1e6)) * 10n ** 12n, buyer: "0x" });
  }
  return { tokens, sales };
}

describe("features", () => {
  it("count every attribute, a repeated trait type included, with the attribute count and per-type rarity", () => {
    const space = featureSpace([
      { assetId: "1", attributes: [{ trait_type: "type", value: "Male" }, { trait_type: "accessory", value: "Hat" }, { trait_type: "accessory", value: "Pipe" }] },
      { assetId: "2", attributes: [{ trait_type: "type", value: "Male" }, { trait_type: "accessory", value: "Hat" }] },
    ]);
    const names = (id: string) => [...space.byAsset.get(id)!.ids].map((i) => space.names[i]);
    expect(names("1")).toEqual(expect.arrayContaining(["type=male", "accessory=hat", "accessory=pipe", "count=3", "rarity:type", "rarity:accessory"]));
    expect(names("2")).toContain("count=2");
    expect(names("2")).not.toContain("accessory=pipe");
    const v = space.byAsset.get("1")!;
    const rarity = (type: string) => v.values[[...v.ids].indexOf(space.names.indexOf(`rarity:${type}`))]!;
    // hat: 2 of 2 tokens (−ln 1 = 0); pipe: 1 of 2 (−ln ½).
    expect(rarity("accessory")).toBeCloseTo(Math.log(2), 12);
    expect(rarity("type")).toBeCloseTo(0, 12);
  });
});

describe("the model", () => {
  it("learns trait premiums and follows the market level", () => {
    const { tokens, sales } = market(1);
    const model = new AppraisalModel(featureSpace(tokens));
    for (const s of sales) model.observe(s);
    const at = sales[sales.length - 1]!.timestamp + 1;
    const plain = tokens.find((t) => t.attributes.length === 1 && t.attributes[0]!.value === "plain")!;
    const rare = tokens.find((t) => t.attributes.length === 1 && t.attributes[0]!.value === "rare")!;
    // The level has doubled: a plain token with no accessory is worth ~2 ETH, a rare one ~2·e^1.5.
    expect(Math.exp(model.estimate(plain.assetId, at)!.ln)).toBeGreaterThan(1.7);
    expect(Math.exp(model.estimate(plain.assetId, at)!.ln)).toBeLessThan(2.3);
    expect(model.estimate(rare.assetId, at)!.ln - model.estimate(plain.assetId, at)!.ln).toBeGreaterThan(1.2);
  });

  it("refuses sales out of time order", () => {
    const model = new AppraisalModel(featureSpace([]));
    model.observe({ assetId: "1", timestamp: 100, price: ETH });
    expect(() => model.observe({ assetId: "1", timestamp: 99, price: ETH })).toThrow(/time order/);
  });

  it("a wash trade at a thousandth of the price moves no appraisal by more than the clip allows", () => {
    const { tokens, sales } = market(2, 1000);
    const a = new AppraisalModel(featureSpace(tokens));
    const b = new AppraisalModel(featureSpace(tokens));
    for (const s of sales) {
      a.observe(s);
      b.observe(s);
    }
    const last = sales[sales.length - 1]!;
    b.observe({ assetId: "7", timestamp: last.timestamp + 1, price: 10n ** 15n / 1000n });
    const at = last.timestamp + 2;
    for (const id of ["1", "7", "42"]) {
      // Its own asset by at most clip / (1 + ownPrior) = 0.2 (plus the level's and premiums' small moves); the others barely.
      expect(Math.abs(a.estimate(id, at)!.ln - b.estimate(id, at)!.ln)).toBeLessThan(id === "7" ? 0.25 : 0.05);
    }
  });
});

describe("the backtest", () => {
  it("never looks ahead: a planted sale at an absurd price moves no earlier appraisal", () => {
    const { tokens, sales } = market(3);
    const space = featureSpace(tokens);
    const at = sales[Math.floor(sales.length * 0.9)]!.timestamp;
    // A stable sort: the planted sale comes after the real sales of its second.
    const planted = [...sales, { assetId: "5", timestamp: at, price: 10n ** 30n, buyer: "0x" }].sort((x, y) => x.timestamp - y.timestamp);
    const a = backtestCollection(sales, space);
    const b = backtestCollection(planted, space);
    // Both hold out from the same sale on; those up to the planted one's second are appraised before it is seen.
    expect(Math.floor(planted.length * 0.8)).toBe(Math.floor(sales.length * 0.8));
    const n = sales.filter((s) => s.timestamp <= at).length - Math.floor(sales.length * 0.8);
    expect(n).toBeGreaterThan(100);
    for (let i = 0; i < n; i++) {
      expect(b[i]!.model).toBe(a[i]!.model);
      expect(b[i]!.confidence).toBe(a[i]!.confidence);
    }
    // After it, the absurd price does move appraisals: the comparison above can fail.
    expect(b.slice(n + 1).some((x, i) => x.model !== a[n + i]!.model)).toBe(true);
  });

  it("is deterministic: the same sales give the same appraisals and figures", () => {
    const { tokens, sales } = market(4);
    const space = featureSpace(tokens);
    expect(backtestCollection(sales, space)).toEqual(backtestCollection(sales, space));
    const assets = tokens.map((t) => t.assetId);
    expect([...appraiseCollection(tokens, sales, assets)]).toEqual([...appraiseCollection(tokens, sales, assets)]);
  });

  it("beats both baselines on a market the model can learn", () => {
    const { tokens, sales } = market(5);
    const ps = backtestCollection(sales, featureSpace(tokens));
    const model = errorFigures(ps, "model").mdape;
    expect(model).toBeLessThan(errorFigures(ps, "weekMedian").mdape);
    expect(model).toBeLessThan(errorFigures(ps, "lastSale").mdape);
  });

  it("an open listing below the model's value bounds the appraisal", () => {
    const { tokens, sales } = market(6, 500);
    const assets = ["1", "2"];
    const free = [...appraiseCollection(tokens, sales, assets)];
    const listed = [...appraiseCollection(tokens, sales, assets, new Map([["1", 1000n], ["2", 10n ** 24n]]))];
    expect(listed[0]!.fairMarketValue).toBe(1000n);
    expect(listed[1]!.fairMarketValue).toBe(free[1]!.fairMarketValue);
  });
});

/** A prediction with the given values (the estimate is irrelevant to the figures). */
const p = (actual: number, model: number, confidence = 0.5, relative = 1, constantConfidence = 0.5): Prediction =>
  ({ actual, model, weekMedian: actual * 2, lastSale: actual, confidence, relative, constantConfidence }) as Prediction;

describe("confidence from the token's own evidence", () => {
  // A market where tokens of one type ("wild", a fifth of them, priced as
  // the others) trade far from their value and the rest near it: only the
  // spread of comparable sales (those sharing the token's traits) tells
  // them apart. The market's spread is the same for both, and neither the
  // premium nor the evidence differ.
  function uneven(seed: number): { tokens: TokenTraits[]; sales: SaleForModel[]; rare: (id: string) => boolean } {
    const rnd = new Random(seed);
    const tokens: TokenTraits[] = Array.from({ length: 400 }, (_, i) => ({
      assetId: String(i),
      attributes: [{ trait_type: "type", value: i % 5 === 0 ? "wild" : "plain" }, { trait_type: "hat", value: ["red", "blue", "none"][i % 3]! }],
    }));
    const rare = (id: string) => Number(id) % 5 === 0;
    const sales: SaleForModel[] = [];
    const start = 1_600_000_000;
    for (let i = 0; i < 6000; i++) {
      const id = String(rnd.int(0, tokens.length - 1));
      const eth = Math.exp(rnd.normal(0, rare(id) ? 0.45 : 0.08));
      sales.push({ assetId: id, timestamp: start + i * 600, price: BigInt(Math.round(eth * 1e6)) * 10n ** 12n, buyer: "0x" });
    }
    return { tokens, sales, rare };
  }

  it("a wild token's confidence is lower than a plain one's, each near the share of its kind's next sales in the band", () => {
    const { tokens, sales, rare } = uneven(21);
    // Each sale of the latter half appraised just before it (the backtest's pass), by kind of token.
    const groups = { wild: { confidence: 0, hits: 0, n: 0 }, plain: { confidence: 0, hits: 0, n: 0 } };
    prequential(sales, featureSpace(tokens), undefined, {
      appraised({ index, sale, estimate, confidence }) {
        if (index < sales.length / 2) return;
        const g = groups[rare(sale.assetId) ? "wild" : "plain"];
        g.confidence += confidence;
        g.n++;
        if (inBand(Math.exp(estimate.ln), Number(sale.price) / 1e18)) g.hits++;
      },
    });
    for (const [name, g] of Object.entries(groups)) {
      const mean = g.confidence / g.n;
      const observed = g.hits / g.n;
      expect(Math.abs(mean - observed), `${name}: mean confidence ${mean.toFixed(3)}, observed ${observed.toFixed(3)}`).toBeLessThan(0.05);
    }
    const served = [...appraiseCollection(tokens, sales, tokens.map((t) => t.assetId))];
    const rareMean = served.filter((a) => rare(a.assetId)).reduce((s, a) => s + a.confidence, 0) / 80;
    const plainMean = served.filter((a) => !rare(a.assetId)).reduce((s, a) => s + a.confidence, 0) / 320;
    expect(rareMean).toBeLessThan(plainMean - 0.3);
  });
});

describe("values rounded to their evidence", () => {
  it("impliedError inverts laplaceBand", () => {
    for (const m of [0.01, 0.05, 0.1, 0.3, 1]) expect(impliedError(laplaceBand(m))).toBeCloseTo(m, 6);
    expect(impliedError(1)).toBe(0.001);
    expect(impliedError(0)).toBe(10);
  });

  it("to the power of ten at or below a tenth of the expected error", () => {
    const v = 12_345_678_901_234_567_891n;
    expect(roundToEvidence(v, 0.1)).toBe(12_300_000_000_000_000_000n);
    expect(roundToEvidence(v, 0.01)).toBe(12_350_000_000_000_000_000n);
    expect(roundToEvidence(v, 1)).toBe(12_000_000_000_000_000_000n);
    expect(roundToEvidence(98_765_432_109_876_543_210n, 0.1)).toBe(98_800_000_000_000_000_000n);
    // Half up, to the next power of ten when it comes to that; a value too small to round is kept.
    expect(roundToEvidence(9_996n * 10n ** 16n, 0.1)).toBe(1_000n * 10n ** 17n);
    expect(roundToEvidence(7n, 0.5)).toBe(7n);
  });

  it("an appraisal keeps the digits its confidence supports, and a listing below it bounds it to the wei", () => {
    const { tokens, sales } = market(6, 500);
    for (const a of appraiseCollection(tokens, sales, tokens.map((t) => t.assetId))) {
      const digits = a.fairMarketValue.toString().replace(/0+$/, "").length;
      expect(digits).toBeLessThanOrEqual(Math.max(1, Math.ceil(-Math.log10(impliedError(a.confidence) * 0.1))) + 1);
    }
    const [listed] = appraiseCollection(tokens, sales, ["1"], new Map([["1", 1_234_567n]]));
    expect(listed!.fairMarketValue).toBe(1_234_567n);
  });
});

describe("confidence on thin data", () => {
  // Collections with 1, 5 and 20 sales, each a market of its own: a level,
  // and a dispersion of ln prices drawn from 0.1 to 0.7 (NFT markets span
  // that). Each collection's appraisal of a token is scored against the
  // next sale of that market. Confidence must be the share that lands in
  // the band, not the near-certainty a spread of one or five prices gives
  // (a single 5-wei sale was appraised with confidence 0.74).
  const COLLECTIONS = 600;
  for (const n of [1, 5, 20]) {
    it(`${n} sale${n === 1 ? "" : "s"}: mean confidence within 0.1 of the share of next sales in the band`, () => {
      const rnd = new Random(1000 + n);
      const tokens: TokenTraits[] = Array.from({ length: 20 }, (_, i) => ({ assetId: String(i), attributes: [{ trait_type: "type", value: "plain" }] }));
      let confidence = 0;
      let hits = 0;
      for (let c = 0; c < COLLECTIONS; c++) {
        const level = rnd.normal(0, 2);
        const sigma = 0.1 + 0.6 * rnd.next();
        const price = () => BigInt(Math.max(1, Math.round(Math.exp(level + rnd.normal(0, sigma)) * 1e9))) * 10n ** 9n;
        const start = 1_700_000_000;
        const sales: SaleForModel[] = Array.from({ length: n }, (_, i) => ({
          assetId: String(rnd.int(0, tokens.length - 1)), timestamp: start + i * DAY, price: price(), buyer: "0x",
        }));
        const [a] = [...appraiseCollection(tokens, sales, ["19"])];
        confidence += a!.confidence;
        if (inBand(Number(a!.fairMarketValue), Number(price()))) hits++;
      }
      const mean = confidence / COLLECTIONS;
      const observed = hits / COLLECTIONS;
      expect(Math.abs(mean - observed), `mean confidence ${mean.toFixed(3)}, observed ${observed.toFixed(3)}`).toBeLessThan(0.1);
      if (n === 1) expect(mean).toBeLessThan(0.45);
    });
  }
});

describe("figures", () => {
  it("error figures: MdAPE and the shares within ±10% and ±20% of the predicted value", () => {
    const ps = [p(100, 100), p(100, 105), p(100, 115), p(100, 130), p(100, 50)];
    const f = errorFigures(ps, "model");
    expect(f.mdape).toBeCloseTo(0.15, 12);
    // Within ±10% of the prediction: 100 (of 100) and 100 (of 105); ±20%: also 100 (of 115).
    expect(f.within10).toBeCloseTo(2 / 5, 12);
    expect(f.within20).toBeCloseTo(3 / 5, 12);
    expect(errorFigures(ps, "weekMedian").mdape).toBeCloseTo(1, 12);
    expect(errorFigures(ps, "lastSale").mdape).toBe(0);
  });

  it("tiers: the lower half, up to the 95th percentile, and the top 5% by relative price", () => {
    const ps = Array.from({ length: 100 }, (_, i) => p(1, 1, 0.5, i));
    const t = byTier([...ps].reverse());
    expect(t.floor.map((x) => x.relative)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(t.middle.map((x) => x.relative)).toEqual(Array.from({ length: 45 }, (_, i) => 50 + i));
    expect(t.top.map((x) => x.relative)).toEqual([95, 96, 97, 98, 99]);
  });

  it("calibration: deciles by confidence, observed shares and Brier scores", () => {
    // Ten groups of ten; in group g, g of the ten sales land in the band and confidence says g/10.
    const ps: Prediction[] = [];
    for (let g = 0; g < 10; g++) for (let k = 0; k < 10; k++) ps.push(p(100, k < g ? 100 : 200, g / 10, 1, 0.45));
    const c = calibration(ps);
    expect(c.deciles).toHaveLength(10);
    c.deciles.forEach((d, g) => {
      expect(d.count).toBe(10);
      expect(d.meanConfidence).toBeCloseTo(g / 10, 12);
      expect(d.observed).toBeCloseTo(g / 10, 12);
    });
    // Brier: mean over groups of g/10·(1 − g/10); the constant 0.45 scores mean((0.45 − hit)²).
    const brier = Array.from({ length: 10 }, (_, g) => (g / 10) * (1 - g / 10)).reduce((a, b) => a + b) / 10;
    expect(c.brier).toBeCloseTo(brier, 12);
    expect(c.observed).toBeCloseTo(0.45, 12);
    expect(c.constantBrier).toBeCloseTo(0.45 * 0.55, 12);
    expect(c.hindsightBrier).toBeCloseTo(0.45 * 0.55, 12);
  });

  it("resolution: the share within ±20% by quintile of an input, and the spread sampling alone gives", () => {
    // 100 predictions; `relative` is the input. The hit rate rises by quintile: 0, 5, 10, 15, 20 hits of 20.
    const ps: Prediction[] = [];
    for (let q = 0; q < 5; q++) for (let k = 0; k < 20; k++) ps.push(p(100, k < q * 5 ? 100 : 300, 0.5, q * 20 + k));
    const groups = resolution([...ps].reverse(), (x) => x.relative);
    expect(groups.map((g) => g.from)).toEqual([0, 20, 40, 60, 80]);
    expect(groups.map((g) => g.count)).toEqual([20, 20, 20, 20, 20]);
    expect(groups.map((g) => g.observed)).toEqual([0, 0.25, 0.5, 0.75, 1]);
    // An input with one value for all: the groups follow the given order (quarters of 25 with 5, 10, 15, 20 hits).
    expect(resolution(ps, () => 1, 4).map((g) => g.observed)).toEqual([0.2, 0.4, 0.6, 0.8]);
    expect(resolution([], () => 1)).toEqual([]);
    // 2·sqrt(p(1 − p)/n): 2·sqrt(0.25/100) = 0.1.
    expect(shareNoise(0.5, 100)).toBeCloseTo(0.1, 12);
    expect(shareNoise(0.5, 0)).toBeNaN();
  });

  it("the band is ±20% of the value", () => {
    expect(inBand(100, 80)).toBe(true);
    expect(inBand(100, 120)).toBe(true);
    expect(inBand(100, 79.9)).toBe(false);
    expect(inBand(100, 120.1)).toBe(false);
  });

  it("laplaceBand: wide errors rarely land in the band, narrow ones nearly always", () => {
    expect(laplaceBand(0.01)).toBeGreaterThan(0.99);
    expect(laplaceBand(10)).toBeLessThan(0.03);
    expect(laplaceBand(0.2)).toBeGreaterThan(laplaceBand(0.3));
  });

  /** Outcomes of P(y = 1) = σ(0.5 − 1.5·x) for x standard normal, with an intercept column. */
  function logisticSample(seed: number, n: number): { xs: Float64Array[]; ys: number[] } {
    const rnd = new Random(seed);
    const xs: Float64Array[] = [];
    const ys: number[] = [];
    for (let i = 0; i < n; i++) {
      const x = Float64Array.of(1, rnd.normal(0, 1));
      xs.push(x);
      ys.push(rnd.next() < 1 / (1 + Math.exp(-(0.5 - 1.5 * x[1]!))) ? 1 : 0);
    }
    return { xs, ys };
  }

  it("fitLogistic recovers known coefficients", () => {
    const { xs, ys } = logisticSample(9, 20_000);
    const beta = fitLogistic(xs, ys, xs.map(() => 1), new Float64Array(2), 0);
    expect(beta[0]).toBeCloseTo(0.5, 1);
    expect(beta[1]).toBeCloseTo(-1.5, 1);
  });

  it("fitLogistic converges from a start far off, and stays finite when every outcome is alike", () => {
    const { xs, ys } = logisticSample(10, 2_000);
    const ones = xs.map(() => 1);
    // The last fit's coefficients after the market turned: a full Newton step from here swung between two points forever.
    const beta = fitLogistic(xs, ys, ones, Float64Array.of(-8, 0.01), 0);
    expect(beta[0]).toBeCloseTo(0.5, 0);
    expect(beta[1]).toBeCloseTo(-1.5, 0);
    const none = fitLogistic(xs, xs.map(() => 0), ones, new Float64Array(2), 0);
    expect(Number.isFinite(none[0]!) && none[0]! < -4 && none[0]! > -40).toBe(true);
  });

  it("solveSpd solves a symmetric positive definite system", () => {
    const x = solveSpd(Float64Array.of(4, 2, 2, 3), Float64Array.of(2, 5), 2);
    expect(x[0]).toBeCloseTo(-0.5, 12);
    expect(x[1]).toBeCloseTo(2, 12);
  });
});
