import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Prediction } from "../../src/derive/backtest.js";
import { byTier, calibration, errorFigures, resolution, shareNoise } from "../../src/derive/backtest-report.js";
import { backtestStore, buildPunksStore, havePunks, PUNKS_DIR } from "../../src/derive/backtest-store.js";
import type { WritableStore } from "../../src/store/ports/writes.js";

// The appraisal model on a real market: the 10,000 CryptoPunks and their
// 6,608 sales (../shared/data, beside the checkout in CI; absent from a
// fresh clone), imported and derived by the service's own code.

if (!havePunks()) console.warn(`SKIPPED: CryptoPunks backtest needs ${PUNKS_DIR} (present in CI, absent in a fresh clone)`);

describe.skipIf(!havePunks())("CryptoPunks backtest", () => {
  let dir: string;
  let store: WritableStore;
  let ps: Prediction[];
  let rejected: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "marketdata-punks-"));
    ({ store, rejected } = await buildPunksStore(join(dir, "punks.sqlite")));
    ps = (await backtestStore(store.derive)).flatMap((c) => c.predictions);
  }, 120_000);

  afterAll(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("imports every sale but the nine without a price, and holds out the latest 20% of those no wash rule flags", () => {
    expect(rejected).toBe(9);
    // 6,599 sales, 135 of them flagged (docs/wash-trades.md; the model leaves them out): a fifth of 6,464.
    expect(ps).toHaveLength(1293);
  });

  it("the model's MdAPE is at most 0.8x the better baseline's", () => {
    const model = errorFigures(ps, "model").mdape;
    const best = Math.min(errorFigures(ps, "weekMedian").mdape, errorFigures(ps, "lastSale").mdape);
    expect(model).toBeLessThanOrEqual(0.8 * best);
  });

  it("beats both baselines in every price tier", () => {
    const tiers = byTier(ps);
    for (const [tier, part] of Object.entries(tiers)) {
      const model = errorFigures(part, "model").mdape;
      expect(model, tier).toBeLessThan(errorFigures(part, "weekMedian").mdape);
      expect(model, tier).toBeLessThan(errorFigures(part, "lastSale").mdape);
    }
  });

  it("confidence is calibrated: every decile within 0.1 of its observed share, and Brier below the constant baseline's", () => {
    const c = calibration(ps);
    for (const d of c.deciles) expect(Math.abs(d.observed - d.meanConfidence)).toBeLessThanOrEqual(0.1);
    expect(c.brier).toBeLessThan(c.constantBrier);
  });

  it("confidence is calibrated by quintile (issue 53): each within 0.05 of the share of its sales in the band", () => {
    for (const q of calibration(ps, 5).deciles) expect(Math.abs(q.observed - q.meanConfidence), JSON.stringify(q)).toBeLessThanOrEqual(0.05);
  });

  it("confidence resolves: its lowest and highest quintiles differ by far more than sampling noise", () => {
    const shares = resolution(ps, (p) => p.confidence).map((g) => g.observed);
    const noise = shareNoise(calibration(ps).observed, ps.length / 5);
    expect(shares.at(-1)! - shares[0]!).toBeGreaterThan(3 * noise);
  });
});
