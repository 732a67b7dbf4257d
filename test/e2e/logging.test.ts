import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildServer } from "../../src/server.js";
import { type Db, openReadOnly } from "../../src/store/sqlite/database.js";
import { type SqliteRepositories, sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { clientsFor, transportFor } from "../support/server.js";

// One log line per request on every path, never an API key.

let f: Fixture;
let db: Db;
let close: () => Promise<void>;
let baseUrl: string;
let store: SqliteRepositories;
const lines: Record<string, unknown>[] = [];

beforeAll(async () => {
  f = buildFixture();
  db = openReadOnly(f.dbPath);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split("\n")) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  store = sqliteRepositories(db);
  const { app } = await buildServer({ store, keys: store.keys, logger: pino({ level: "info" }, sink) });
  baseUrl = await app.listen({ port: 0, host: "127.0.0.1" });
  close = () => app.close();
});
afterAll(async () => {
  await close?.();
  db?.close();
  f?.cleanup();
});

describe("request logging", () => {
  it("writes exactly one line per request, REST and RPC alike, with status and no key", async () => {
    const headers = { "x-api-key": f.key };
    await (await fetch(`${baseUrl}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers })).text();
    await (await fetch(`${baseUrl}/v1/asset/sales?contractAddress=${COLLECTION}&limit=99`, { headers })).text();
    await (await fetch(`${baseUrl}/v1/asset/sales?contractAddress=${COLLECTION}`, { headers: { "x-api-key": "mdk_secret-guess" } })).text();
    await clientsFor(transportFor("grpc", baseUrl)).asset.listSales({ contractAddress: COLLECTION }, { headers });
    await clientsFor(transportFor("connect", baseUrl)).asset.listSales({ contractAddress: COLLECTION }, { headers });
    await new Promise((r) => setTimeout(r, 50));
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests.map((l) => [l.method, l.status])).toEqual([
      ["GET", 200],
      ["GET", 400],
      ["GET", 401],
      ["POST", 200],
      ["POST", 200],
    ]);
    expect(requests[3]).toMatchObject({ url: "/marketdata.v1.AssetService/ListSales" });
    const text = JSON.stringify(lines);
    expect(text).not.toContain(f.key);
    expect(text).not.toContain("mdk_secret-guess");
  });

  it("logs an RPC's internal error with that request's own logger (its reqId), on the Connect path", async () => {
    const spy = vi.spyOn(store.social, "topTweets").mockImplementation(() => {
      throw new Error("disk I/O error");
    });
    try {
      const err = await clientsFor(transportFor("connect", baseUrl))
        .collection.listTweets({ contractAddress: COLLECTION }, { headers: { "x-api-key": f.key } })
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ rawMessage: "internal error" });
      await new Promise((r) => setTimeout(r, 50));
      const logged = lines.find((l) => l.msg === "internal error");
      expect(logged?.reqId).toMatch(/^rpc-\d+$/);
      const requestLine = lines.filter((l) => l.msg === "request").at(-1);
      expect(requestLine?.reqId).toBe(logged?.reqId);
    } finally {
      spy.mockRestore();
    }
  });

  it("logs the gRPC status of calls on the direct gRPC path", async () => {
    const before = lines.length;
    await clientsFor(transportFor("grpc", baseUrl))
      .asset.listSales({ contractAddress: COLLECTION, limit: 99 }, { headers: { "x-api-key": f.key } })
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    expect(lines.slice(before).filter((l) => l.msg === "request").map((l) => l.grpcStatus)).toEqual([3]);
  });
});
