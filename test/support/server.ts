import net from "node:net";
import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { type RunningServer, type StartOptions, startServer } from "../../src/server.js";
import { emptyStore, fixtureOnEngine, withKeys } from "./engine.js";
import { openWritableStore } from "../../src/store/open.js";
import type { Fixture } from "./fixture.js";

// A real server on an ephemeral loopback port, and real clients for it.

export interface TestServer extends RunningServer {
  baseUrl: string;
}

/** The CLI's own startServer, on an ephemeral loopback port. */
export async function startTestServer(dbPath: string, options: Partial<StartOptions> = {}): Promise<TestServer> {
  // A short drain: test clients do not race the shutdown (hostile-connections.test.ts tests the drain).
  // No background derive unless asked: tests that compare a store with what
  // was imported into it would see derived rows appear (derive-refresh.test.ts turns it on).
  // No listing clock unless asked either: its commits would elect a SQLite writer beside every store served (listing-orders.test.ts turns it on).
  const server = await startServer({ db: dbPath, port: 0, host: "127.0.0.1", drainMs: 50, deriveRefresh: false, listingClockMs: 0, ...options });
  return { ...server, baseUrl: server.url };
}

export type ProtocolName = "connect" | "connect-binary-get" | "grpc-web" | "grpc";

export const PROTOCOLS: ProtocolName[] = ["connect", "connect-binary-get", "grpc-web", "grpc"];

export function transportFor(protocol: ProtocolName, baseUrl: string): Transport {
  switch (protocol) {
    case "connect":
      return createConnectTransport({ baseUrl, httpVersion: "1.1" });
    case "connect-binary-get":
      return createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, useHttpGet: true });
    case "grpc-web":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
    case "grpc":
      return createGrpcTransport({ baseUrl });
  }
}

export interface Clients {
  asset: Client<typeof AssetService>;
  collection: Client<typeof CollectionService>;
}

export function clientsFor(transport: Transport): Clients {
  return { asset: createClient(AssetService, transport), collection: createClient(CollectionService, transport) };
}

export function clientFor<S extends DescService>(service: S, transport: Transport): Client<S> {
  return createClient(service, transport);
}

export interface RestResult {
  status: number;
  body: Record<string, unknown>;
}

/** GET a /v1 path with query parameters (arrays repeat the key). */
export async function restGet(
  baseUrl: string,
  path: string,
  query: Record<string, string | number | string[] | undefined>,
  key: string | undefined,
): Promise<RestResult> {
  const url = new URL(path, baseUrl);
  for (const [name, value] of Object.entries(query)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(v));
  }
  const response = await fetch(url, { headers: key === undefined ? {} : { "x-api-key": key } });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Every record of a /v1 list that pages by `cursor` (sales, listings), page after page. */
export async function restListAll(baseUrl: string, path: string, query: Record<string, string>, key: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  do {
    const r = await restGet(baseUrl, path, { ...query, limit: 50, cursor }, key);
    rows.push(...(r.body.data as Record<string, unknown>[]));
    cursor = (r.body.cursor as string) || undefined;
  } while (cursor !== undefined);
  return rows;
}

/**
 * Registers beforeAll/afterAll hooks that build the fixture store (on the
 * test engine: engine.ts) and serve it; the returned object is filled in
 * before the first test runs.
 */
export function useFixtureServer(build: () => Fixture, options: Partial<StartOptions> = {}): { f: Fixture; server: TestServer } {
  const ctx = {} as { f: Fixture; server: TestServer };
  beforeAll(async () => {
    ctx.f = await fixtureOnEngine(build());
    ctx.server = await startTestServer(ctx.f.dbPath, options);
  });
  afterAll(async () => {
    await ctx.server?.close();
    await ctx.f?.cleanup();
  });
  return ctx;
}

/** The start of the next wall-clock second: in-process rate-limit windows are aligned to them. */
export async function startOfSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
}

/** A loopback port free at the time of asking (for listeners a test cannot give port 0). */
export async function freePort(): Promise<number> {
  const s = net.createServer().listen(0, "127.0.0.1");
  await new Promise((r) => s.once("listening", r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** POSTs `records` as NDJSON to /v1/ingest/KIND with `key`; the answer must be 200. */
export async function ingestOk(server: TestServer, key: string, kind: string, records: readonly object[]): Promise<void> {
  const r = await fetch(`${server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  expect(r.status, await r.text()).toBe(200);
}

export interface EmptyStoreServer {
  target: string;
  server: TestServer;
  /** A key with the ingest scope, and a read key. */
  ingest: string;
  read: string;
  cleanup(): Promise<void>;
}

/**
 * Registers beforeAll/afterAll hooks that serve an empty store on the test
 * engine (at this build's schema, as `migrate` leaves it) with an ingest key
 * and a read key; the returned object is filled in before the first test.
 */
export function useEmptyStoreServer(options: Partial<StartOptions> = {}): EmptyStoreServer {
  const ctx = {} as EmptyStoreServer;
  beforeAll(async () => {
    Object.assign(ctx, await emptyStore());
    await (await openWritableStore(ctx.target, { migrateEmpty: true })).close();
    await withKeys(ctx.target, async (admin) => {
      ctx.ingest = (await admin.create("indexer", { scope: "ingest" })).key;
      ctx.read = (await admin.create("reader")).key;
    });
    ctx.server = await startTestServer(ctx.target, options);
  });
  afterAll(async () => {
    await ctx.server?.close();
    await ctx.cleanup?.();
  });
  return ctx;
}
