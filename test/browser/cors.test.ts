import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { bundleForBrowser, launchChromium, servePage, skipBrowser } from "../support/browser.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A page in headless Chromium, served from another origin, calls the service
// through @connectrpc/connect-web (Connect and gRPC-Web transports) and
// through fetch on /v1, and gets data, because the service allows that
// origin (--cors-origin); a page from an origin not allowed gets nothing.


/** The page's script: every call it makes, results into window.results. */
const APP = `
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { CollectionService } from "./gen/marketdata/v1/collection_service_pb.js";
const params = new URLSearchParams(location.search);
const baseUrl = params.get("api"), key = params.get("key"), collection = params.get("collection");
const headers = { "x-api-key": key };
async function run() {
  const out = {};
  for (const [name, transport] of [["connect", createConnectTransport({ baseUrl })], ["grpc-web", createGrpcWebTransport({ baseUrl })], ["connect-get", createConnectTransport({ baseUrl, useHttpGet: true })]]) {
    try {
      const res = await createClient(CollectionService, transport).listScores({ contractAddress: [collection] }, { headers });
      out[name] = { ok: true, successful: res.successful, names: res.data.map((d) => d.name) };
    } catch (e) {
      out[name] = { ok: false, error: String(e) };
    }
  }
  try {
    const r = await fetch(baseUrl + "/v1/collection/scores?contractAddress=" + collection, { headers });
    out.rest = { ok: true, status: r.status, body: await r.json(), rateLimit: r.headers.get("ratelimit-limit"), etag: r.headers.get("etag") };
  } catch (e) {
    out.rest = { ok: false, error: String(e) };
  }
  window.results = out;
}
run();
`;

let f: Fixture;
let server: TestServer;
let browser: Browser;
let site: { url: string; close(): Promise<void> };
let script: string;

beforeAll(async () => {
  if (skipBrowser) return;
  script = await bundleForBrowser(APP);
  site = await servePage("client", script);
  f = buildFixture();
  server = await startTestServer(f.dbPath, { corsOrigins: [site.url], rateLimit: 1000 });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await site?.close();
  f?.cleanup();
});

async function resultsFrom(pageUrl: string): Promise<Record<string, Record<string, unknown>>> {
  const page = await browser.newPage();
  try {
    await page.goto(`${pageUrl}/?api=${encodeURIComponent(server.url)}&key=${f.key}&collection=${COLLECTION}`);
    await page.waitForFunction(() => (globalThis as unknown as { results?: unknown }).results !== undefined, undefined, { timeout: 15_000 });
    return (await page.evaluate(() => (globalThis as unknown as { results: unknown }).results)) as Record<string, Record<string, unknown>>;
  } finally {
    await page.close();
  }
}

describe.skipIf(skipBrowser)("a browser on another origin", () => {
  it("calls the service over Connect, gRPC-Web, Connect GET and fetch on /v1", async () => {
    const r = await resultsFrom(site.url);
    for (const name of ["connect", "grpc-web", "connect-get"]) {
      expect(r[name], name).toEqual({ ok: true, successful: 1, names: ["Test Apes"] });
    }
    expect(r.rest).toMatchObject({ ok: true, status: 200, rateLimit: "1000" });
    expect((r.rest!.body as { successful: number }).successful).toBe(1);
    expect(r.rest!.etag).toMatch(/^"/);
  });

  it("gets nothing from an origin that is not allowed", async () => {
    const other = await servePage("other", script);
    try {
      const r = await resultsFrom(other.url);
      for (const name of ["connect", "grpc-web", "connect-get", "rest"]) expect(r[name]!.ok, name).toBe(false);
    } finally {
      await other.close();
    }
  });
});
