import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, skipBrowser } from "../support/browser.js";
import { numberedSale } from "../support/sales.js";
import { ingestOk, startTestServer, type TestServer, useEmptyStoreServer } from "../support/server.js";

// A browser's own EventSource on the sales feed (the key in the URL: an
// EventSource cannot send headers): it receives each sale, and when the
// server goes away and another takes its port, reconnects by itself with
// Last-Event-ID and receives what was committed meanwhile, exactly once.

const C = "0x3333333333333333333333333333333333333333";
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
let browser: Browser;

beforeAll(async () => {
  if (skipBrowser) return;
  browser = await launchChromium();
  await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: C, name: "feed" }]);
});

afterAll(async () => {
  await browser?.close();
});

describe.skipIf(skipBrowser)("EventSource in headless Chromium", () => {
  it("receives sales live and resumes by Last-Event-ID across a server restart, nothing lost or repeated", async () => {
    // A server of its own on a port the next one takes over.
    let server: TestServer = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0 });
    const port = Number(new URL(server.baseUrl).port);
    const page = await browser.newPage();
    try {
      // Same origin as the feed: no CORS needed.
      await page.goto(`${server.baseUrl}/healthz`);
      // The page's script: what the EventSource receives, into globals the test reads.
      await page.evaluate(`
        globalThis.got = []; globalThis.ends = []; globalThis.opens = 0;
        const source = new EventSource("/v1/asset/sales/stream?contractAddress=${C}&apiKey=${ctx.read}");
        source.onopen = () => globalThis.opens++;
        source.onmessage = (e) => globalThis.got.push({ hash: JSON.parse(e.data).hash, id: e.lastEventId });
        source.addEventListener("end", (e) => globalThis.ends.push(e.data));
      `);
      const got = () => page.evaluate("globalThis.got") as Promise<{ hash: string; id: string }[]>;
      const opens = () => page.evaluate("globalThis.opens") as Promise<number>;
      await expect.poll(opens).toBe(1);
      const first = Array.from({ length: 4 }, (_, i) => numberedSale(100 + i, C));
      await ingestOk(server, ctx.ingest, "sales", first);
      await expect.poll(async () => (await got()).length, { timeout: 10_000 }).toBe(4);

      // The server stops: its streams end with an "end" event and their position.
      await server.close();
      const ends = (await page.evaluate("globalThis.ends")) as string[];
      expect(ends.map((e) => (JSON.parse(e) as { code: string }).code)).toEqual(["unavailable"]);
      // Committed while no server listens for the browser.
      const meanwhile = Array.from({ length: 3 }, (_, i) => numberedSale(200 + i, C));
      const writer = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0 });
      await ingestOk(writer, ctx.ingest, "sales", meanwhile);
      await writer.close();
      // Another server on the same port: the EventSource reconnects (retry: 2000) with Last-Event-ID.
      server = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0, port });
      await expect.poll(opens, { timeout: 15_000 }).toBe(2);
      const later = Array.from({ length: 2 }, (_, i) => numberedSale(300 + i, C));
      await ingestOk(server, ctx.ingest, "sales", later);
      await expect.poll(async () => (await got()).length, { timeout: 10_000 }).toBe(9);
      const all = await got();
      expect(all.map((e) => e.hash)).toEqual([...first, ...meanwhile, ...later].map((s) => s.hash));
      expect(new Set(all.map((e) => e.id)).size).toBe(9);
    } finally {
      await page.close();
      await server.close();
    }
  }, 60_000);
});
