import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ENDPOINTS } from "../support/endpoints.js";
import { buildFixture, COLLECTION, EMPTY_COLLECTION, UNKNOWN_COLLECTION } from "../support/fixture.js";
import { clientsFor, restGet, transportFor, useFixtureServer } from "../support/server.js";

const t = useFixtureServer(buildFixture);

describe("the server's root", () => {
  it("GET / redirects to the documentation (before: a JSON 404)", async () => {
    const r = await fetch(`${t.server.baseUrl}/`, { redirect: "manual" });
    expect(r.status).toBe(302);
    expect(r.headers.get("location")).toBe("/docs");
    expect((await fetch(`${t.server.baseUrl}/`)).headers.get("content-type")).toMatch(/^text\/html/);
  });
});

describe("no route below a /v1 route (issue 49, item 20)", () => {
  it("answers 404 with that route's success flag at 0", async () => {
    for (const [path, flag] of [["/v1/asset/sales/", "success"], ["/v1/asset/sales/x", "success"], ["/v1/asset/appraisals/x/y", "successful"], ["/v1/collection/stats/nope", "successful"]] as const) {
      const r = await fetch(`${t.server.baseUrl}${path}?contractAddress=${COLLECTION}`, { headers: { "x-api-key": t.f.key } });
      expect(r.status, path).toBe(404);
      expect(await r.json(), path).toEqual({ [flag]: 0, code: "not_found", message: `no route GET "${path}"` });
    }
    const other = await fetch(`${t.server.baseUrl}/v1/nothing`);
    expect(other.status).toBe(404);
    expect(await other.json()).toEqual({ code: "not_found", message: 'no route GET "/v1/nothing"' });
  });
});

describe("unknown collection", () => {
  it.each(ENDPOINTS)("%s: 404 not_found naming the address", async (path, flag) => {
    const { status, body } = await restGet(t.server.baseUrl, path, { contractAddress: UNKNOWN_COLLECTION }, t.f.key);
    expect(status).toBe(404);
    expect(body).toEqual({ [flag]: 0, code: "not_found", message: `collection ${UNKNOWN_COLLECTION} not found` });
  });

  it("matches addresses in any hex case", async () => {
    const { status } = await restGet(t.server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION.toUpperCase().replace("0X", "0x") }, t.f.key);
    expect(status).toBe(200);
  });

  it("scores: one unknown address among known ones is not_found", async () => {
    const { status, body } = await restGet(t.server.baseUrl, "/v1/collection/scores", { contractAddress: `${COLLECTION},${UNKNOWN_COLLECTION}` }, t.f.key);
    expect(status).toBe(404);
    expect(body.message).toBe(`collection ${UNKNOWN_COLLECTION} not found`);
  });

  it("over gRPC-Web too", async () => {
    const c = clientsFor(transportFor("grpc-web", t.server.baseUrl));
    await expect(c.asset.listListings({ contractAddress: UNKNOWN_COLLECTION }, { headers: { "x-api-key": t.f.key } })).rejects.toMatchObject({
      code: Code.NotFound,
      rawMessage: `collection ${UNKNOWN_COLLECTION} not found`,
    });
  });
});

describe("known collection without matching rows", () => {
  it.each(ENDPOINTS.filter(([p]) => p !== "/v1/collection/stats"))("%s: success with empty data", async (path, flag) => {
    const { status, body } = await restGet(t.server.baseUrl, path, { contractAddress: EMPTY_COLLECTION }, t.f.key);
    expect(status).toBe(200);
    expect(body[flag]).toBe(1);
    expect(body.data).toEqual([]);
  });

  it("stats: zero sales, volume \"0\", no groups", async () => {
    const { body } = await restGet(t.server.baseUrl, "/v1/collection/stats", { contractAddress: EMPTY_COLLECTION }, t.f.key);
    expect(body).toEqual({
      successful: 1,
      data: { contractAddress: EMPTY_COLLECTION, totalNumSales: 0, totalVolume: "0", currency: "ETH", groups: [] },
    });
  });

  it("filters that match nothing return empty results", async () => {
    // A marketplace the store knows, in a collection without its sales (one it has no record of at all is a 400: validation.test.ts).
    const sales = await restGet(t.server.baseUrl, "/v1/asset/sales", { contractAddress: EMPTY_COLLECTION, marketplace: "OPENSEA" }, t.f.key);
    expect(sales.body).toEqual({ success: 1, cursor: "", data: [] });
    const stats = await restGet(t.server.baseUrl, "/v1/collection/stats", { contractAddress: COLLECTION, assetId: "999999" }, t.f.key);
    expect(stats.body.data).toMatchObject({ totalNumSales: 0, totalVolume: "0", groups: [] });
  });

  it("an unknown path answers 404 in the API's error form, not Fastify's", async () => {
    const response = await fetch(`${t.server.baseUrl}/v1/nothing-here?x=1`, { headers: { "x-api-key": t.f.key } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ code: "not_found", message: 'no route GET "/v1/nothing-here"' });
    const long = await fetch(`${t.server.baseUrl}/${"p".repeat(500)}`);
    expect(((await long.json()) as { message: string }).message).toBe(`no route GET "/${"p".repeat(99)}"... (501 characters)`);
  });
});
