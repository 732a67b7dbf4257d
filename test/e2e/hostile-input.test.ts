import { gzipSync } from "node:zlib";
import { toBinary, create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ListSalesRequestSchema } from "../../gen/marketdata/v1/asset_service_pb.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { envelope, grpcWebStatus, h2Post } from "../support/raw.js";
import { restGet, useFixtureServer } from "../support/server.js";

// What a hostile or broken client sends, on every protocol: oversized and
// compressed bodies (before and after authentication), malformed messages,
// unknown fields. Each answer is the caller's error, bounded and quick.
// (Connections and shutdown: hostile-connections.test.ts; rate limits:
// rate-limits.test.ts; random requests: fuzz.test.ts.)

const t = useFixtureServer(buildFixture);
const SALES = "/marketdata.v1.AssetService/ListSales";
const MIB = 1024 * 1024;

async function post(path: string, body: Buffer | string, headers: Record<string, string>) {
  const r = await fetch(t.server.baseUrl + path, { method: "POST", body, headers });
  const buf = Buffer.from(await r.arrayBuffer());
  return { status: r.status, headers: r.headers, body: buf, json: () => JSON.parse(buf.toString()) as Record<string, unknown> };
}

const key = () => ({ "x-api-key": t.f.key });
const validMessage = () => toBinary(ListSalesRequestSchema, create(ListSalesRequestSchema, { contractAddress: COLLECTION, limit: 1 }));
/** Bytes that are no protobuf message: a field 15 tag with wire type 7, which does not exist. */
const GARBAGE = Buffer.from([0x7f, 0xff, 0xff]);

describe("request bodies are bounded before anything is inflated or parsed", () => {
  it("a gzip bomb without an API key is refused as unauthenticated, without being read", async () => {
    const bomb = gzipSync(Buffer.alloc(256 * MIB, 32));
    const rss = process.memoryUsage().rss;
    for (const type of ["application/json", "application/proto"]) {
      const r = await post(SALES, bomb, { "content-type": type, "content-encoding": "gzip" });
      expect(r.status).toBe(401);
      expect(r.json()).toMatchObject({ code: "unauthenticated" });
    }
    const web = await post(SALES, envelope(bomb, 1), { "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" });
    expect(grpcWebStatus(web.headers, web.body)).toBe("16");
    const grpc = await h2Post(t.server.baseUrl, SALES, { "content-type": "application/grpc", "grpc-encoding": "gzip" }, envelope(bomb, 1));
    expect(grpc.headers["grpc-status"]).toBe("16");
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * MIB);
  });

  it("with a key, a gzip bomb is refused once it inflates past 64 KiB, on every protocol", async () => {
    const bomb = gzipSync(Buffer.alloc(64 * MIB, 32));
    const rss = process.memoryUsage().rss;
    for (const type of ["application/json", "application/proto"]) {
      const r = await post(SALES, bomb, { ...key(), "content-type": type, "content-encoding": "gzip" });
      expect(r.status).toBe(429);
      expect(r.json()).toMatchObject({ code: "resource_exhausted" });
    }
    const web = await post(SALES, envelope(bomb, 1), { ...key(), "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" });
    expect(grpcWebStatus(web.headers, web.body)).toBe("8");
    const grpc = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc", "grpc-encoding": "gzip" }, envelope(bomb, 1));
    expect(grpc.headers["grpc-status"]).toBe("8");
    expect(process.memoryUsage().rss - rss).toBeLessThan(64 * MIB);
  });

  it("a 10 MB body of [[[[ is refused by size, without parsing, and the server stays responsive", async () => {
    const started = performance.now();
    // 413 Content Too Large, the Connect code in the body (issue 49, item 13: a 429 told clients to retry it).
    const r = await post(SALES, "[".repeat(10 * MIB), { ...key(), "content-type": "application/json" });
    expect(r.status).toBe(413);
    expect(r.json()).toMatchObject({ code: "resource_exhausted" });
    const web = await post(SALES, envelope(Buffer.from("[".repeat(10 * MIB))), { ...key(), "content-type": "application/grpc-web+json" });
    expect(grpcWebStatus(web.headers, web.body)).toBe("8");
    const grpc = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc" }, envelope(Buffer.alloc(MIB, 0x5b)));
    expect(grpc.headers["grpc-status"]).toBe("8");
    // A client that keeps sending 10 MB after the answer may instead see its stream reset: refused either way.
    const flood = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc" }, envelope(Buffer.alloc(10 * MIB, 0x5b))).then(
      (r) => r.headers["grpc-status"],
      (err: Error) => err.message,
    );
    expect(flood).toMatch(/^8$|NGHTTP2_ENHANCE_YOUR_CALM|NGHTTP2_STREAM_CLOSED|NGHTTP2_NO_ERROR/);
    expect(performance.now() - started).toBeLessThan(10_000);
    const ok = await restGet(t.server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION, limit: 1 }, t.f.key);
    expect(ok.status).toBe(200);
  });
});

describe("client garbage is the caller's error (invalid_argument), never internal", () => {
  it("malformed binary protobuf: Connect, gRPC-Web, gRPC", async () => {
    const connect = await post(SALES, GARBAGE, { ...key(), "content-type": "application/proto" });
    expect(connect.status).toBe(400);
    expect(connect.json()).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/^cannot decode marketdata\.v1\.ListSalesRequest/) });
    const web = await post(SALES, envelope(GARBAGE), { ...key(), "content-type": "application/grpc-web+proto" });
    expect(web.status).toBe(200);
    expect(grpcWebStatus(web.headers, web.body)).toBe("3");
    const grpc = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc" }, envelope(GARBAGE));
    expect(grpc.headers["grpc-status"]).toBe("3");
    // A valid message on the same paths still works.
    const fine = await post(SALES, Buffer.from(validMessage()), { ...key(), "content-type": "application/proto" });
    expect(fine.status).toBe(200);
    const fineWeb = await post(SALES, envelope(validMessage()), { ...key(), "content-type": "application/grpc-web+proto" });
    expect(fineWeb.status).toBe(200);
    expect(fineWeb.body.length).toBeGreaterThan(5);
  });

  it("bad gzip: Connect, gRPC-Web, gRPC", async () => {
    const notGzip = Buffer.from("this is not gzip");
    const connect = await post(SALES, notGzip, { ...key(), "content-type": "application/proto", "content-encoding": "gzip" });
    expect(connect.status).toBe(400);
    expect(connect.json()).toMatchObject({ code: "invalid_argument" });
    const web = await post(SALES, envelope(notGzip, 1), { ...key(), "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" });
    expect(grpcWebStatus(web.headers, web.body)).toBe("3");
    const grpc = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc", "grpc-encoding": "gzip" }, envelope(notGzip, 1));
    expect(grpc.headers["grpc-status"]).toBe("3");
    // A compressed flag without an encoding is the caller's protocol error too.
    const bare = await h2Post(t.server.baseUrl, SALES, { ...key(), "content-type": "application/grpc" }, envelope(validMessage(), 1));
    expect(bare.headers["grpc-status"]).toBe("3");
  });

  it("Connect GET: a message that is not base64, not gzip or not protobuf", async () => {
    const get = async (query: string) => {
      const r = await fetch(`${t.server.baseUrl}${SALES}?${query}`, { headers: key() });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    for (const query of [
      "encoding=proto&base64=1&message=%25%25%25%25",
      "encoding=proto&base64=1&compression=gzip&message=bm90Z3ppcA",
      "encoding=proto&base64=1&message=f___",
      "encoding=json&message=%7B%22contractAddress%22%3A",
    ]) {
      const r = await get(query);
      expect(r.status, query).toBe(400);
      expect(r.body.code, query).toBe("invalid_argument");
    }
  });
});

describe("RPC is as strict as REST", () => {
  const unknownField = JSON.stringify({ contractAddress: COLLECTION, status: "CREATED", limit: 1 });

  it("Connect JSON (POST and GET) and gRPC-Web JSON refuse unknown fields", async () => {
    const connect = await post(SALES, unknownField, { ...key(), "content-type": "application/json" });
    expect(connect.status).toBe(400);
    expect(connect.json()).toMatchObject({ code: "invalid_argument", message: expect.stringMatching(/"status" is unknown/) });
    const get = await fetch(`${t.server.baseUrl}${SALES}?encoding=json&message=${encodeURIComponent(unknownField)}`, { headers: key() });
    expect(get.status).toBe(400);
    const web = await post(SALES, envelope(Buffer.from(unknownField)), { ...key(), "content-type": "application/grpc-web+json" });
    expect(grpcWebStatus(web.headers, web.body)).toBe("3");
  });

  it("REST refuses the zero enum value by either name", async () => {
    for (const status of ["UNSPECIFIED", "LISTING_STATUS_UNSPECIFIED"]) {
      const r = await restGet(t.server.baseUrl, "/v1/asset/listings", { contractAddress: COLLECTION, status }, t.f.key);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: "invalid_argument", message: `status must be one of CREATED, FULFILLED, CANCELLED, EXPIRED, got "${status}"` });
    }
    const ok = await restGet(t.server.baseUrl, "/v1/asset/listings", { contractAddress: COLLECTION, status: "CREATED" }, t.f.key);
    expect(ok.status).toBe(200);
  });
});
