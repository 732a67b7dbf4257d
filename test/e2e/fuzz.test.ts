import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINTS } from "../support/endpoints.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { envelope, grpcWebStatus } from "../support/raw.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A few thousand generated hostile requests over REST, Connect (POST and
// GET), gRPC-Web and gRPC, with rate limits on: no answer is a server error
// (5xx, gRPC internal/unknown), none is larger than a bound, memory stays
// bounded, and the server still answers a normal request afterwards.

const REQUESTS = 3000;
const CONCURRENCY = 16;
const MAX_RESPONSE_BYTES = 1024 * 1024;
/** Fixed, so a failure reproduces; FUZZ_SEED tries others. */
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);

let f: Fixture;
let server: TestServer;
beforeAll(async () => {
  f = buildFixture();
  // Limits high enough that most requests reach validation; the per-address limit is exercised by bad keys.
  server = await startTestServer(f.dbPath, { rateLimit: 100_000, anonymousRateLimit: 500 });
});
afterAll(async () => {
  await server?.close();
  f?.cleanup();
});

const PROCEDURES = [
  "/marketdata.v1.AssetService/ListSales",
  "/marketdata.v1.AssetService/ListListings",
  "/marketdata.v1.AssetService/ListAppraisals",
  "/marketdata.v1.AssetService/ListRarity",
  "/marketdata.v1.CollectionService/GetCollectionStats",
  "/marketdata.v1.CollectionService/ListInfluencers",
  "/marketdata.v1.CollectionService/ListTweets",
  "/marketdata.v1.CollectionService/ListScores",
  "/marketdata.v1.CollectionService/Nope",
  "/nope.Service/Method",
];
const PARAMS = ["contractAddress", "assetId", "limit", "cursor", "since", "until", "status", "marketplace", "sort", "x", ""];

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("", "0", "-1", "1e9", "NaN", "null", "[]", "{}", "%00", "\u0000", "2".repeat(80), COLLECTION, COLLECTION.toUpperCase(), "UNSPECIFIED", "CREATED"),
  fc.nat({ max: 20_000 }).map((n) => "a".repeat(n)),
  fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }).map(String),
);
const key = fc.constantFrom<"valid" | "invalid" | "missing">("valid", "valid", "valid", "invalid", "missing");

type Request =
  | { kind: "rest"; path: string; query: [string, string][]; key: string }
  | { kind: "connect-post"; path: string; type: string; gzip: boolean; body: Uint8Array; key: string }
  | { kind: "connect-get"; path: string; query: string; key: string }
  | { kind: "grpc-web"; path: string; type: string; body: Uint8Array; key: string }
  | { kind: "grpc"; path: string; encoding: string | undefined; body: Uint8Array; key: string };

const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 512 }),
  fc.json({ maxDepth: 4 }).map((j) => new TextEncoder().encode(j)),
  fc.record({ contractAddress: hostileString, limit: fc.integer(), status: hostileString, extra: fc.option(fc.string()) }).map((o) =>
    new TextEncoder().encode(JSON.stringify(o)),
  ),
);

const request: fc.Arbitrary<Request> = fc.oneof(
  fc.record({
    kind: fc.constant("rest" as const),
    path: fc.oneof(fc.constantFrom(...ENDPOINTS.map(([p]) => p)), fc.constantFrom("/v1/", "/v1/asset", "/v1/collection/stats/x", "/v1/%ff")),
    query: fc.array(fc.tuple(fc.constantFrom(...PARAMS), hostileString), { maxLength: 6 }),
    key,
  }),
  fc.record({
    kind: fc.constant("connect-post" as const),
    path: fc.constantFrom(...PROCEDURES),
    type: fc.constantFrom("application/json", "application/proto", "application/json; charset=utf-8", "text/plain", "application/connect+json"),
    gzip: fc.boolean(),
    body: bytes,
    key,
  }),
  fc.record({
    kind: fc.constant("connect-get" as const),
    path: fc.constantFrom(...PROCEDURES),
    query: fc.tuple(fc.constantFrom("proto", "json", "xml", ""), hostileString, fc.boolean(), fc.constantFrom("", "gzip", "br")).map(
      ([encoding, message, b64, compression]) =>
        `encoding=${encoding}&message=${encodeURIComponent(message)}${b64 ? "&base64=1" : ""}${compression ? `&compression=${compression}` : ""}`,
    ),
    key,
  }),
  fc.record({
    kind: fc.constant("grpc-web" as const),
    path: fc.constantFrom(...PROCEDURES),
    type: fc.constantFrom("application/grpc-web+proto", "application/grpc-web", "application/grpc-web+json", "application/grpc-web-text"),
    body: fc.oneof(bytes.map((b) => new Uint8Array(envelope(b))), bytes),
    key,
  }),
  fc.record({
    kind: fc.constant("grpc" as const),
    path: fc.constantFrom(...PROCEDURES),
    encoding: fc.constantFrom(undefined, "gzip", "identity", "snappy"),
    body: fc.oneof(bytes.map((b) => new Uint8Array(envelope(b))), bytes.map((b) => new Uint8Array(envelope(gzipSync(b), 1))), bytes),
    key,
  }),
);

interface Outcome {
  request: string;
  /** -1: the request failed without an answer. */
  status: number;
  error?: string;
  grpcStatus?: string | undefined;
  size: number;
}

describe("fuzz: generated hostile requests", () => {
  it(`${REQUESTS} requests over every protocol: no server error, bounded answers and memory, still answering`, async () => {
    const requests = fc.sample(request, { numRuns: REQUESTS, seed: SEED });
    const session = http2.connect(server.url);
    session.on("error", () => {});
    const keyOf = (k: string): Record<string, string> =>
      k === "valid" ? { "x-api-key": f.key } : k === "invalid" ? { "x-api-key": "mdk_fuzz" } : {};

    const send = async (r: Request): Promise<Outcome> => {
      const label = JSON.stringify(r).slice(0, 300);
      if (r.kind === "grpc") {
        return new Promise((resolve) => {
          const stream = session.request({
            ":method": "POST",
            ":path": r.path,
            "content-type": "application/grpc",
            ...(r.encoding === undefined ? {} : { "grpc-encoding": r.encoding }),
            ...keyOf(r.key),
          });
          let status = 0;
          let grpcStatus: string | undefined;
          let size = 0;
          stream.on("response", (h) => {
            status = Number(h[":status"]);
            grpcStatus ??= h["grpc-status"] as string | undefined;
          });
          stream.on("trailers", (t) => (grpcStatus ??= t["grpc-status"] as string | undefined));
          stream.on("data", (c: Buffer) => (size += c.length));
          stream.on("error", () => {});
          stream.on("close", () => resolve({ request: label, status, grpcStatus, size }));
          stream.end(r.body);
        });
      }
      let url: string;
      let init: RequestInit;
      if (r.kind === "rest") {
        const qs = r.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
        url = `${server.url}${r.path}?${qs}`;
        init = { headers: keyOf(r.key) };
      } else if (r.kind === "connect-get") {
        url = `${server.url}${r.path}?${r.query}`;
        init = { headers: keyOf(r.key) };
      } else if (r.kind === "connect-post") {
        url = server.url + r.path;
        init = {
          method: "POST",
          body: r.gzip ? gzipSync(r.body) : r.body,
          headers: { "content-type": r.type, ...(r.gzip ? { "content-encoding": "gzip" } : {}), ...keyOf(r.key) },
        };
      } else {
        url = server.url + r.path;
        init = { method: "POST", body: r.body, headers: { "content-type": r.type, ...keyOf(r.key) } };
      }
      let response: Response;
      let body: Buffer;
      try {
        response = await fetch(url, init);
        body = Buffer.from(await response.arrayBuffer());
      } catch (err) {
        const cause = (err as { cause?: { message?: string } }).cause;
        return { request: label, status: -1, error: cause?.message ?? String(err), size: 0 };
      }
      return {
        request: label,
        status: response.status,
        grpcStatus: r.kind === "grpc-web" ? grpcWebStatus(response.headers, body) : undefined,
        size: body.length,
      };
    };

    const rssBefore = process.memoryUsage().rss;
    const outcomes: Outcome[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < requests.length) outcomes.push(await send(requests[next++]!));
      }),
    );
    session.close();
    const rssGrowth = process.memoryUsage().rss - rssBefore;

    expect(outcomes).toHaveLength(REQUESTS);
    expect(outcomes.filter((o) => o.status === -1)).toEqual([]);
    // 501 is what the Connect protocol prescribes for an unsupported compression (unimplemented).
    const serverErrors = outcomes.filter((o) => (o.status >= 500 && o.status !== 501) || o.grpcStatus === "13" || o.grpcStatus === "2");
    expect(serverErrors).toEqual([]);
    expect(outcomes.filter((o) => o.size > MAX_RESPONSE_BYTES)).toEqual([]);
    // Every kind of request was made, and many reached validation.
    expect(outcomes.filter((o) => o.status === 400 || o.grpcStatus === "3").length).toBeGreaterThan(REQUESTS / 10);
    expect(rssGrowth).toBeLessThan(256 * 1024 * 1024);
    const ok = await fetch(`${server.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": f.key } });
    expect(ok.status).toBe(200);
  }, 120_000);
});
