import { create, type DescMethodUnary, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListSalesRequestSchema, ListSalesResponseSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import { SERVICES } from "../../src/service/services.js";
import { restRoutes } from "../../src/transport/rest/http-rules.js";
import { VALID } from "../ingest/records.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { clientsFor, type ProtocolName, startTestServer, type TestServer, transportFor } from "../support/server.js";
import { deriveAt, fixtureOnEngine, importRecords as importAt, withKeys } from "../support/engine.js";


// The response cache and conditional requests. A server with the cache is
// compared with one without it (the oracle) on the same store, before and
// after imports and a derive commit from another connection.

let f: Fixture;
let cached: TestServer;
let oracle: TestServer;

beforeAll(async () => {
  f = await fixtureOnEngine(buildFixture());
  cached = await startTestServer(f.dbPath);
  oracle = await startTestServer(f.dbPath, { cacheMb: 0 });
});
afterAll(async () => {
  await cached?.close();
  await oracle?.close();
  await f?.cleanup();
});

const QUERIES: Record<string, Record<string, string>> = {
  "/v1/asset/appraisals": { contractAddress: COLLECTION, limit: "5" },
  "/v1/asset/rarity": { contractAddress: COLLECTION, limit: "5" },
  "/v1/asset/sales": { contractAddress: COLLECTION, limit: "5" },
  "/v1/asset/listings": { contractAddress: COLLECTION, limit: "5" },
  "/v1/collection/stats": { contractAddress: COLLECTION },
  "/v1/collection/influencers": { contractAddress: COLLECTION, limit: "5" },
  "/v1/collection/tweets": { contractAddress: COLLECTION, limit: "5" },
  "/v1/collection/scores": { contractAddress: COLLECTION },
  "/v1/collection/floor": { contractAddress: COLLECTION },
  "/v1/collection/holders": { contractAddress: COLLECTION, limit: "5" },
  "/v1/collection/stats/series": { contractAddress: COLLECTION, interval: "week", since: "1779000000" },
  "/v1/collection/candles": { contractAddress: COLLECTION, interval: "1d", since: "1779000000" },
  "/v1/asset/tokens": { contractAddress: COLLECTION, sort: "price", limit: "5" },
  // Token 42, sold by the import below: its owner moves.
  "/v1/asset/owners": { contractAddress: COLLECTION, assetId: "42" },
  "/v1/collection/traits": { contractAddress: COLLECTION },
  "/v1/collection/market": { contractAddress: COLLECTION },
  "/v1/asset/offers": { contractAddress: COLLECTION, limit: "5" },
  "/v1/collections": { sort: "floor", limit: "5" },
  "/v1/collection/activity": { contractAddress: COLLECTION, limit: "5" },
};
/** Answers that move with the clock (an offer's expiry), never served from the cache (services.ts CLOCK_DEPENDENT_PROCEDURES). */
const UNCACHED = new Set(["/v1/collection/traits", "/v1/collection/market", "/v1/asset/offers", "/v1/collections", "/v1/collection/activity"]);

async function get(server: TestServer, path: string, query: Record<string, string>, headers: Record<string, string> = {}) {
  const url = `${server.baseUrl}${path}?${new URLSearchParams(query)}`;
  const res = await fetch(url, { headers: { "x-api-key": f.key, ...headers } });
  return { status: res.status, etag: res.headers.get("etag"), cacheControl: res.headers.get("cache-control"), text: await res.text() };
}

/** Every REST response of both servers; they must agree. */
async function restSnapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [path, query] of Object.entries(QUERIES)) {
    const a = await get(cached, path, query);
    const b = await get(oracle, path, query);
    expect(a.status, path).toBe(200);
    expect(a.text, path).toBe(b.text);
    out[path] = a.text;
  }
  return out;
}

const RPC_PROTOCOLS: ProtocolName[] = ["connect-binary-get", "connect", "grpc"];
const RPC_REQUESTS: Record<string, object> = {
  ListScores: { contractAddress: [COLLECTION] },
  GetCollectionStats: { contractAddress: COLLECTION },
  GetCollectionFloor: { contractAddress: COLLECTION },
  GetCollectionStatsSeries: { contractAddress: COLLECTION, interval: "week", since: 1_779_000_000n },
  GetCollectionCandles: { contractAddress: COLLECTION, interval: "1d", since: 1_779_000_000n },
  ListTokenOwners: { contractAddress: COLLECTION, assetId: "42" },
};
const rpcRequest = (name: string): object => RPC_REQUESTS[name] ?? { contractAddress: COLLECTION, limit: 5 };

/** Every RPC response, on the protocols given, of both servers; they must agree. */
async function rpcSnapshot(): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const { method } of restRoutes(SERVICES)) {
    for (const protocol of RPC_PROTOCOLS) {
      const call = async (server: TestServer) => {
        const client = createClient(method.parent, transportFor(protocol, server.baseUrl)) as unknown as Record<
          string,
          (req: object, opts: object) => Promise<never>
        >;
        const m = await client[method.localName]!(rpcRequest(method.name), { headers: { "x-api-key": f.key } });
        return toJson((method as DescMethodUnary).output, m);
      };
      const a = await call(cached);
      expect(a, `${protocol} ${method.name}`).toEqual(await call(oracle));
      out[`${protocol} ${method.name}`] = a;
    }
  }
  return out;
}

async function importRecords(kind: Kind, records: object[]): Promise<void> {
  await importAt(f.dbPath, kind, records);
}

describe("response cache", () => {
  it("serves no stale response on any endpoint or protocol after an import, then after a derive", async () => {
    const rest0 = await restSnapshot();
    const rpc0 = await rpcSnapshot();
    // The second round came from the cache.
    const hits = cached.cache.hits;
    expect(await restSnapshot()).toEqual(rest0);
    expect(cached.cache.hits).toBeGreaterThanOrEqual(hits + Object.keys(QUERIES).filter((p) => !UNCACHED.has(p)).length);

    // One import per kind, each changing the first page of its endpoints.
    const c = COLLECTION;
    await importRecords("appraisals", [{ ...VALID.appraisals, contractAddress: c, assetId: "0", fairMarketValue: "1" }]);
    await importRecords("rarity", [{ ...VALID.rarity, contractAddress: c, assetId: "0", rarityRank: 1, rarityScore: 9 }]);
    await importRecords("sales", [{ ...VALID.sales, contractAddress: c, timestamp: 1_780_000_000, block: 19_000_000 }]);
    // The lowest price yet: the floor moves too.
    await importRecords("listings", [{ ...VALID.listings, contractAddress: c, createdAt: 1_780_000_000, lastUpdatedAt: 1_780_000_000, price: "1" }]);
    await importRecords("tokens", [{ ...VALID.tokens, contractAddress: c, assetId: "0" }]);
    await importRecords("influencers", [{ ...VALID.influencers, contractAddress: c, score: 1e6 }]);
    await importRecords("tweets", [{ ...VALID.tweets, contractAddress: c, favoriteCount: 1e9, retweetCount: 0, interaction: 1e9 }]);
    await importRecords("scores", [{ ...VALID.scores, contractAddress: c, name: "Test Apes", hype: 1 }]);
    await importRecords("offers", [{ ...VALID.offers, contractAddress: c, createdAt: 1_780_000_000, lastUpdatedAt: 1_780_000_000, expiresAt: 0 }]);

    const rest1 = await restSnapshot();
    const rpc1 = await rpcSnapshot();
    for (const path of Object.keys(QUERIES)) expect(rest1[path], path).not.toBe(rest0[path]);
    for (const key of Object.keys(rpc0)) expect(rpc1[key], key).not.toEqual(rpc0[key]);

    // A derive recomputes appraisals from the sales (now including the new one).
    await deriveAt(f.dbPath);
    const rest2 = await restSnapshot();
    await rpcSnapshot();
    expect(rest2["/v1/asset/appraisals"]).not.toBe(rest1["/v1/asset/appraisals"]);
  });
});

describe("conditional requests", () => {
  const path = "/v1/asset/sales";
  const query = { contractAddress: COLLECTION, limit: "3", marketplace: "BLUR" };

  it("same data, same strong ETag, whatever the parameter order, address case or enum spelling", async () => {
    const a = await get(cached, path, query);
    const b = await get(oracle, path, query);
    const c = await get(cached, path, { limit: "3", marketplace: "BLUR", contractAddress: COLLECTION.toUpperCase().replace("0X", "0x") });
    expect(a.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(b.etag).toBe(a.etag);
    expect(c.etag).toBe(a.etag);
    expect(c.text).toBe(a.text);
    expect(a.cacheControl).toBe("private, no-cache");
    const l1 = await get(cached, "/v1/asset/listings", { contractAddress: COLLECTION, status: "CREATED" });
    const l2 = await get(cached, "/v1/asset/listings", { status: "LISTING_STATUS_CREATED", contractAddress: COLLECTION });
    expect(l2.etag).toBe(l1.etag);
  });

  it("If-None-Match: 304 with no body for a matching tag (strong, weak, in a list, or *), 200 otherwise", async () => {
    const { etag } = await get(cached, path, query);
    for (const inm of [etag!, `W/${etag}`, `"nope", ${etag}`, "*"]) {
      const r = await get(cached, path, query, { "if-none-match": inm });
      expect(r.status, inm).toBe(304);
      expect(r.text).toBe("");
      expect(r.etag).toBe(etag);
    }
    const miss = await get(cached, path, query, { "if-none-match": '"something-else"' });
    expect(miss.status).toBe(200);
    expect(miss.text.length).toBeGreaterThan(10);
  });

  it("changed data, new ETag; the old one no longer matches", async () => {
    const before = await get(cached, path, query);
    await importRecords("sales", [
      { ...VALID.sales, hash: `0x${"cd".repeat(32)}`, contractAddress: COLLECTION, marketplace: "BLUR", timestamp: 1_780_000_100 },
    ]);
    const after = await get(cached, path, query, { "if-none-match": before.etag! });
    expect(after.status).toBe(200);
    expect(after.etag).not.toBe(before.etag);
  });

  it("a request without a valid key gets 401 even when its response is cached", async () => {
    const ok = await get(cached, path, query);
    expect(ok.status).toBe(200);
    for (const key of [undefined, "", "mdk_not-a-key", f.revokedKey]) {
      const res = await fetch(`${cached.baseUrl}${path}?${new URLSearchParams(query)}`, {
        headers: { ...(key === undefined ? {} : { "x-api-key": key }), "if-none-match": ok.etag! },
      });
      expect(res.status, String(key)).toBe(401);
      expect(res.headers.get("etag")).toBeNull();
    }
  });

  it("a key revoked while its responses are cached is refused from the next request", async () => {
    const { id, key } = await withKeys(f.dbPath, (admin) => admin.create("soon revoked"));
    const url = `${cached.baseUrl}${path}?${new URLSearchParams(query)}`;
    expect((await fetch(url, { headers: { "x-api-key": key } })).status).toBe(200);
    await withKeys(f.dbPath, (admin) => admin.revoke(id));
    expect((await fetch(url, { headers: { "x-api-key": key } })).status).toBe(401);
  });

  it("Connect GET responses carry ETags and answer If-None-Match with 304", async () => {
    const message = Buffer.from(JSON.stringify({ contractAddress: COLLECTION, limit: 3 })).toString();
    const url = `${cached.baseUrl}/marketdata.v1.AssetService/ListSales?connect=v1&encoding=json&message=${encodeURIComponent(message)}`;
    const first = await fetch(url, { headers: { "x-api-key": f.key } });
    expect(first.status).toBe(200);
    expect(first.headers.get("content-type")).toBe("application/json");
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"/);
    expect(first.headers.get("cache-control")).toBe("private, no-cache");
    const again = await fetch(url, { headers: { "x-api-key": f.key, "if-none-match": etag! } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe("");
    const noKey = await fetch(url, { headers: { "if-none-match": etag! } });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ code: "unauthenticated" });
  });

  it("an entry a gRPC call put in the cache serves Connect GET with the same bytes and a valid ETag", async () => {
    const request = { contractAddress: COLLECTION, limit: 4, marketplace: "OPENSEA" };
    const viaGrpc = await clientsFor(transportFor("grpc", cached.baseUrl)).asset.listSales(request, { headers: { "x-api-key": f.key } });
    const message = Buffer.from(toBinary(ListSalesRequestSchema, create(ListSalesRequestSchema, request))).toString("base64url");
    const url = `/marketdata.v1.AssetService/ListSales?connect=v1&encoding=proto&base64=1&message=${message}`;
    const hits = cached.cache.hits;
    const fromCache = await fetch(`${cached.baseUrl}${url}`, { headers: { "x-api-key": f.key } });
    expect(cached.cache.hits).toBe(hits + 1);
    const fresh = await fetch(`${oracle.baseUrl}${url}`, { headers: { "x-api-key": f.key } });
    expect(fromCache.headers.get("etag")).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(fromCache.headers.get("etag")).toBe(fresh.headers.get("etag"));
    expect(fromCache.headers.get("content-type")).toBe("application/proto");
    const bytes = new Uint8Array(await fromCache.arrayBuffer());
    expect(fromBinary(ListSalesResponseSchema, bytes)).toEqual(viaGrpc);
  });

  it("with the cache off (--cache-mb 0) responses still carry ETags and 304s", async () => {
    const { etag } = await get(oracle, path, query);
    expect((await get(oracle, path, query, { "if-none-match": etag! })).status).toBe(304);
    expect(oracle.cache.enabled).toBe(false);
  });
});
