import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { AssetService, type WatchListingsResponse } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// Listings as orders (decisions.md, "Listings as orders"), on the test
// engine, through a real server whose listing clock ticks every 200 ms:
// - a listing carries its maker and expiry, answered as sent;
// - a listing whose maker did not own the token when it was made, or whose
//   token had been burned, is CANCELLED from its creation and never the floor;
// - a listing lapses at its expiresAt by the clock, with no other write:
//   the floor now, the collections list's kept floor, the token's ask, the
//   listings list (EXPIRED at its expiresAt) and the listings feed follow,
//   and the floor at any time leaves it out from its expiry on;
// - a token that comes back to its maker does not bring its listing back.

const C = "0xc0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0";
const MAKER = `0x${"aa".repeat(20)}`;
const OTHER = `0x${"bb".repeat(20)}`;
const ZERO = `0x${"00".repeat(20)}`;
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0, listingClockMs: 200 });

const transfer = (n: number, assetId: string, from: string, to: string, timestamp: number) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, logIndex: 0, from, to, contractAddress: C, assetId, timestamp, block: 1_000 + n,
});

const listing = (id: string, assetId: string, price: string, createdAt: number, extra: { maker?: string; expiresAt?: number }) => ({
  marketplaceId: id, marketplace: "OPENSEA", contractAddress: C, assetId, createdAt, lastUpdatedAt: createdAt, price, currency: "ETH", status: "CREATED", ...extra,
});

const get = async (path: string, query: Record<string, string | number> = {}) => {
  const r = await restGet(ctx.server.baseUrl, path, { contractAddress: C, ...query }, ctx.read);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { data: unknown };
};
const floorId = async (at?: number) => ((await get("/v1/collection/floor", at === undefined ? {} : { at })).data as { floor: { marketplaceId: string } | null }).floor?.marketplaceId;
const listingsById = async () =>
  new Map(((await get("/v1/asset/listings", { limit: 50 })).data as { marketplaceId: string; status: string; lastUpdatedAt: number; maker: string; expiresAt: number }[])
    .map((l) => [l.marketplaceId, l]));

describe("listings as orders", () => {
  it("answer their maker and expiry, are not fillable by another than the owner, and lapse at their expiry by the clock", async () => {
    const now = Math.floor(Date.now() / 1000);
    const made = now - 100;
    // Far enough that the writes and reads before the lapse finish first on a loaded CI machine (3 s was not: the
    // listing read as EXPIRED at its first check).
    const expiresAt = now + 8;
    // Tokens 1, 2 and 3 minted to the maker; token 3 leaves and comes back.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [
      transfer(1, "1", ZERO, MAKER, now - 1_000), transfer(2, "2", ZERO, MAKER, now - 1_000), transfer(3, "3", ZERO, MAKER, now - 1_000),
      transfer(4, "3", MAKER, OTHER, now - 50), transfer(5, "3", OTHER, MAKER, now - 40),
      // Token 5 minted and burned before any listing of it.
      transfer(6, "5", ZERO, MAKER, now - 1_000), transfer(7, "5", MAKER, ZERO, now - 500),
    ]);
    const grpc = createClient(AssetService, createGrpcTransport({ baseUrl: ctx.server.baseUrl }));
    const abort = new AbortController();
    const feed = grpc.watchListings({ contractAddress: C }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })[Symbol.asyncIterator]();
    await ingestOk(ctx.server, ctx.ingest, "listings", [
      listing("1", "1", "100", made, { maker: MAKER.toUpperCase().replace("0X", "0x"), expiresAt }),
      listing("2", "2", "50", made, { maker: OTHER }),
      listing("3", "2", "300", made, { maker: MAKER }),
      listing("4", "3", "20", made, { maker: MAKER }),
      listing("5", "5", "10", made, {}),
    ]);

    let byId = await listingsById();
    expect(byId.get("1")).toMatchObject({ status: "CREATED", maker: MAKER, expiresAt, lastUpdatedAt: made });
    // Made by one who did not own the token: not fillable from its creation.
    expect(byId.get("2")).toMatchObject({ status: "CANCELLED", maker: OTHER, expiresAt: 0, lastUpdatedAt: made });
    expect(byId.get("3")).toMatchObject({ status: "CREATED", maker: MAKER, expiresAt: 0 });
    // Its token left the maker after it was made and came back: it stays ended, at the first move.
    expect(byId.get("4")).toMatchObject({ status: "CANCELLED", lastUpdatedAt: now - 50 });
    // A burned token's listing, maker told or not: owned by nobody, filled by nobody.
    expect(byId.get("5")).toMatchObject({ status: "CANCELLED", maker: "", lastUpdatedAt: made });
    expect(await floorId()).toBe("1");
    const listed = async () => ((await restGet(ctx.server.baseUrl, "/v1/collections", { limit: 50 }, ctx.read)).body.data as { contractAddress: string; floor: { marketplaceId: string } | null }[])
      .find((c) => c.contractAddress === C)?.floor?.marketplaceId;
    expect(await listed()).toBe("1");

    // Nothing else is written: the clock lapses it.
    const deadline = Date.now() + 20_000;
    while ((await floorId()) !== "3" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(Math.floor(Date.now() / 1000)).toBeGreaterThanOrEqual(expiresAt);
    expect(await floorId()).toBe("3");
    byId = await listingsById();
    expect(byId.get("1")).toMatchObject({ status: "EXPIRED", lastUpdatedAt: expiresAt });
    expect(await listed()).toBe("3");
    const created = ((await get("/v1/asset/listings", { status: "CREATED", limit: 50 })).data as { marketplaceId: string }[]).map((l) => l.marketplaceId);
    expect(created).toEqual(["3"]);
    const tokens = (await get("/v1/asset/tokens", { sort: "price", limit: 50 })).data as { assetId: string; listing?: { marketplaceId: string } | null }[];
    expect(tokens.find((t) => t.assetId === "1")?.listing ?? null).toBeNull();
    expect(tokens[0]).toMatchObject({ assetId: "2", listing: { marketplaceId: "3" } });
    // The floor at a time: the listing until its expiry, not from it.
    expect(await floorId(expiresAt - 1)).toBe("1");
    expect(await floorId(expiresAt)).toBe("3");

    // The feed sent the listings, then listing 1 again, EXPIRED.
    const seen: WatchListingsResponse[] = [];
    for (;;) {
      const m = (await feed.next()).value as WatchListingsResponse;
      if (m.listing === undefined) continue;
      seen.push(m);
      if (m.listing.marketplaceId === "1" && m.listing.status === ListingStatus.EXPIRED) break;
    }
    abort.abort();
    expect(seen.at(-1)!.listing).toMatchObject({ maker: MAKER, expiresAt: BigInt(expiresAt), lastUpdatedAt: BigInt(expiresAt) });
  }, 60_000);

  it("refuses an expiry not after its creation and a maker that is not an address", async () => {
    const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/listings`, {
      method: "POST",
      headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
      body: `${JSON.stringify(listing("9", "1", "1", 1_700_000_000, { expiresAt: 1_700_000_000 }))}\n${JSON.stringify(listing("10", "1", "1", 1_700_000_000, { maker: "alice" }))}\n`,
    });
    expect(r.status).toBe(400);
    const text = await r.text();
    expect(text).toMatch(/expiresAt/);
    expect(text).toMatch(/maker/);
  });
});
