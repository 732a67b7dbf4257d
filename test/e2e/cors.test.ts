import { describe, expect, it } from "vitest";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { startTestServer, useFixtureServer } from "../support/server.js";

// CORS headers and preflights, as a browser sends them (test/browser has the real browser).

const ORIGIN = "https://app.example.com";
const t = useFixtureServer(buildFixture, { corsOrigins: [ORIGIN], rateLimit: 100 });

const preflight = (path: string, origin: string, method = "POST") =>
  fetch(`${t.server.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "content-type,x-api-key,connect-protocol-version" },
  });

describe("CORS (--cors-origin)", () => {
  it("answers a preflight to a Connect route, a gRPC-Web route and a /v1 route", async () => {
    for (const [path, method] of [
      ["/marketdata.v1.CollectionService/ListScores", "POST"],
      ["/marketdata.v1.AssetService/ListSales", "POST"],
      ["/v1/collection/scores", "GET"],
    ] as const) {
      const r = await preflight(path, ORIGIN, method);
      expect(r.status, path).toBe(204);
      expect(r.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      expect(r.headers.get("access-control-allow-methods")).toMatch(/POST.*GET/);
      const allowed = r.headers.get("access-control-allow-headers")!.toLowerCase();
      for (const h of ["x-api-key", "content-type", "connect-protocol-version", "x-grpc-web", "grpc-timeout"]) expect(allowed).toContain(h);
    }
  });

  it("exposes the rate-limit headers, ETag and grpc-status on answers to an allowed origin", async () => {
    const r = await fetch(`${t.server.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { origin: ORIGIN, "x-api-key": t.f.key } });
    expect(r.status).toBe(200);
    expect(r.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(r.headers.get("vary")).toMatch(/Origin/);
    const exposed = r.headers.get("access-control-expose-headers")!.toLowerCase();
    for (const h of ["ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "retry-after", "etag", "grpc-status", "grpc-message"]) expect(exposed).toContain(h);
  });

  it("says nothing to another origin, and is off by default", async () => {
    const r = await preflight("/marketdata.v1.CollectionService/ListScores", "https://evil.example.com");
    expect(r.headers.get("access-control-allow-origin")).toBeNull();
    const plain = await startTestServer(t.f.dbPath);
    try {
      const p = await fetch(`${plain.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { origin: ORIGIN, "x-api-key": t.f.key } });
      expect(p.headers.get("access-control-allow-origin")).toBeNull();
    } finally {
      await plain.close();
    }
  });
});
