import { describe, expect, it } from "vitest";
import { importRecords } from "../support/engine.js";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// A listing stays with its collection (decisions.md): a record naming a
// marketplace's listing under another collection than the one holding it is
// refused, on the ingest API (400, nothing of the batch written) and by
// import (nothing written), so that neither collection's lists, floor,
// history or feed can go stale. Before, the row moved silently and the old
// collection's cached lists and floor went on answering it. On the test
// engine.

const A = "0xa0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0";
const B = "0xb0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0";
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

const listing = (id: string, collection: string, price: string, updated = 1_700_000_000) => ({
  marketplaceId: id,
  marketplace: "OPENSEA",
  contractAddress: collection,
  assetId: "7",
  createdAt: 1_700_000_000,
  lastUpdatedAt: updated,
  price,
  currency: "ETH",
  status: "CREATED",
});

async function post(records: object[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/listings`, {
    method: "POST",
    headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n"),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const floorOf = async (c: string) => ((await restGet(ctx.server.baseUrl, "/v1/collection/floor", { contractAddress: c }, ctx.read)).body as { data?: { floor?: { marketplaceId: string; price: string } | null } }).data?.floor ?? null;
const idsOf = async (c: string) => {
  const r = await restGet(ctx.server.baseUrl, "/v1/asset/listings", { contractAddress: c, limit: 50 }, ctx.read);
  return r.status === 404 ? [] : (r.body.data as { marketplaceId: string }[]).map((l) => l.marketplaceId);
};

describe("a listing named under another collection", () => {
  it("is refused by the ingest API, alone or beside its first record in one batch, and both collections answer as before", async () => {
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing("1", A, "500")]);
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: B, name: "B" }]);
    // Read (and cached) before the refused write.
    expect(await floorOf(A)).toMatchObject({ marketplaceId: "1", price: "500" });
    expect(await idsOf(A)).toEqual(["1"]);

    const moved = await post([listing("1", B, "400", 1_700_000_100)]);
    expect(moved.status).toBe(400);
    expect(moved.body).toMatchObject({ code: "invalid_argument" });
    expect(moved.body.message).toMatch(/listing 1 of OPENSEA is a listing of collection 0xa0a0.*refused/);

    // A new listing named under two collections in one batch: the second line is the move.
    const twice = await post([listing("2", A, "300"), listing("2", B, "300")]);
    expect(twice.status).toBe(400);
    expect(twice.body.message).toMatch(/listing 2 of OPENSEA/);

    expect(await floorOf(A)).toMatchObject({ marketplaceId: "1", price: "500" });
    expect(await idsOf(A)).toEqual(["1"]);
    expect(await floorOf(B)).toBeNull();
    expect(await idsOf(B)).toEqual([]);

    // The same listing under its own collection is taken as ever (a change of price).
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing("1", A, "450", 1_700_000_200)]);
    expect(await floorOf(A)).toMatchObject({ marketplaceId: "1", price: "450" });
  });

  it("is refused by import, which writes nothing of the file", async () => {
    await expect(importRecords(ctx.target, "listings", [listing("3", A, "100"), listing("1", B, "100")])).rejects.toThrow(/listing 1 of OPENSEA is a listing of collection 0xa0a0/);
    expect(await idsOf(A)).toEqual(["1"]);
  });
});
