import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// Spam and flags through the served API (REST; the property test on both
// engines is test/store/flags.property.test.ts): the spam and flags kinds
// taken by POST /v1/ingest/..., the floor, the market, the traits and the
// collections list without a flagged token's listing or a spam collection
// by default and with them when asked, the floor at a past time too; a
// token and a listed collection answer their mark and its reason; a mark
// cleared brings them back; a bad mark is refused by field.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0xf1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1";
const SPAM = "0xf2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2f2";
const T = Math.floor(Date.now() / 1000) - 3_600;

const listing = (id: number, assetId: string, price: string, contractAddress = C) => ({
  marketplaceId: String(id), marketplace: "BLUR", contractAddress, assetId, createdAt: T, lastUpdatedAt: T, price, currency: "ETH", status: "CREATED",
});
const token = (assetId: string) => ({ contractAddress: C, assetId, attributes: [{ trait_type: "Hat", value: "Cap" }] });

const get = async (path: string, query: Record<string, string | number>) => {
  const r = await restGet(ctx.server.baseUrl, path, query, ctx.read);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
};

describe("spam and flags", () => {
  it("leave a flagged token out of every default floor and a spam collection out of the list, and answer both marks", async () => {
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("1"), token("2")]);
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing(1, "1", "100"), listing(2, "2", "500"), listing(3, "1", "50", SPAM)]);
    await ingestOk(ctx.server, ctx.ingest, "flags", [{ contractAddress: C, assetId: "1", isFlagged: true, reason: "stolen" }]);
    await ingestOk(ctx.server, ctx.ingest, "spam", [{ contractAddress: SPAM, isSpam: true, reason: "airdrop" }]);

    expect((await get("/v1/collection/floor", { contractAddress: C })).data.floor).toMatchObject({ assetId: "2", price: "500" });
    expect((await get("/v1/collection/floor", { contractAddress: C, includeFlagged: "true" })).data.floor).toMatchObject({ assetId: "1", price: "100" });
    // At a past time: the flag as it stands now.
    expect((await get("/v1/collection/floor", { contractAddress: C, at: T + 60 })).data.floor).toMatchObject({ assetId: "2" });
    expect((await get("/v1/collection/floor", { contractAddress: C, at: T + 60, includeFlagged: "true" })).data.floor).toMatchObject({ assetId: "1" });
    expect((await get("/v1/collection/market", { contractAddress: C })).data.floor).toMatchObject({ assetId: "2" });
    expect((await get("/v1/collection/market", { contractAddress: C, includeFlagged: "true" })).data.floor).toMatchObject({ assetId: "1" });
    expect((await get("/v1/collection/traits", { contractAddress: C })).data[0].floor).toMatchObject({ assetId: "2" });
    expect((await get("/v1/collection/traits", { contractAddress: C, includeFlagged: "true" })).data[0].floor).toMatchObject({ assetId: "1" });

    const tokens = (await get("/v1/asset/tokens", { contractAddress: C })).data;
    expect(tokens.map((t: { assetId: string; isFlagged: boolean; flagReason: string }) => [t.assetId, t.isFlagged, t.flagReason])).toEqual([["1", true, "stolen"], ["2", false, ""]]);

    const listed = async (query: Record<string, string>) => (await get("/v1/collections", { sort: "floor", ...query })).data.map((c: { contractAddress: string }) => c.contractAddress);
    expect(await listed({})).toEqual([C]);
    expect(await listed({ includeSpam: "true" })).toEqual([SPAM, C]);
    const spam = (await get("/v1/collections", { query: SPAM, includeSpam: "true" })).data[0];
    expect(spam).toMatchObject({ isSpam: true, spamReason: "airdrop" });
    // The list's floor is the default one: the flagged token's listing left out.
    expect((await get("/v1/collections", { query: C })).data[0]).toMatchObject({ isSpam: false, floor: { assetId: "2", price: "500" } });

    // Marks cleared: everything is back.
    await ingestOk(ctx.server, ctx.ingest, "flags", [{ contractAddress: C, assetId: "1", isFlagged: false, reason: "recovered" }]);
    await ingestOk(ctx.server, ctx.ingest, "spam", [{ contractAddress: SPAM, isSpam: false }]);
    expect((await get("/v1/collection/floor", { contractAddress: C })).data.floor).toMatchObject({ assetId: "1" });
    expect((await get("/v1/collections", { query: C })).data[0].floor).toMatchObject({ assetId: "1" });
    expect(await listed({})).toEqual([SPAM, C]);
    expect((await get("/v1/asset/tokens", { contractAddress: C, assetId: "1" })).data[0]).toMatchObject({ isFlagged: false, flagReason: "recovered" });
  });

  it("refuses a mark that is not one, by field", async () => {
    const post = async (kind: string, record: object) => {
      const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/${kind}`, {
        method: "POST", headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" }, body: `${JSON.stringify(record)}\n`,
      });
      return { status: r.status, body: (await r.json()) as { rejected: { message: string }[] } };
    };
    const flag = await post("flags", { contractAddress: C, assetId: "1", isFlagged: "yes" });
    expect(flag.status).toBe(400);
    expect(flag.body.rejected[0]!.message).toMatch(/^isFlagged: must be true or false/);
    const spam = await post("spam", { contractAddress: C, isSpam: true, reason: "x".repeat(1025) });
    expect(spam.status).toBe(400);
    expect(spam.body.rejected[0]!.message).toMatch(/^reason: must be at most 1024 characters/);
    expect((await post("spam", { contractAddress: C })).body.rejected[0]!.message).toMatch(/isSpam/);
  });
});
