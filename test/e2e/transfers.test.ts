import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// Owners follow the market through the ingest API (decisions.md,
// "Ownership"): a sale and a transfer move a token's owner, in holders and
// in the rarity answer's currentOwner, on a served store whose cached
// answers must not go stale. Before, holders came from token records only:
// a token sold through the ingest API kept its old owner. On the test engine.

const C = "0xc1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1";
const ZERO = `0x${"0".repeat(40)}`;
const A = `0x${"a".repeat(40)}`;
const B = `0x${"b".repeat(40)}`;
const D = `0x${"d".repeat(40)}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

const token = (assetId: string, owner: string) => ({ contractAddress: C, assetId, currentOwner: owner, attributes: [{ trait_type: "Hat", value: assetId }] });
const transfer = (n: number, logIndex: number, assetId: string, from: string, to: string, block: number) => ({
  hash: hash(n), logIndex, from, to, contractAddress: C, assetId, timestamp: 1_700_000_000 + block, block,
});
const sale = (n: number, assetId: string, from: string, to: string, block: number) => ({
  hash: hash(n), from, to, contractAddress: C, assetId, timestamp: 1_700_000_000 + block, block,
  price: "1000", amountReceived: "1000", currency: "ETH", marketplace: "OPENSEA",
});

async function holders(): Promise<Record<string, number>> {
  const r = await restGet(ctx.server.baseUrl, "/v1/collection/holders", { contractAddress: C, limit: 50 }, ctx.read);
  expect(r.status).toBe(200);
  const data = r.body.data as { totalTokens: string; holders: { address: string; tokenCount: string }[] };
  return Object.fromEntries([["total", Number(data.totalTokens)], ...data.holders.map((h) => [h.address, Number(h.tokenCount)])]);
}

async function rarityOwners(): Promise<Record<string, string>> {
  const r = await restGet(ctx.server.baseUrl, "/v1/asset/rarity", { contractAddress: C }, ctx.read);
  expect(r.status).toBe(200);
  return Object.fromEntries((r.body.data as { assetId: string; currentOwner: string }[]).map((x) => [x.assetId, x.currentOwner]));
}

describe("transfers and sales through the ingest API", () => {
  it("move owners in holders and rarity, whatever order they arrive in, and a record sent again does not move them back", async () => {
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("1", A), token("2", A)]);
    await ingestOk(ctx.server, ctx.ingest, "rarity", [1, 2].map((i) => ({
      contractAddress: C, assetId: String(i), currentOwner: A, rarityScore: i, statisticalRarity: 0.5, rarityRank: i,
    })));
    expect(await holders()).toEqual({ total: 2, [A]: 2 });
    expect(await rarityOwners()).toEqual({ 1: A, 2: A });

    // A sale of token 1 to B: holders (read and cached above) follow at once.
    await ingestOk(ctx.server, ctx.ingest, "sales", [sale(1, "1", A, B, 10)]);
    expect(await holders()).toEqual({ total: 2, [A]: 1, [B]: 1 });
    expect(await rarityOwners()).toEqual({ 1: B, 2: A });

    // Token 1 moves on in block 12; a transfer of block 11 arriving after it changes nothing.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [transfer(3, 0, "1", B, D, 12)]);
    await ingestOk(ctx.server, ctx.ingest, "transfers", [transfer(2, 5, "1", B, A, 11)]);
    expect(await holders()).toEqual({ total: 2, [A]: 1, [D]: 1 });

    // The token record sent again does not move it back.
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("1", A)]);
    expect(await holders()).toEqual({ total: 2, [A]: 1, [D]: 1 });

    // A mint of a token no record named, then its burn.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [transfer(4, 0, "3", ZERO, B, 13)]);
    expect(await holders()).toEqual({ total: 3, [A]: 1, [B]: 1, [D]: 1 });
    await ingestOk(ctx.server, ctx.ingest, "transfers", [transfer(5, 0, "3", B, ZERO, 14)]);
    expect(await holders()).toEqual({ total: 3, [A]: 1, [D]: 1 });
  });

  it("refuses a bad transfer by field, naming the line", async () => {
    const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/transfers`, {
      method: "POST",
      headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
      body: `${JSON.stringify({ ...transfer(6, -1, "1", A, B, 15), to: "0x12" })}\n`,
    });
    expect(r.status).toBe(400);
    const body = (await r.json()) as { message: string };
    expect(body.message).toMatch(/record 1: /);
    expect(body.message).toMatch(/logIndex: must be a non-negative integer/);
    expect(body.message).toMatch(/to: must be 0x followed by 40 hex characters/);
  });
});
