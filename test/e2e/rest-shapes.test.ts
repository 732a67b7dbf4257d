import { describe, expect, it } from "vitest";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { byAssetId, byInfluence, byInteraction, byListingOrder, byRarity, bySaleOrder, rarityAnswers, washAnswers } from "../support/oracle.js";
import { restGet, useFixtureServer } from "../support/server.js";

// The exact JSON of api.md part 2 on every /v1 endpoint: field names, JSON
// types, amounts as strings, 64-bit integers as numbers, each family's flag.

const t = useFixtureServer(buildFixture);
const get = (path: string, query: Record<string, string | number | string[] | undefined>) =>
  restGet(t.server.baseUrl, path, query, t.f.key);


const typesOf = (o: unknown) =>
  Object.fromEntries(
    Object.entries(o as Record<string, unknown>).map(([k, v]) => [k, v === null ? "null" : Array.isArray(v) ? "array" : typeof v]),
  );

const USER_TYPES = {
  id: "string",
  screenName: "string",
  profileImageUrl: "string",
  description: "string",
  name: "string",
  location: "string",
  followersCount: "number",
  verified: "boolean",
  statusesCount: "number",
  favouritesCount: "number",
  protected: "boolean",
};

describe("GET /v1 response shapes", () => {
  it("appraisals: successful, nextPage, appraisal records", async () => {
    const { status, body } = await get("/v1/asset/appraisals", { contractAddress: COLLECTION, limit: 3 });
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(["successful", "nextPage", "data"]);
    expect(body.successful).toBe(1);
    expect(typeof body.nextPage).toBe("string");
    const data = body.data as Record<string, unknown>[];
    expect(data.map(typesOf)).toEqual(
      Array(3).fill({
        contractAddress: "string",
        assetId: "string",
        fairMarketValue: "string",
        confidence: "string",
        currency: "string",
      }),
    );
    expect(data).toEqual(byAssetId(t.f.appraisals).slice(0, 3).map((a) => ({ ...a, currency: "ETH" })));
  });

  it("rarity: successful, nextPage, rarity records with numbers, owners that follow sales, and an empty owner", async () => {
    const { body } = await get("/v1/asset/rarity", { contractAddress: COLLECTION, limit: 10 });
    expect(Object.keys(body)).toEqual(["successful", "nextPage", "data"]);
    const data = body.data as Record<string, unknown>[];
    expect(typesOf(data[0])).toEqual({
      contractAddress: "string",
      assetId: "string",
      currentOwner: "string",
      rarityScore: "number",
      statisticalRarity: "number",
      rarityRank: "number",
    });
    expect(data).toEqual(byRarity(rarityAnswers(t.f)).slice(0, 10));
    // Token 0's record has no owner, but it was sold: its buyer owns it.
    expect(t.f.rarity.find((r) => r.assetId === "0")!.currentOwner).toBe("");
    expect(data[0]).toMatchObject({ assetId: "0", currentOwner: expect.stringMatching(/^0x[0-9a-f]{40}$/) });
    expect(data.some((r) => r.currentOwner === "")).toBe(true);
  });

  it("collection stats: successful and a summary object with groups", async () => {
    const { body } = await get("/v1/collection/stats", { contractAddress: COLLECTION });
    expect(Object.keys(body)).toEqual(["successful", "data"]);
    expect(body.successful).toBe(1);
    const data = body.data as Record<string, unknown>;
    expect(typesOf(data)).toEqual({
      contractAddress: "string",
      totalNumSales: "number",
      totalVolume: "string",
      currency: "string",
      groups: "array",
    });
    const groups = data.groups as Record<string, unknown>[];
    expect(groups.map(typesOf)).toEqual(
      Array(groups.length).fill({ marketplace: "string", totalNumSales: "number", totalVolume: "string", currency: "string" }),
    );
    // The sales no wash rule flags (docs/wash-trades.md).
    const wash = washAnswers(t.f.sales);
    const clean = t.f.sales.filter((s) => wash.get(`${s.hash}:${s.assetId}`)!.washFlags.length === 0);
    expect(data.totalNumSales).toBe(clean.length);
    expect(data.totalVolume).toBe(clean.reduce((s, x) => s + BigInt(x.price), 0n).toString());
  });

  it("sales: success, cursor, sale records", async () => {
    const { body } = await get("/v1/asset/sales", { contractAddress: COLLECTION, limit: 10 });
    expect(Object.keys(body)).toEqual(["success", "cursor", "data"]);
    expect(body.success).toBe(1);
    const data = body.data as Record<string, unknown>[];
    expect(typesOf(data[0])).toEqual({
      hash: "string",
      from: "string",
      to: "string",
      contractAddress: "string",
      assetId: "string",
      timestamp: "number",
      block: "number",
      price: "string",
      amountReceived: "string",
      currency: "string",
      marketplace: "string",
      blockHash: "string",
      finality: "string",
      washFlags: "array",
      washScore: "number",
      marketplaceFee: "string",
      royaltyFee: "string",
      priceUsd: "string",
      quantity: "string",
    });
    const wash = washAnswers(t.f.sales);
    // The fixture's sales tell no fees: "" (docs/money.md).
    expect(data).toEqual(bySaleOrder(t.f.sales).slice(0, 10).map((s) => ({ ...s, currency: "ETH", blockHash: "", finality: "pending", ...wash.get(`${s.hash}:${s.assetId}`), marketplaceFee: "", royaltyFee: "", priceUsd: "", quantity: "1" })));
  });

  it("listings: success, cursor, listing records with short status names", async () => {
    const { body } = await get("/v1/asset/listings", { contractAddress: COLLECTION, limit: 8 });
    expect(Object.keys(body)).toEqual(["success", "cursor", "data"]);
    const data = body.data as Record<string, unknown>[];
    expect(typesOf(data[0])).toEqual({
      marketplaceId: "string",
      marketplace: "string",
      contractAddress: "string",
      assetId: "string",
      createdAt: "number",
      lastUpdatedAt: "number",
      price: "string",
      currency: "string",
      maker: "string",
      expiresAt: "number",
      quantity: "string",
      block: "number",
      blockHash: "string",
      status: "string",
    });
    const expected = byListingOrder(t.f.listings).slice(0, 8);
    expect(data).toEqual(
      expected.map((l) => ({
        marketplaceId: l.marketplaceId,
        marketplace: l.marketplace,
        contractAddress: l.contractAddress,
        assetId: l.assetId,
        createdAt: l.createdAt,
        lastUpdatedAt: l.lastUpdatedAt,
        price: l.price,
        currency: "ETH",
        maker: "",
        expiresAt: 0,
        quantity: "1",
        block: l.block ?? 0,
        blockHash: l.blockHash ?? "",
        status: l.status,
      })),
    );
  });

  it("influencers: success and records with a user object, by score", async () => {
    const { body } = await get("/v1/collection/influencers", { contractAddress: COLLECTION, limit: 50 });
    expect(Object.keys(body)).toEqual(["success", "data"]);
    const data = body.data as Record<string, unknown>[];
    expect(typesOf(data[0])).toEqual({ user: "object", score: "number" });
    expect(typesOf(data[0]!.user)).toEqual(USER_TYPES);
    expect(data).toEqual(byInfluence(t.f.influencers).map(({ user, score }) => ({ user, score })));
  });

  it("tweets: success and tweet records with retweetedStatus null and empty strings present", async () => {
    const { body } = await get("/v1/collection/tweets", { contractAddress: COLLECTION, limit: 50 });
    expect(Object.keys(body)).toEqual(["success", "data"]);
    const data = body.data as Record<string, unknown>[];
    expect(typesOf(data[0])).toEqual({
      id: "string",
      user: "object",
      source: "string",
      text: "string",
      retweetCount: "number",
      favoriteCount: "number",
      possiblySensitive: "boolean",
      lang: "string",
      retweetedStatus: "null",
      createdAt: "string",
      date: "string",
      originalId: "string",
      originalText: "string",
      originalTweet: "boolean",
      interaction: "number",
    });
    expect(data.every((t) => t.retweetedStatus === null)).toBe(true);
    expect(data.some((t) => (t.user as Record<string, unknown>).description === "")).toBe(true);
    expect(data.map((t) => t.id)).toEqual(byInteraction(t.f.tweets).map((t) => t.id));
    const { contractAddress: _c, retweetedStatusJson: _r, ...first } = byInteraction(t.f.tweets)[0]!;
    expect(data[0]).toEqual({ ...first, retweetedStatus: null });
  });

  it("scores: successful and score records", async () => {
    const { body } = await get("/v1/collection/scores", { contractAddress: COLLECTION });
    expect(Object.keys(body)).toEqual(["successful", "data"]);
    expect(body.data).toEqual([
      { name: "Test Apes", contractAddress: COLLECTION, hype: 71.5, gains: -3.25, community: 88, total: 52.1 },
    ]);
  });
});
