import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// GET /v1/asset/tokens and GET /v1/collection/traits through the served API
// (REST; every protocol's answers equal REST's in protocols.test.ts): what a
// token answers (owner, attributes, rank, latest sale, cheapest listing),
// each order, the owner and trait filters, a wallet's tokens across
// collections, answers that follow writes on a cached server, and the
// caller's mistakes refused by parameter. The orders and asks against an
// oracle: test/store/token-market.property.test.ts.

const C = "0xc2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2";
const C2 = "0xc3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3";
const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

const token = (contractAddress: string, assetId: string, hat: string, level: number) => ({
  contractAddress, assetId, currentOwner: A, attributes: [{ trait_type: "Hat", value: hat }, { trait_type: "Level", value: level }],
});
const listing = (id: number, assetId: string, price: string, marketplace = "BLUR") => ({
  marketplaceId: String(id), marketplace, contractAddress: C, assetId, createdAt: 1_700_000_000, lastUpdatedAt: 1_700_000_000,
  price, currency: "ETH", status: "CREATED",
});
const sale = (n: number, assetId: string, to: string, block: number) => ({
  hash: hash(n), from: A, to, contractAddress: C, assetId, timestamp: 1_700_000_000 + block, block,
  price: "5000", amountReceived: "5000", currency: "ETH", marketplace: "OPENSEA",
});

interface TokenJson {
  assetId: string;
  owner: string;
  attributes: { traitType: string; value: string }[];
  rarityRank: number;
  lastSale: { hash: string; price: string } | null;
  listing: { marketplaceId: string; price: string } | null;
}

async function tokens(query: Record<string, string | number>): Promise<{ ids: string[]; data: TokenJson[]; nextPage: string }> {
  const r = await restGet(ctx.server.baseUrl, "/v1/asset/tokens", query, ctx.read);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const data = r.body.data as TokenJson[];
  return { ids: data.map((t) => t.assetId), data, nextPage: r.body.nextPage as string };
}

describe("the tokens and traits lists", () => {
  it("answer each token whole, in each order, filtered by owner and trait, and follow writes", async () => {
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token(C, "1", "Cap", 1), token(C, "2", "Cap", 2), token(C, "3", "Crown", 1), token(C, "10", "Cap", 7)]);
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token(C2, "5", "Cap", 1)]);
    await ingestOk(ctx.server, ctx.ingest, "rarity", [["1", 3], ["2", 1], ["3", 2]].map(([assetId, rank]) => ({
      contractAddress: C, assetId, currentOwner: A, rarityScore: 1, statisticalRarity: -1, rarityRank: rank,
    })));
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing(1, "2", "900"), listing(2, "2", "800", "OPENSEA"), listing(3, "3", "100000")]);

    const all = await tokens({ contractAddress: C });
    expect(all.ids).toEqual(["1", "2", "3", "10"]);
    expect(all.data[1]).toEqual({
      contractAddress: C, assetId: "2", owner: A,
      attributes: [{ traitType: "Hat", value: "Cap", displayType: "" }, { traitType: "Level", value: "2", displayType: "" }],
      rarityRank: 1, lastSale: null,
      // No metadata told (test/e2e/metadata.test.ts has it).
      name: "", description: "", image: "", animationUrl: "", externalUrl: "", isFlagged: false, flagReason: "",
      listing: {
        marketplaceId: "2", marketplace: "OPENSEA", contractAddress: C, assetId: "2", createdAt: 1_700_000_000, lastUpdatedAt: 1_700_000_000,
        price: "800", currency: "ETH", maker: "", expiresAt: 0, quantity: "1", block: 0, blockHash: "", status: "CREATED",
      },
    });
    expect((await tokens({ contractAddress: C, sort: "price" })).ids).toEqual(["2", "3", "1", "10"]);
    expect((await tokens({ contractAddress: C, sort: "rarity" })).ids).toEqual(["2", "3", "1", "10"]);
    expect((await tokens({ contractAddress: C, trait: "Hat:Cap", sort: "price" })).ids).toEqual(["2", "1", "10"]);
    expect((await tokens({ contractAddress: C, trait: "Level:1" })).ids).toEqual(["1", "3"]);
    expect((await tokens({ contractAddress: C, assetId: "10" })).ids).toEqual(["10"]);

    // Pages of 2 by price, each token once, the token bound to its query.
    const first = await tokens({ contractAddress: C, sort: "price", limit: 2 });
    expect(first.ids).toEqual(["2", "3"]);
    expect((await tokens({ contractAddress: C, sort: "price", limit: 2, cursor: first.nextPage })).ids).toEqual(["1", "10"]);
    const other = await restGet(ctx.server.baseUrl, "/v1/asset/tokens", { contractAddress: C, sort: "rarity", limit: 2, cursor: first.nextPage }, ctx.read);
    expect(other.status).toBe(400);

    // Token 2 sells to B: its owner, last sale and listings follow (a sale ends them), the price order too.
    await ingestOk(ctx.server, ctx.ingest, "sales", [sale(1, "2", B, 50)]);
    const sold = (await tokens({ contractAddress: C, assetId: "2" })).data[0]!;
    expect(sold.owner).toBe(B);
    expect(sold.lastSale).toMatchObject({ hash: hash(1), price: "5000" });
    expect(sold.listing).toBeNull();
    expect((await tokens({ contractAddress: C, sort: "price" })).ids).toEqual(["3", "1", "2", "10"]);
    // Latest change of hands first; never moved after, by id descending.
    expect((await tokens({ contractAddress: C, sort: "recent" })).ids).toEqual(["2", "10", "3", "1"]);

    // A wallet's tokens: in one collection, and in every one.
    expect((await tokens({ contractAddress: C, owner: B })).ids).toEqual(["2"]);
    const wallet = await tokens({ owner: A.toUpperCase().replace("0X", "0x") });
    expect(wallet.data.map((t) => `${(t as unknown as { contractAddress: string }).contractAddress}/${t.assetId}`)).toEqual([
      `${C}/1`, `${C}/3`, `${C}/10`, `${C2}/5`,
    ]);

    // Traits: every value with its count and floor, by type then value.
    const traits = await restGet(ctx.server.baseUrl, "/v1/collection/traits", { contractAddress: C }, ctx.read);
    expect(traits.status).toBe(200);
    expect((traits.body.data as { traitType: string; value: string; tokenCount: string; floor: { assetId: string; price: string } | null }[]).map(
      (v) => [v.traitType, v.value, Number(v.tokenCount), v.floor && `${v.floor.assetId}@${v.floor.price}`],
    )).toEqual([
      ["Hat", "Cap", 3, null],
      ["Hat", "Crown", 1, "3@100000"],
      ["Level", "1", 2, "3@100000"],
      ["Level", "2", 1, null],
      ["Level", "7", 1, null],
    ]);
  });

  it.each([
    [{ contractAddress: C, sort: "cheapest" }, /sort must be one of id, price, rarity, recent, got "cheapest"/],
    [{ contractAddress: C, trait: "Hat" }, /trait must be "type:value"/],
    [{ contractAddress: C, owner: "0x12" }, /owner must be 0x followed by 40 hex characters/],
    [{ owner: A, sort: "price" }, /sort=price needs contractAddress/],
    [{ owner: A, trait: "Hat:Cap" }, /trait needs contractAddress/],
    [{}, /contractAddress is required/],
    [{ contractAddress: C, limit: 51 }, /limit must be between 1 and 50/],
  ])("refuses %j by parameter", async (query, message) => {
    const r = await restGet(ctx.server.baseUrl, "/v1/asset/tokens", query, ctx.read);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(message);
  });

  it("answers not found for a collection it does not know", async () => {
    for (const path of ["/v1/asset/tokens", "/v1/collection/traits"]) {
      const r = await restGet(ctx.server.baseUrl, path, { contractAddress: `0x${"9".repeat(40)}` }, ctx.read);
      expect(r.status).toBe(404);
    }
  });
});
