import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { LATEST_POINT_SQL, PointsInForce, PRICE_POINTS_SCHEMA } from "../../src/store/sqlite/prices.js";
import { POINT_IN_FORCE_SECONDS } from "../../src/store/shared/prices.js";
import { Random } from "../../src/demo/random.js";

// The SQLite sales lists find each sale's point in force with one seek per
// point a page meets (sqlite/prices.ts PointsInForce), reusing the last point
// found while the sales are newer than it. Whatever the order of the sales
// asked, each answer is the brute-force one: the token's latest point at or
// before the sale, no older than a day.

const db = new Database(":memory:");
db.exec(PRICE_POINTS_SCHEMA);
afterAll(() => db.close());

describe("PointsInForce", () => {
  it("answers each sale's point in force, newest first and in any order", () => {
    const rnd = new Random(7);
    const start = 1_700_000_000 - (1_700_000_000 % 60);
    const points = new Map<string, Map<number, string>>([["ETH", new Map()], ["USDC", new Map()]]);
    // A later point of a minute replaces the earlier, as the store keeps them.
    const put = db.prepare("INSERT OR REPLACE INTO price_points (currency, minute, usd) VALUES (?, ?, ?)");
    // Bursts of minute points with gaps of more than a day between some: sales then have none in force.
    for (let i = 0; i < 300; i++) {
      const currency = i % 5 === 0 ? "USDC" : "ETH";
      const minute = start + rnd.int(0, 10 * 24 * 60) * 60;
      const usd = `${rnd.int(1, 5000)}.${rnd.int(0, 99)}`;
      points.get(currency)!.set(minute, usd);
      put.run(currency, minute, usd);
    }
    const expected = (currency: string, t: number): string | null => {
      const mine = points.get(currency === "WETH" || currency === "BLUR_POOL" ? "ETH" : currency)!;
      let best: number | undefined;
      for (const m of mine.keys()) if (m <= t && m > t - POINT_IN_FORCE_SECONDS && (best === undefined || m > best)) best = m;
      return best === undefined ? null : mine.get(best)!;
    };
    const sales = Array.from({ length: 2_000 }, () => ({ currency: rnd.pick(["ETH", "WETH", "BLUR_POOL", "USDC"]), t: start - 2 * 86_400 + rnd.int(0, 14 * 86_400) }));
    const newestFirst = [...sales].sort((a, b) => b.t - a.t);
    const latest = db.prepare(LATEST_POINT_SQL).raw();
    let seeks = 0;
    const counting = { get: (...args: unknown[]) => (seeks++, latest.get(...args)) } as unknown as typeof latest;
    for (const order of [newestFirst, sales, [...newestFirst].reverse()]) {
      const found = new PointsInForce(counting);
      for (const s of order) expect(found.usdAt(s.currency, s.t), `${s.currency} at ${s.t}`).toBe(expected(s.currency, s.t));
    }
    // Newest first, a page meets each point at most once per priced-as token (ETH and USDC here): fewer seeks than sales.
    seeks = 0;
    const found = new PointsInForce(counting);
    for (const s of newestFirst) found.usdAt(s.currency, s.t);
    expect(seeks).toBeLessThanOrEqual(points.get("ETH")!.size + points.get("USDC")!.size + 2);
    expect(seeks).toBeLessThan(sales.length / 4);
  });

  it("seeks the points' key on the token and the minute", () => {
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${LATEST_POINT_SQL}`).all("ETH", 1) as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual(["SEARCH price_points USING PRIMARY KEY (currency=? AND minute<?)"]);
  });
});
