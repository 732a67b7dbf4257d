import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { byTier, errorFigures } from "../../src/derive/backtest-report.js";
import { backtestStore } from "../../src/derive/backtest-store.js";
import { DeriveStore } from "../../src/store/sqlite/derive-store.js";
import { buildDemo } from "../../src/demo/build.js";
import { generateDemo } from "../../src/demo/generate.js";
import { withStoreKeys } from "../../src/store/sqlite/key-admin.js";
import { openReadOnly, openWritable } from "../../src/store/sqlite/database.js";
import { dumpStore } from "../support/dump.js";
import { restGet, startTestServer, type TestServer } from "../support/server.js";
import { sqliteWritable } from "../../src/store/sqlite/writable.js";

const dir = mkdtempSync(join(tmpdir(), "marketdata-demo-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The builds' end: this run's clock, pinned so two builds of a seed are the same store. */
const END = Math.floor(Date.now() / 1000);

async function demo(name: string, seed: number): Promise<string> {
  const path = join(dir, name);
  const db = openWritable(path);
  await buildDemo(sqliteWritable(db), seed, "small", undefined, END);
  db.close();
  return path;
}

describe("demo store", () => {
  let a: string;
  beforeAll(async () => {
    a = await demo("a.sqlite", 7);
  });

  it("is the same for the same seed, and differs for another", async () => {
    const again = await demo("b.sqlite", 7);
    // The same data; the second each token's record was written is the writer's clock.
    expect(dumpStore(again, { clock: false })).toEqual(dumpStore(a, { clock: false }));
    const other = await demo("c.sqlite", 8);
    expect(dumpStore(other).sales).not.toEqual(dumpStore(a).sales);
    // Two builds and three dumps: ~15 s each on a quiet machine, past 30 s on a loaded one.
  }, 90_000);

  it("has what the issue asks for: skewed traits, six marketplaces, sweeps, fees, payment tokens of sales and bids, four listing states, some wash trades", () => {
    const d = dumpStore(a);
    const sales = d.sales as { hash: Buffer; marketplace: string; price: string; amount_received: string }[];
    expect(new Set(sales.map((s) => s.marketplace))).toEqual(new Set(["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2", "SUDOSWAP", "OTHER"]));
    const perHash = new Map<string, number>();
    for (const s of sales) perHash.set(s.hash.toString("hex"), (perHash.get(s.hash.toString("hex")) ?? 0) + 1);
    expect([...perHash.values()].some((n) => n > 1)).toBe(true);
    expect(sales.every((s) => BigInt(s.amount_received) <= BigInt(s.price))).toBe(true);
    expect(sales.some((s) => BigInt(s.amount_received) < BigInt(s.price))).toBe(true);
    // Payment tokens and fees (docs/money.md): the marketplace's fee and the royalty are what the seller did not receive.
    const money = d.sales as { currency: string; marketplace: string; price: string; amount_received: string; marketplace_fee: string; royalty_fee: string }[];
    expect(new Set(money.map((s) => s.currency))).toEqual(new Set(["ETH", "WETH", "BLUR_POOL"]));
    expect(money.filter((s) => s.marketplace === "BLUR").every((s) => s.currency === "BLUR_POOL")).toBe(true);
    for (const s of money) expect(BigInt(s.marketplace_fee) + BigInt(s.royalty_fee)).toBe(BigInt(s.price) - BigInt(s.amount_received));
    expect(money.some((s) => BigInt(s.marketplace_fee) > 0n) && money.some((s) => BigInt(s.royalty_fee) > 0n)).toBe(true);
    // Bids from a wrapped balance: Blur's pool on Blur, WETH elsewhere; listings ask for ETH.
    const bids = d.offers as { currency: string; marketplace: string }[];
    expect(bids.length).toBeGreaterThan(0);
    expect(bids.every((o) => o.currency === (o.marketplace === "BLUR" ? "BLUR_POOL" : "WETH"))).toBe(true);
    expect(new Set((d.listings as { currency: string }[]).map((l) => l.currency))).toEqual(new Set(["ETH"]));
    expect(new Set((d.listings as { status: string }[]).map((l) => l.status))).toEqual(new Set(["CREATED", "FULFILLED", "CANCELLED", "EXPIRED"]));
    // Some wash trades among them (docs/wash-trades.md): hot tokens that come back to a wallet, a few self trades.
    expect((d.sales as { wash_flags: number }[]).filter((s) => s.wash_flags !== 0).length).toBeGreaterThan(0);
    const tweets = d.tweets as { interaction: number; retweet_count: number; favorite_count: number }[];
    expect(tweets.every((t) => t.interaction === t.retweet_count + t.favorite_count)).toBe(true);
    // Skew: the most common fur is far more common than the rarest.
    const furs = new Map<string, number>();
    for (const t of d.tokens as { attributes: string }[]) {
      const fur = (JSON.parse(t.attributes) as { trait_type: string; value: string }[]).find((x) => x.trait_type === "Fur");
      if (fur) furs.set(fur.value, (furs.get(fur.value) ?? 0) + 1);
    }
    const counts = [...furs.values()].sort((x, y) => y - x);
    expect(counts[0]! / counts[counts.length - 1]!).toBeGreaterThan(5);
  });

  it("ends at its end: nothing after it, 1% of each collection's sales (at least 4) in its last day, and a later end moves the market whole", () => {
    const times = (d: ReturnType<typeof generateDemo>) => (d.sales as { timestamp: number; contractAddress: string }[]);
    const d = generateDemo(3, "small", END);
    const sales = times(d);
    expect(Math.max(...sales.map((x) => x.timestamp))).toBeLessThanOrEqual(END);
    for (const { contractAddress } of d.collections as { contractAddress: string }[]) {
      const own = sales.filter((x) => x.contractAddress === contractAddress);
      expect(own.filter((x) => x.timestamp > END - 86_400).length, contractAddress).toBeGreaterThanOrEqual(Math.max(4, Math.round(own.length * 0.01) - 1));
    }
    const later = times(generateDemo(3, "small", END + 86_400));
    expect(later.map((x) => x.timestamp - 86_400)).toEqual(sales.map((x) => x.timestamp));
  });

  it.each(["small", "default", "large"] as const)("at scale %s, a marketplace's listing id names one listing (the store refuses a move)", (scale) => {
    const ids = generateDemo(1, scale).listings.map((l) => `${(l as { marketplace: string }).marketplace}:${(l as { marketplaceId: string }).marketplaceId}`);
    expect(new Set(ids).size).toBe(ids.length);
  });

  describe("served", () => {
    let server: TestServer;
    let key: string;
    let collections: string[];
    beforeAll(async () => {
      const db = openWritable(a);
      key = withStoreKeys(a, (admin) => admin.create("t").key);
      collections = db.prepare("SELECT address FROM collections ORDER BY address").pluck().all() as string[];
      db.close();
      server = await startTestServer(a);
    });
    afterAll(() => server.close());

    it("returns data on every endpoint for every demo collection", async () => {
      expect(collections.length).toBe(3);
      for (const contractAddress of collections) {
        for (const path of ["/v1/asset/appraisals", "/v1/asset/rarity", "/v1/asset/sales", "/v1/asset/listings", "/v1/collection/influencers", "/v1/collection/tweets", "/v1/collection/scores"]) {
          const { status, body } = await restGet(server.baseUrl, path, { contractAddress }, key);
          expect(status, path).toBe(200);
          expect((body.data as unknown[]).length, `${path} ${contractAddress}`).toBeGreaterThan(0);
        }
        const stats = await restGet(server.baseUrl, "/v1/collection/stats", { contractAddress }, key);
        expect((stats.body.data as { totalNumSales: number }).totalNumSales).toBeGreaterThan(0);
      }
    });

    it("shows a live market on the day it is built: every collection has 1-, 7- and 30-day sales and volume", async () => {
      const { body } = await restGet(server.baseUrl, "/v1/collections", { limit: 10 }, key);
      const rows = body.data as { contractAddress: string; sales1d: number; volume1d: string; sales7d: number; sales30d: number }[];
      expect(rows.map((r) => r.contractAddress).sort()).toEqual(collections);
      for (const r of rows) {
        expect(r.sales1d, r.contractAddress).toBeGreaterThanOrEqual(4);
        expect(BigInt(r.volume1d) > 0n, r.contractAddress).toBe(true);
        expect(r.sales7d, r.contractAddress).toBeGreaterThan(r.sales1d);
        expect(r.sales30d, r.contractAddress).toBeGreaterThan(r.sales7d);
      }
    });

    it("prices its sales in USD (docs/money.md): every sale, in ETH, WETH or Blur's pool ETH, has ETH's point of its hour in force", async () => {
      for (const contractAddress of collections) {
        const sales = (await restGet(server.baseUrl, "/v1/asset/sales", { contractAddress, limit: 50 }, key)).body.data as { price: string; currency: string; priceUsd: string }[];
        expect(sales.length).toBe(50);
        for (const s of sales) {
          expect(s.priceUsd, JSON.stringify(s)).toMatch(/^[0-9]+\.[0-9]{2}$/);
          // ETH between $500 and $20,000 in the demo's walk: the dollars are the price at such a rate.
          const eth = Number(s.price) / 1e18;
          expect(Number(s.priceUsd)).toBeGreaterThan(eth * 500 - 0.01);
          expect(Number(s.priceUsd)).toBeLessThan(eth * 20_000 + 0.01);
        }
      }
    });

    it("tells the market's truth (issue 34): tokens minted and moved, no stale open listing, bids under a floor near recent sales", async () => {
      const d = dumpStore(a);
      const transfers = d.transfers as { sender: Buffer }[];
      expect(transfers.some((t) => t.sender.equals(Buffer.alloc(20)))).toBe(true); // mints
      expect(transfers.some((t) => !t.sender.equals(Buffer.alloc(20)))).toBe(true); // moves between wallets
      const offers = d.offers as { asset_key: string; trait_type: string }[];
      expect(offers.some((o) => o.asset_key !== "")).toBe(true);
      expect(offers.some((o) => o.trait_type !== "")).toBe(true);
      expect(offers.some((o) => o.asset_key === "" && o.trait_type === "")).toBe(true);
      // No listing stays open past 30 days: the floor is today's asks (it had been a two-year-old listing).
      const listings = d.listings as { status: string; created_at: number }[];
      const newest = Math.max(...listings.map((l) => l.created_at));
      expect(listings.filter((l) => l.status === "CREATED").every((l) => l.created_at > newest - 31 * 86_400)).toBe(true);
      for (const contractAddress of collections) {
        const market = (await restGet(server.baseUrl, "/v1/collection/market", { contractAddress }, key)).body.data as {
          floor: { price: string }; topBid: { price: string } | null;
        };
        const sales = (await restGet(server.baseUrl, "/v1/asset/sales", { contractAddress, limit: 50 }, key)).body.data as { price: string }[];
        const recent = sales.map((x) => Number(x.price) / 1e18).sort((x, y) => x - y);
        const median = recent[recent.length >> 1]!;
        const floor = Number(market.floor.price) / 1e18;
        expect(floor / median, contractAddress).toBeGreaterThan(0.4);
        expect(floor / median, contractAddress).toBeLessThan(1.2);
        expect(market.topBid, contractAddress).not.toBeNull();
        expect(Number(market.topBid!.price) / 1e18, contractAddress).toBeLessThan(floor);
      }
    });
  });

  it("appraisals beat both naive baselines in the backtest, in every price tier", async () => {
    const db = openReadOnly(a);
    const predictions = (await backtestStore(new DeriveStore(db))).flatMap((c) => c.predictions);
    db.close();
    expect(predictions.length).toBeGreaterThan(1000);
    const tiers = byTier(predictions);
    for (const part of [predictions, tiers.floor, tiers.middle, tiers.top]) {
      const model = errorFigures(part, "model").mdape;
      expect(model).toBeLessThan(errorFigures(part, "weekMedian").mdape);
      expect(model).toBeLessThan(errorFigures(part, "lastSale").mdape);
    }
  });

  it("every appraisal has a confidence in [0, 1] written as text", () => {
    const rows = dumpStore(a).appraisals as { confidence: string; fair_market_value: string }[];
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      expect(r.confidence).toMatch(/^[01]\.[0-9]{4}$/);
      expect(Number(r.confidence)).toBeLessThanOrEqual(1);
      expect(BigInt(r.fair_market_value) > 0n).toBe(true);
    }
  });

  it("confidence is the token's own (issue 53): the largest collection's rank-1 token and its floor tokens differ, rare tokens are less certain, and values keep the digits their evidence supports", () => {
    // The demo's rarer tokens trade further from their value (generate.ts), as CryptoPunks' do.
    const dump = dumpStore(a);
    const appraisals = dump.appraisals as { collection_id: number; asset_key: string; confidence: string; fair_market_value: string }[];
    const rarity = dump.rarity as { collection_id: number; asset_key: string; rarity_rank: number }[];
    const counts = new Map<number, number>();
    for (const r of appraisals) counts.set(r.collection_id, (counts.get(r.collection_id) ?? 0) + 1);
    const largest = [...counts].sort((x, y) => y[1] - x[1])[0]![0];
    const rank = new Map(rarity.filter((r) => r.collection_id === largest).map((r) => [r.asset_key, r.rarity_rank]));
    const rows = appraisals.filter((r) => r.collection_id === largest).sort((x, y) => rank.get(x.asset_key)! - rank.get(y.asset_key)!);
    const confidence = rows.map((r) => Number(r.confidence));
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const tenth = Math.floor(rows.length / 10);
    // Before: 0.887-0.890 for every token, the rank-1 token and a floor token alike.
    expect(confidence[0]).not.toBe(confidence.at(-1));
    expect(new Set(confidence).size).toBeGreaterThan(rows.length / 20);
    expect(mean(confidence.slice(0, tenth)), "the rarest tenth against the commonest").toBeLessThan(mean(confidence.slice(-tenth)) - 0.05);
    // At most four significant digits (19 before), but where an open listing bounds the value: it is its price, to the wei.
    const listed = new Set((dump.listings as { collection_id: number; asset_key: string; price: string; status: string }[])
      .filter((l) => l.collection_id === largest && l.status === "CREATED").map((l) => `${l.asset_key} ${l.price}`));
    const model = rows.filter((r) => !listed.has(`${r.asset_key} ${r.fair_market_value}`));
    expect(model.length).toBeGreaterThan(rows.length / 2);
    for (const r of model) expect(r.fair_market_value.replace(/0+$/, "").length, r.fair_market_value).toBeLessThanOrEqual(4);
  });
});
