import { describe, expect, it } from "vitest";
import { startServe } from "../../src/cli/run-sync.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { clientsFor, freePort, startOfSecond, startTestServer, transportFor, useFixtureServer } from "../support/server.js";

// Prometheus metrics at GET /metrics: requests by procedure, protocol and
// code, latency histograms, the response cache, rate-limit refusals, the
// store's data version and last write, event-loop delay and process metrics;
// bounded labels that never carry a key or a query.

const t = useFixtureServer(buildFixture, { rateLimit: 3 });

/** The value of one sample line `name{labels} value`, labels given in any order. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

describe("GET /metrics", () => {
  it("counts requests by procedure, protocol and code, with bounded labels", async () => {
    const h = { "x-api-key": t.f.key };
    const sales = `${t.server.url}/v1/asset/sales?contractAddress=${COLLECTION}&limit=2`;
    // The five requests below within one rate window (windows start on whole seconds).
    await startOfSecond();
    await (await fetch(sales, { headers: h })).text();
    await (await fetch(sales, { headers: h })).text(); // a cache hit
    await (await fetch(`${t.server.url}/v1/asset/sales?contractAddress=nope`, { headers: h })).text();
    await (await fetch(sales)).text(); // no key
    await (await fetch(sales, { headers: h })).text(); // past the limit of 3
    await (await fetch(`${t.server.url}/v1/nothing/here?contractAddress=${COLLECTION}`, { headers: h })).text();
    await new Promise((r) => setTimeout(r, 1100)); // a new rate window
    for (const protocol of ["connect", "grpc-web", "grpc"] as const) {
      await clientsFor(transportFor(protocol, t.server.url)).collection.listScores({ contractAddress: [COLLECTION] }, { headers: h });
    }

    const r = await fetch(`${t.server.url}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await r.text();
    const requests = (labels: Record<string, string>) => sample(text, "marketdata_requests_total", labels);
    expect(requests({ procedure: "/v1/asset/sales", protocol: "rest", code: "ok" })).toBe(2);
    expect(requests({ procedure: "/v1/asset/sales", protocol: "rest", code: "invalid_argument" })).toBe(1);
    expect(requests({ procedure: "/v1/asset/sales", protocol: "rest", code: "unauthenticated" })).toBe(1);
    expect(requests({ procedure: "/v1/asset/sales", protocol: "rest", code: "resource_exhausted" })).toBe(1);
    expect(requests({ procedure: "unmatched", code: "not_found" })).toBe(1);
    for (const protocol of ["connect", "grpc-web", "grpc"]) {
      expect(requests({ procedure: "/marketdata.v1.CollectionService/ListScores", protocol, code: "ok" }), protocol).toBe(1);
    }
    expect(sample(text, "marketdata_request_duration_seconds_count", { procedure: "/v1/asset/sales", protocol: "rest" })).toBe(5);
    expect(sample(text, "marketdata_response_cache_requests_total", { result: "hit" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "marketdata_response_cache_bytes")).toBeGreaterThan(0);
    expect(sample(text, "marketdata_rate_limited_total", { subject: "key" })).toBe(1);
    expect(sample(text, "marketdata_store_data_version")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "marketdata_store_last_write_timestamp_seconds")! * 1000).toBeGreaterThan(Date.now() - 3_600_000);
    expect(sample(text, "nodejs_eventloop_lag_p99_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    // Never a key, a query or a caller's value in a label.
    expect(text).not.toContain(t.f.key);
    expect(text).not.toContain("contractAddress");
    expect(text).not.toContain(COLLECTION);
    expect(text).not.toContain("/v1/nothing");
  });

  it("is absent with metrics off", async () => {
    const off = await startTestServer(t.f.dbPath, { metrics: { enabled: false } });
    try {
      expect((await fetch(`${off.url}/metrics`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});

describe("serve --metrics-port with --workers 2", () => {
  it("the primary serves the sum of both workers on its own port; the main port has no /metrics", async () => {
    const port = await freePort();
    const { url, stop } = await startServe(["--db", t.f.dbPath, "--port", "0", "--workers", "2", "--metrics-port", String(port), "--rate-limit", "0"]);
    try {
      for (let i = 0; i < 10; i++) {
        const r = await fetch(`${url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": t.f.key, connection: "close" } });
        expect(r.status).toBe(200);
        await r.text();
      }
      expect((await fetch(`${url}/metrics`)).status).toBe(404);
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(sample(text, "marketdata_requests_total", { procedure: "/v1/collection/scores", protocol: "rest", code: "ok" })).toBe(10);
    } finally {
      await stop();
    }
  });
});
