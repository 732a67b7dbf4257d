import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { buildServer } from "../../src/server.js";
import { createServices } from "../../src/service/services.js";
import { openReadOnly, type Db } from "../../src/store/sqlite/database.js";
import { type SqliteRepositories, sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { rpcInterceptors } from "../../src/transport/rpc/interceptors.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { bySaleOrder } from "../support/oracle.js";
import { USD_STATS_MAX_SALES } from "../../src/domain/money.js";

// The services and interceptors in-process, without a network server.

let f: Fixture;
let db: Db;

beforeAll(() => {
  f = buildFixture();
  db = openReadOnly(f.dbPath);
});
afterAll(() => {
  db.close();
  f.cleanup();
});

function transport(store: SqliteRepositories, log = { error: vi.fn() }) {
  return {
    log,
    // The server's own routes and interceptors, without the network.
    transport: createRouterTransport((router) => createServices(store).routes(router), {
      router: { interceptors: rpcInterceptors({ lookup: (k) => (k === "good" ? { id: 1, rateLimit: null, scope: "read" as const } : undefined) }, log) },
    }),
  };
}

const headers = { "x-api-key": "good" };

describe("services over an in-process transport", () => {
  it("serve sales in the documented order", async () => {
    const client = createClient(AssetService, transport(sqliteRepositories(db)).transport);
    const res = await client.listSales({ contractAddress: COLLECTION, limit: 50 }, { headers });
    expect(res.data.map((s) => s.hash)).toEqual(bySaleOrder(f.sales).slice(0, 50).map((s) => s.hash));
    expect(res.success).toBe(1);
  });

  it("refuse stats in USD past their bound as the caller's to narrow, passing the store the bound", async () => {
    const store = sqliteRepositories(db);
    const spy = vi.spyOn(store.sales, "salesUsdSummary").mockImplementation(() => undefined);
    const client = createClient(CollectionService, transport(store).transport);
    await expect(client.getCollectionStats({ contractAddress: COLLECTION, currency: "usd" }, { headers })).rejects.toMatchObject({
      code: Code.InvalidArgument,
      rawMessage: expect.stringMatching(/currency=usd sums at most 50000 sales per call .* narrow it with since and until/),
    });
    expect(spy.mock.calls[0]?.[2]).toBe(USD_STATS_MAX_SALES);
  });

  it("check the key before touching the store", async () => {
    const store = sqliteRepositories(db);
    const spy = vi.spyOn(store.collections, "collectionId");
    const client = createClient(CollectionService, transport(store).transport);
    await expect(client.listScores({ contractAddress: [COLLECTION] }, { headers: { "x-api-key": "bad" } })).rejects.toMatchObject({
      code: Code.Unauthenticated,
    });
    expect(spy).not.toHaveBeenCalled();
  });

  it("log internal errors and show callers only 'internal error'", async () => {
    const store = sqliteRepositories(db);
    vi.spyOn(store.collections, "collectionId").mockImplementation(() => {
      throw new Error("SQLITE_CORRUPT: database disk image is malformed at /srv/secret/path.sqlite");
    });
    const { transport: t, log } = transport(store);
    const client = createClient(AssetService, t);
    const err = await client.listSales({ contractAddress: COLLECTION }, { headers }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: Code.Internal, rawMessage: "internal error" });
    expect(log.error).toHaveBeenCalledTimes(1);
  });
});

describe("REST over a store that fails", () => {
  it("answers 500 with the family's flag and no internals", async () => {
    const store = sqliteRepositories(db);
    // REST reads the page as ready rows (domain/wire/fragments.ts).
    vi.spyOn(store.sales, "salesPage").mockImplementation(() => {
      throw new Error("no such table: sales_v2 (SELECT * FROM sales_v2)");
    });
    const { app } = await buildServer({ store, keys: { lookup: () => ({ id: 1, rateLimit: null, scope: "read" as const }) } });
    try {
      const res = await app.inject({ url: `/v1/asset/sales?contractAddress=${COLLECTION}`, headers: { "x-api-key": "k" } });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({ success: 0, code: "internal", message: "internal error" });
      expect(res.body).not.toMatch(/sales_v2|SELECT/);
    } finally {
      await app.close();
    }
  });
});
