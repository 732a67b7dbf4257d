import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// Offers through the served API (decisions.md, "Offers"): POST
// /v1/ingest/offers, GET /v1/asset/offers, GET /v1/collection/market (floor,
// top bid, spread) and the traits' top offers; an offer past its expiresAt
// is EXPIRED at once and leaves the top bid (no commit says so: these
// answers are never served from the response cache); an offer stays with
// its collection; bad records refused by field. The top bids against an
// oracle: test/store/offers.property.test.ts.

const C = "0xc4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4";
const D = "0xc5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5";
const MAKER = `0x${"e".repeat(40)}`;
const NOW = Math.floor(Date.now() / 1000);
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

const offer = (id: string, price: string, extra: object = {}) => ({
  marketplaceId: id, marketplace: "BLUR", contractAddress: C, maker: MAKER, price, currency: "ETH",
  createdAt: NOW - 3600, lastUpdatedAt: NOW - 3600, expiresAt: 0, status: "CREATED", ...extra,
});

async function post(records: object[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/offers`, {
    method: "POST",
    headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n"),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const market = async () => {
  const r = await restGet(ctx.server.baseUrl, "/v1/collection/market", { contractAddress: C }, ctx.read);
  expect(r.status).toBe(200);
  return r.body.data as { floor: { price: string } | null; topBid: { marketplaceId: string; price: string } | null; spread: string };
};

describe("offers through the ingest API and the reads", () => {
  it("give the top bid beside the floor, each trait's top offer, and the list with its status filter", async () => {
    await ingestOk(ctx.server, ctx.ingest, "tokens", [
      { contractAddress: C, assetId: "1", currentOwner: "", attributes: [{ trait_type: "Hat", value: "Cap" }] },
      { contractAddress: C, assetId: "2", currentOwner: "", attributes: [{ trait_type: "Hat", value: "Crown" }] },
    ]);
    expect(await market()).toMatchObject({ floor: null, topBid: null, spread: "" });

    await ingestOk(ctx.server, ctx.ingest, "offers", [
      offer("1", "700"),
      offer("2", "900", { expiresAt: NOW - 60 }), // lapsed: not the top bid, answered EXPIRED
      offer("3", "800", { traitType: "Hat", traitValue: "Crown" }),
      offer("4", "5000", { assetId: "1" }),
    ]);
    await ingestOk(ctx.server, ctx.ingest, "listings", [{
      marketplaceId: "9", marketplace: "OPENSEA", contractAddress: C, assetId: "2", createdAt: NOW - 60, lastUpdatedAt: NOW - 60,
      price: "1000", currency: "ETH", status: "CREATED",
    }]);
    expect(await market()).toMatchObject({ floor: { price: "1000" }, topBid: { marketplaceId: "1", price: "700" }, spread: "300" });

    const traits = await restGet(ctx.server.baseUrl, "/v1/collection/traits", { contractAddress: C }, ctx.read);
    expect((traits.body.data as { value: string; topOffer: { marketplaceId: string } | null }[]).map((v) => [v.value, v.topOffer?.marketplaceId])).toEqual([
      ["Cap", "1"],
      ["Crown", "3"],
    ]);

    const all = await restGet(ctx.server.baseUrl, "/v1/asset/offers", { contractAddress: C }, ctx.read);
    expect(all.status).toBe(200);
    const byId = Object.fromEntries((all.body.data as { marketplaceId: string; status: string; assetId: string; traitValue: string }[]).map((o) => [o.marketplaceId, o]));
    expect(byId["2"]).toMatchObject({ status: "EXPIRED", assetId: "" });
    expect(byId["3"]).toMatchObject({ status: "CREATED", traitType: "Hat", traitValue: "Crown" });
    const created = await restGet(ctx.server.baseUrl, "/v1/asset/offers", { contractAddress: C, status: "CREATED" }, ctx.read);
    expect((created.body.data as { marketplaceId: string }[]).map((o) => o.marketplaceId).sort()).toEqual(["1", "3", "4"]);
    const expired = await restGet(ctx.server.baseUrl, "/v1/asset/offers", { contractAddress: C, status: "EXPIRED" }, ctx.read);
    expect((expired.body.data as { marketplaceId: string }[]).map((o) => o.marketplaceId)).toEqual(["2"]);
    const token = await restGet(ctx.server.baseUrl, "/v1/asset/offers", { contractAddress: C, assetId: "1" }, ctx.read);
    expect((token.body.data as { marketplaceId: string }[]).map((o) => o.marketplaceId)).toEqual(["4"]);

    // A bid above the floor: the spread is negative. The top bid cancelled: the next one.
    await ingestOk(ctx.server, ctx.ingest, "offers", [offer("5", "1200")]);
    expect(await market()).toMatchObject({ topBid: { marketplaceId: "5" }, spread: "-200" });
    await ingestOk(ctx.server, ctx.ingest, "offers", [offer("5", "1200", { status: "CANCELLED", lastUpdatedAt: NOW - 10 })]);
    expect(await market()).toMatchObject({ topBid: { marketplaceId: "1" }, spread: "300" });
  });

  it("lapses an offer at its expiresAt with no write: the top bid moves on by itself", async () => {
    const E = "0xc6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6";
    const soon = Math.floor(Date.now() / 1000) + 2;
    await ingestOk(ctx.server, ctx.ingest, "offers", [
      { ...offer("21", "500", { expiresAt: soon }), contractAddress: E },
      { ...offer("22", "400"), contractAddress: E },
    ]);
    const top = async () => ((await restGet(ctx.server.baseUrl, "/v1/collection/market", { contractAddress: E }, ctx.read)).body.data as { topBid: { marketplaceId: string } }).topBid.marketplaceId;
    expect(await top()).toBe("21");
    await new Promise((r) => setTimeout(r, (soon + 1) * 1000 - Date.now()));
    expect(await top()).toBe("22");
  });

  it("refuses an offer named under another collection, and bad records by field", async () => {
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: D, name: "D" }]);
    const moved = await post([{ ...offer("1", "700"), contractAddress: D }]);
    expect(moved.status).toBe(400);
    expect(moved.body.message).toMatch(/offer 1 of BLUR is an offer of collection 0xc4c4.*refused/);

    const bad = await post([offer("30", "1.5", { traitType: "Hat", assetId: "3" })]);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/price: must be a canonical unsigned decimal/);
    const both = await post([offer("31", "10", { traitType: "Hat", traitValue: "Cap", assetId: "3" })]);
    expect(both.status).toBe(400);
    expect(both.body.message).toMatch(/assetId: an offer is for one token \(assetId\) or for a trait/);
  });
});
