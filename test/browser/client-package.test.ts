import { gzipSync } from "node:zlib";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { bundleForBrowser, launchChromium, servePage, skipBrowser } from "../support/browser.js";
import { startTestServer, type TestServer } from "../support/server.js";

// @marketdata/client in a browser: a page bundling the package with esbuild
// (which resolves it to its browser entry: fetch, no Node modules) reads
// data through Connect and gRPC-Web, pages a list and counts it, from
// another origin the service allows.

const APP = `
import { createMarketDataClient } from "@marketdata/client";
const params = new URLSearchParams(location.search);
const baseUrl = params.get("api"), apiKey = params.get("key"), contractAddress = params.get("collection");
async function run() {
  const out = {};
  for (const protocol of ["connect", "grpc-web"]) {
    try {
      const client = createMarketDataClient({ baseUrl, apiKey, protocol });
      const scores = await client.collection.listScores({ contractAddress: [contractAddress] });
      let sales = 0;
      for await (const _ of client.pages("listSales", { contractAddress, limit: 20 })) sales++;
      out[protocol] = { ok: true, names: scores.data.map((d) => d.name), sales };
    } catch (e) {
      out[protocol] = { ok: false, error: String(e) };
    }
  }
  try {
    createMarketDataClient({ baseUrl, apiKey, protocol: "grpc" });
    out.grpc = "created";
  } catch (e) {
    out.grpc = String(e.message);
  }
  window.results = out;
}
run();
`;

let f: Fixture;
let server: TestServer;
let browser: Browser;
let site: { url: string; close(): Promise<void> };
let gzipped: number;

beforeAll(async () => {
  if (skipBrowser) return;
  const script = await bundleForBrowser(APP);
  gzipped = gzipSync(script).length;
  site = await servePage("client package", script);
  f = buildFixture();
  server = await startTestServer(f.dbPath, { corsOrigins: [site.url], rateLimit: 0 });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await site?.close();
  f?.cleanup();
});

describe.skipIf(skipBrowser)("@marketdata/client bundled for a browser", () => {
  it("reads through Connect and gRPC-Web, pages a list to the end, and says gRPC needs Node", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${site.url}/?api=${encodeURIComponent(server.url)}&key=${f.key}&collection=${COLLECTION}`);
      await page.waitForFunction(() => (globalThis as unknown as { results?: unknown }).results !== undefined, undefined, { timeout: 15_000 });
      const r = (await page.evaluate(() => (globalThis as unknown as { results: unknown }).results)) as Record<string, unknown>;
      for (const protocol of ["connect", "grpc-web"]) expect(r[protocol], protocol).toEqual({ ok: true, names: ["Test Apes"], sales: f.sales.length });
      expect(r.grpc).toMatch(/needs Node/);
      // What a page pays for the package (bundled, minified, gzipped): the figure the package's README gives.
      console.log(`@marketdata/client bundled for a browser: ${(gzipped / 1024).toFixed(1)} KiB gzipped`);
      expect(gzipped).toBeLessThan(100 * 1024);
    } finally {
      await page.close();
    }
  });
});
