import { describe, expect, it } from "vitest";
import { parseEnd } from "../../src/cli/demo.js";

describe("marketdata demo --end", () => {
  const now = Date.parse("2026-11-28T12:00:00Z");
  it("takes unix seconds or an ISO 8601 time with its zone", () => {
    expect(parseEnd("1793491200", now)).toBe(1_793_491_200);
    expect(parseEnd("2026-11-01T00:00:00Z", now)).toBe(1_793_491_200);
    expect(parseEnd("2026-11-01T02:00:00+02:00", now)).toBe(1_793_491_200);
    expect(parseEnd("2026-11-01", now)).toBe(1_793_491_200);
  });
  it("refuses other text, a time past the clock and one before the chain's era, naming what it got", () => {
    expect(() => parseEnd("yesterday", now)).toThrow(/--end must be unix seconds or an ISO 8601 time .* got "yesterday"/);
    expect(() => parseEnd("2026-11-01T00:00:00", now)).toThrow(/ISO 8601/);
    expect(() => parseEnd("2026-11-29T00:00:00Z", now)).toThrow(/must not be past this machine's clock \(2026-11-28T12:00:00.000Z\)/);
    expect(() => parseEnd("1000", now)).toThrow(/after 2017-07-14/);
  });
});
