import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildServer } from "../../src/server.js";
import { type Db, openReadOnly } from "../../src/store/sqlite/database.js";
import { type SqliteRepositories, sqliteRepositories } from "../../src/store/sqlite/read-repositories.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { clientsFor, transportFor } from "../support/server.js";
import { openSse } from "../../bench/sse-client.js";
import { NodeExchange } from "../../src/transport/unary/node-exchange.js";

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

describe("a GET answered before, answered again without Fastify (unary/node-exchange.ts)", () => {
  const url = () => `${baseUrl}/v1/asset/sales?contractAddress=${COLLECTION}&limit=2`;
  const view = async (r: Response) => ({
    status: r.status,
    headers: Object.fromEntries([...r.headers].filter(([name]) => name !== "date")),
    body: await r.text(),
  });

  it("writes the same status, headers and bytes, 304s the same, and one request line each with its own id", async () => {
    const raw = vi.spyOn(NodeExchange.prototype, "send");
    try {
      const headers = { "x-api-key": f.key };
      const before = lines.length;
      const first = await view(await fetch(url(), { headers }));
      expect(raw).not.toHaveBeenCalled();
      const again = await view(await fetch(url(), { headers }));
      expect(raw).toHaveBeenCalledTimes(1);
      expect(first.status).toBe(200);
      expect(again).toEqual(first);
      const etag = first.headers.etag!;
      const revalidated = await view(await fetch(url(), { headers: { ...headers, "if-none-match": etag } }));
      expect(raw).toHaveBeenCalledTimes(2);
      expect(revalidated).toMatchObject({ status: 304, body: "", headers: { etag, "cache-control": first.headers["cache-control"] } });
      await expect.poll(() => lines.slice(before).filter((l) => l.msg === "request").length).toBe(3);
      const mine = lines.slice(before).filter((l) => l.msg === "request");
      expect(mine.map((l) => [l.method, l.status, l.url])).toEqual([
        ["GET", 200, url().slice(baseUrl.length)],
        ["GET", 200, url().slice(baseUrl.length)],
        ["GET", 304, url().slice(baseUrl.length)],
      ]);
      expect(new Set(mine.map((l) => l.reqId)).size).toBe(3);
      for (const l of mine) expect(l.reqId).toMatch(/^req-\d+$/);
    } finally {
      raw.mockRestore();
    }
  });

  it("refuses a missing or revoked key in REST's error form, as Fastify's path does", async () => {
    const fail = vi.spyOn(NodeExchange.prototype, "fail");
    try {
      await (await fetch(url(), { headers: { "x-api-key": f.key } })).text();
      for (const headers of [{}, { "x-api-key": "mdk_not-a-key" }] as Record<string, string>[]) {
        const viaFastify = await view(await fetch(`${url()}&marketplace=`, { headers }));
        const viaRaw = await view(await fetch(url(), { headers }));
        expect(viaRaw.status).toBe(401);
        expect(viaRaw).toEqual(viaFastify);
      }
      expect(fail).toHaveBeenCalledTimes(2);
    } finally {
      fail.mockRestore();
    }
  });
});

describe("request logging", () => {
  it("writes exactly one line per request, REST and RPC alike, with status and no key", async () => {
    const headers = { "x-api-key": f.key };
    const before = lines.length;
    await (await fetch(`${baseUrl}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers })).text();
    await (await fetch(`${baseUrl}/v1/asset/sales?contractAddress=${COLLECTION}&limit=99`, { headers })).text();
    await (await fetch(`${baseUrl}/v1/asset/sales?contractAddress=${COLLECTION}`, { headers: { "x-api-key": "mdk_secret-guess" } })).text();
    await clientsFor(transportFor("grpc", baseUrl)).asset.listSales({ contractAddress: COLLECTION }, { headers });
    await clientsFor(transportFor("connect", baseUrl)).asset.listSales({ contractAddress: COLLECTION }, { headers });
    await new Promise((r) => setTimeout(r, 50));
    const requests = lines.slice(before).filter((l) => l.msg === "request");
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

describe("the logs and metrics of live feeds", () => {
  it("an SSE key under a percent-encoded parameter name is redacted as the decoded name is", async () => {
    const before = lines.length;
    const r = await openSse(`${baseUrl}/v1/asset/sales/stream?contractAddress=${COLLECTION}&api%4Bey=${f.key}`);
    expect(r.status).toBe(200);
    r.close();
    await expect.poll(() => lines.slice(before).filter((l) => l.msg === "request").length).toBe(1);
    const line = lines.slice(before).find((l) => l.msg === "request")!;
    expect(line.url).toBe(`/v1/asset/sales/stream?contractAddress=${COLLECTION}&api%4Bey=[redacted]`);
    expect(JSON.stringify(lines)).not.toContain(f.key);
  });

  it("a stream the client closes gets its request line (duration, messages sent) and its request metric, on SSE and gRPC", async () => {
    const before = lines.length;
    const sse = await openSse(`${baseUrl}/v1/asset/sales/stream?contractAddress=${COLLECTION}`, { "x-api-key": f.key }, { positions: true });
    await sse.next();
    sse.close();
    const abort = new AbortController();
    const it = clientsFor(transportFor("grpc", baseUrl)).asset.watchSales({ contractAddress: COLLECTION }, { headers: { "x-api-key": f.key }, signal: abort.signal })[Symbol.asyncIterator]();
    await it.next();
    abort.abort();
    await expect.poll(() => lines.slice(before).filter((l) => l.msg === "request").length, { timeout: 5000 }).toBe(2);
    const connectAbort = new AbortController();
    const connect = clientsFor(transportFor("connect", baseUrl)).asset.watchSales({ contractAddress: COLLECTION }, { headers: { "x-api-key": f.key }, signal: connectAbort.signal })[Symbol.asyncIterator]();
    await connect.next();
    connectAbort.abort();
    await expect.poll(() => lines.slice(before).filter((l) => l.msg === "request").length, { timeout: 5000 }).toBe(3);
    const [sseLine, grpcLine, connectLine] = lines.slice(before).filter((l) => l.msg === "request");
    expect(sseLine).toMatchObject({ method: "GET", url: `/v1/asset/sales/stream?contractAddress=${COLLECTION}`, status: 200, messages: 1, closedBy: "client" });
    expect(grpcLine).toMatchObject({ method: "POST", url: "/marketdata.v1.AssetService/WatchSales", messages: 1, closedBy: "client" });
    expect(connectLine).toMatchObject({ method: "POST", url: "/marketdata.v1.AssetService/WatchSales", messages: 1, closedBy: "client" });
    for (const l of [sseLine!, grpcLine!, connectLine!]) expect(l.ms).toBeGreaterThan(0);
    // (The SSE streams of both tests in this block.)
    const metrics = await (await fetch(`${baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^marketdata_requests_total\{procedure="\/v1\/asset\/sales\/stream",protocol="rest",code="canceled"\} 2$/m);
    expect(metrics).toMatch(/^marketdata_requests_total\{procedure="\/marketdata.v1.AssetService\/WatchSales",protocol="grpc",code="canceled"\} 1$/m);
  });
});
