import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// The collections list through the served API (decisions.md, "Collections"):
// GET /v1/collections answers each collection's name, token and holder
// counts, floor, top bid, 1-, 7- and 30-day volume and sales and the
// floor's change over a day, in the order asked, found by a text of its
// name or address, paged by nextPage; what ingest writes shows at once (no
// cache: the top bid and the floor change move with the clock); a caller's
// mistakes are 400s that say what is wrong. The orders and windows against
// an oracle: test/store/collection-summaries.property.test.ts.

const A = "0xa1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1";
const B = "0xb2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2";
const NOW = Math.floor(Date.now() / 1000);
const ETH = "1000000000000000000";
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

const sale = (contractAddress: string, n: number, price: string, ago: number) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress, assetId: String(n),
  timestamp: NOW - ago, block: 100 + n, price, amountReceived: price, currency: "ETH", marketplace: "BLUR",
});
const listing = (contractAddress: string, id: string, assetId: string, price: string, createdAt: number) => ({
  marketplaceId: id, marketplace: "OPENSEA", contractAddress, assetId, createdAt, lastUpdatedAt: createdAt, price, currency: "ETH", status: "CREATED",
});

interface Summary {
  contractAddress: string;
  name: string;
  totalTokens: number;
  numHolders: number;
  floor: { price: string; assetId: string } | null;
  topBid: { price: string } | null;
  volume1d: string;
  volume7d: string;
  volume30d: string;
  sales1d: number;
  sales7d: number;
  sales30d: number;
  floorChange1d: number | null;
  currency: string;
}

async function list(query: Record<string, string>) {
  const r = await restGet(ctx.server.baseUrl, "/v1/collections", query, ctx.read);
  return r as { status: number; body: { successful: number; nextPage: string; windowsEnd: string; data: Summary[]; message?: string } };
}

describe("GET /v1/collections", () => {
  it("answers every collection's summary in the order asked, found by name or address, paged", async () => {
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: A, name: "Alpha Apes" }, { contractAddress: B, name: "Beta Birds" }]);
    await ingestOk(ctx.server, ctx.ingest, "tokens", [
      { contractAddress: A, assetId: "1", currentOwner: `0x${"3".repeat(40)}`, attributes: [] },
      { contractAddress: A, assetId: "2", currentOwner: `0x${"4".repeat(40)}`, attributes: [] },
      { contractAddress: A, assetId: "3", currentOwner: `0x${"4".repeat(40)}`, attributes: [] },
    ]);
    // A: 1 ETH an hour ago, 2 ETH three days ago, 4 ETH twenty days ago. B: 3 ETH an hour ago.
    await ingestOk(ctx.server, ctx.ingest, "sales", [
      sale(A, 11, ETH, 3600), sale(A, 12, `2${ETH.slice(1)}`, 3 * 86_400), sale(A, 13, `4${ETH.slice(1)}`, 20 * 86_400),
      sale(B, 21, `3${ETH.slice(1)}`, 3600),
    ]);
    // A's floor was 1000 wei two days ago; an 800 wei listing since: a fifth lower.
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing(A, "1", "1", "1000", NOW - 2 * 86_400), listing(A, "2", "2", "800", NOW - 60)]);
    await ingestOk(ctx.server, ctx.ingest, "offers", [{
      marketplaceId: "7", marketplace: "BLUR", contractAddress: A, maker: `0x${"e".repeat(40)}`, price: "700", currency: "ETH",
      createdAt: NOW - 60, lastUpdatedAt: NOW - 60, expiresAt: 0, status: "CREATED",
    }]);

    const first = await list({});
    expect(first.status).toBe(200);
    expect(first.body.successful).toBe(1);
    expect(Number(first.body.windowsEnd)).toBe((Math.floor(NOW / 3600) + 1) * 3600);
    const [b, a] = first.body.data;
    expect(a).toEqual({
      // Its three tokens, and the three its sales made known (owned by their buyer).
      contractAddress: A, name: "Alpha Apes", totalTokens: 6, numHolders: 3,
      floor: expect.objectContaining({ price: "800", assetId: "2", marketplace: "OPENSEA" }),
      topBid: expect.objectContaining({ price: "700", marketplaceId: "7" }),
      volume1d: ETH, volume7d: `3${ETH.slice(1)}`, volume30d: `7${ETH.slice(1)}`, sales1d: 1, sales7d: 2, sales30d: 3,
      floorChange1d: -0.2, currency: "ETH", chain: "ethereum",
      // No price point: the dollars are none (docs/money.md; test/e2e/price-points.property.test.ts has them with points).
      volumeUsd1d: "0.00", volumeUsd7d: "0.00", volumeUsd30d: "0.00",
      // No metadata told (test/e2e/metadata.test.ts has it).
      description: "", image: "", externalUrl: "", twitter: "", discord: "", isSpam: false, spamReason: "",
      // The floor (800 wei) times its six tokens; every sale's volume (three, all in the last 30 days).
      marketCap: "4800", volumeAll: `7${ETH.slice(1)}`,
      // No record said otherwise (test/e2e/erc1155.test.ts has one that does).
      tokenStandard: "ERC721",
    });
    expect(b).toMatchObject({ contractAddress: B, name: "Beta Birds", totalTokens: 1, numHolders: 1, floor: null, topBid: null, floorChange1d: null, volume1d: `3${ETH.slice(1)}` });

    expect((await list({ sort: "volume7d" })).body.data.map((x) => x.contractAddress)).toEqual([A, B]);
    expect((await list({ sort: "floor" })).body.data.map((x) => x.contractAddress)).toEqual([A, B]);
    expect((await list({ sort: "sales" })).body.data.map((x) => x.contractAddress)).toEqual([A, B]);
    expect((await list({ query: "beta" })).body.data.map((x) => x.contractAddress)).toEqual([B]);
    expect((await list({ query: A.slice(0, 12).toUpperCase() })).body.data.map((x) => x.contractAddress)).toEqual([A]);
    expect((await list({ query: "nothing like it" })).body).toMatchObject({ data: [], nextPage: "" });

    const page1 = await list({ sort: "volume7d", limit: "1" });
    expect(page1.body.data.map((x) => x.contractAddress)).toEqual([A]);
    const page2 = await list({ sort: "volume7d", limit: "1", cursor: page1.body.nextPage });
    expect(page2.body).toMatchObject({ nextPage: "", data: [expect.objectContaining({ contractAddress: B })] });

    // What ingest writes shows at once: a sale makes B first by 7-day volume.
    await ingestOk(ctx.server, ctx.ingest, "sales", [sale(B, 22, `9${ETH.slice(1)}`, 60)]);
    expect((await list({ sort: "volume7d" })).body.data.map((x) => [x.contractAddress, x.sales1d])).toEqual([[B, 2], [A, 1]]);
  });

  it.each([
    [{ sort: "volume" }, /^sort must be one of volume1d, volume7d, volumeAll, floor, sales, marketCap, got "volume"$/],
    [{ query: "x".repeat(101) }, /query must be at most 100 characters/],
    [{ limit: "51" }, /limit/],
    [{ cursor: "nonsense!" }, /cursor is not a valid page token/],
  ])("refuses %j with a 400 that says why", async (query, message) => {
    const r = await list(query as Record<string, string>);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(message);
  });

  it("refuses a cursor of another order", async () => {
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: A, name: "Alpha Apes" }, { contractAddress: B, name: "Beta Birds" }]);
    const page = await list({ sort: "floor", limit: "1" });
    expect(page.body.nextPage).not.toBe("");
    const r = await list({ sort: "sales", limit: "1", cursor: page.body.nextPage });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/belongs to a different query/);
  });
});
