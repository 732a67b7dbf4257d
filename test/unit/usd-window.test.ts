import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { usdWindowParts } from "../../src/store/shared/usd-window.js";

// A stats window in dollars read as the series' whole days and hours and the
// raw seconds at its edges (shared/usd-window.ts): every second of the window
// in exactly one part, each kept part whole intervals of its span, each raw
// edge shorter than an hour (a window holding no whole hour, under two).

describe("usdWindowParts", () => {
  it("covers every second of the window once: whole days, whole hours at the ends, raw edges under an hour", () => {
    const T0 = 1_700_000_000;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 40 * 86_400 }), fc.integer({ min: 0, max: 40 * 86_400 }), (a, b) => {
        const [since, until] = [T0 + Math.min(a, b), T0 + Math.max(a, b)];
        const { kept, raw } = usdWindowParts(since, until);
        const ranges = [...kept.map((k) => [k.from, k.to - 1] as const), ...raw.map((r) => [r.from, r.to] as const)].sort((x, y) => x[0] - y[0]);
        // Contiguous, no overlap, exactly the window.
        expect(ranges[0]![0]).toBe(since);
        expect(ranges.at(-1)![1]).toBe(until);
        for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBe(ranges[i - 1]![1] + 1);
        for (const k of kept) {
          expect(k.from % k.span).toBe(0);
          expect(k.to % k.span).toBe(0);
          expect(k.to).toBeGreaterThan(k.from);
        }
        // Under an hour each; a window holding no whole hour is read raw whole: under two.
        for (const r of raw) expect(r.to - r.from).toBeLessThan(kept.length === 0 ? 2 * 3600 - 1 : 3600);
        // At most one range of days and two of hours.
        expect(kept.filter((k) => k.span === 86_400).length).toBeLessThanOrEqual(1);
        expect(kept.filter((k) => k.span === 3_600).length).toBeLessThanOrEqual(2);
      }),
      // CI's counterexample: an hour and a second with no whole hour inside.
      { examples: [[2_825_201, 2_828_801]] },
    );
  });
});
