import { WebhookService } from "../../gen/marketdata/v1/webhook_service_pb.js";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KINDS } from "../../src/domain/kinds/index.js";
import { launchChromium, skipBrowser } from "../support/browser.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";

// GET /docs in headless Chromium: the page (Swagger UI from npm, no CDN)
// renders every endpoint of /openapi.json, and a request made from it with
// an API key returns data. A screenshot is left in test-results/ to look at.

const SCREENSHOTS = fileURLToPath(new URL("../../test-results/", import.meta.url));

let f: Fixture;
let server: TestServer;
let browser: Browser;
beforeAll(async () => {
  if (skipBrowser) return;
  f = buildFixture();
  server = await startTestServer(f.dbPath);
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await server?.close();
  f?.cleanup();
});

describe.skipIf(skipBrowser)("GET /docs", () => {
  it("renders every endpoint offline, and Try it out with a key returns data", { timeout: 60_000 }, async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    page.setDefaultTimeout(10_000);
    const external: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(server.url) && !r.url().startsWith("data:")) external.push(r.url());
    });
    try {
      await page.goto(`${server.url}/docs`);
      await page.waitForSelector(".opblock-summary-path", { timeout: 15_000 });
      const paths = await page.$$eval(".opblock-summary-path", (els) => els.map((e) => e.getAttribute("data-path")));
      expect(paths.sort()).toEqual(
        [
          "/v1/asset/appraisals",
          "/v1/asset/listings",
          "/v1/asset/rarity",
          "/v1/asset/sales",
          // The live feeds (Server-Sent Events).
          "/v1/asset/listings/stream",
          "/v1/asset/sales/stream",
          "/v1/asset/offers/stream",
          "/v1/collection/activity/stream",
          "/v1/collection/influencers",
          "/v1/collection/scores",
          "/v1/collection/stats",
          "/v1/collection/tweets",
          // The analytics beside the published eight.
          "/v1/collection/floor",
          "/v1/collection/holders",
          "/v1/collection/stats/series",
          "/v1/collection/candles",
          // The market picture (issue 34): tokens, traits, offers, the market.
          "/v1/asset/tokens",
          "/v1/asset/owners",
          "/v1/collection/traits",
          "/v1/asset/offers",
          "/v1/collection/market",
          "/v1/collections",
          "/v1/collection/activity",
          // The writes (IngestService's POST rules).
          ...KINDS.map((k) => `/v1/ingest/${k}`),
          // Webhook administration (RPC only: Connect POSTs).
          ...WebhookService.methods.map((m) => `/${WebhookService.typeName}/${m.name}`),
          // What a webhook delivers (the document's webhooks section).
          "events",
        ].sort(),
      );

      // Authorize with the key.
      await page.click(".btn.authorize");
      await page.fill(".auth-container input", f.key);
      await page.click(".auth-btn-wrapper .btn.modal-btn.auth.authorize");
      await page.click(".btn-done");

      // Try it out on /v1/collection/stats.
      const op = page.locator("#operations-CollectionService-GetCollectionStats");
      await op.locator(".opblock-summary").click();
      await op.locator(".try-out__btn").click();
      await op.locator('tr[data-param-name="contractAddress"] input').first().fill(COLLECTION);
      await op.locator(".execute").click();
      await op.locator(".live-responses-table .response .response-col_status").first().waitFor({ timeout: 15_000 });
      const status = await op.locator(".live-responses-table .response .response-col_status").first().innerText();
      const body = await op.locator(".live-responses-table .microlight").first().innerText();
      expect(status.trim()).toBe("200");
      const stats = JSON.parse(body) as { successful: number; data: { totalNumSales: number } };
      expect(stats.successful).toBe(1);
      expect(stats.data.totalNumSales).toBeGreaterThan(0);

      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: `${SCREENSHOTS}docs.png`, fullPage: false });
      expect(external).toEqual([]);
    } catch (err) {
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: `${SCREENSHOTS}docs-failure.png` });
      throw err;
    } finally {
      await page.close();
    }
  });
});
