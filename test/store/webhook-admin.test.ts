import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_WEBHOOKS_PER_KEY, WebhookAdmin } from "../../src/service/webhooks/admin.js";
import { openReadRepositories, openWebhookStore } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import type { WebhookStore } from "../../src/store/ports/webhooks.js";
import { importRecords, withKeys } from "../support/engine.js";
import { storeEngines } from "../support/store-engines.js";
import { numberedSale } from "../support/sales.js";

// What WebhookAdmin refuses and bounds (issue 49, items 9, 10 and 13), on
// both engines: a webhook naming no collection once its list is split
// (",", " , "), a start past the feed's next position (it would wait
// silently for ever), more than MAX_WEBHOOKS_PER_KEY webhooks per key; and
// ListWebhooks' keyset pages.


const engines = storeEngines("webhook-admin");
const C = `0x${"ad".repeat(20)}`;
const URL_ = "https://hooks.example.com/in";

async function code(p: Promise<unknown>): Promise<Code | undefined> {
  return p.then(() => undefined, (e: unknown) => (e instanceof ConnectError ? e.code : undefined));
}

for (const [name, open, skip] of engines) {
  describe.skipIf(skip)(`webhook administration (${name})`, () => {
    let target: string;
    let drop: () => Promise<void>;
    let repos: ReadRepositories;
    let hooks: WebhookStore;
    let admin: WebhookAdmin;
    let keyId: number;
    beforeAll(async () => {
      ({ target, drop } = await open());
      await importRecords(target, "sales", [1, 2, 3].map((n) => numberedSale(n, C)));
      keyId = await withKeys(target, async (a) => (await a.create("k")).id);
      repos = await openReadRepositories(target);
      hooks = await openWebhookStore(target);
      admin = new WebhookAdmin(repos, hooks, { allowPrivate: false });
    });
    afterAll(async () => {
      await hooks?.close();
      await repos?.close();
      await drop?.();
    });

    it("refuses a webhook whose collections name none once split", async () => {
      for (const collections of [[","], [" , "], ["", " "], []]) {
        expect(await code(admin.create({ url: URL_, collections, types: [], keyId })), JSON.stringify(collections)).toBe(Code.InvalidArgument);
      }
    });

    it("refuses a start past the feed's next position, at create and at replay", async () => {
      const next = (await repos.feed.last()) + 1;
      expect(await code(admin.create({ url: URL_, collections: [C], types: [], keyId, from: String(next + 1) }))).toBe(Code.InvalidArgument);
      const { webhook } = await admin.create({ url: URL_, collections: [C], types: [], keyId, from: String(next) });
      expect(await code(admin.replay(webhook.id, String(next + 50)))).toBe(Code.InvalidArgument);
      expect((await admin.replay(webhook.id, "1")).positions.sales).toBe(0);
      await admin.delete(webhook.id);
    });

    it(`holds a key to ${MAX_WEBHOOKS_PER_KEY} webhooks, and lists them in keyset pages`, async () => {
      for (let i = 0; i < MAX_WEBHOOKS_PER_KEY; i++) await admin.create({ url: `${URL_}/${i}`, collections: [C], types: ["sale"], keyId });
      expect(await code(admin.create({ url: URL_, collections: [C], types: [], keyId }))).toBe(Code.ResourceExhausted);
      // Another key is not held to this one's count.
      const other = await withKeys(target, async (a) => (await a.create("k2")).id);
      await admin.create({ url: URL_, collections: [C], types: [], keyId: other });
      const seen: string[] = [];
      let cursor = "";
      let pages = 0;
      do {
        const page = await admin.page(30, cursor);
        seen.push(...page.webhooks.map((w) => w.id));
        cursor = page.cursor;
        pages++;
      } while (cursor !== "");
      expect(pages).toBe(Math.ceil((MAX_WEBHOOKS_PER_KEY + 1) / 30));
      expect(seen).toEqual([...new Set(seen)].sort());
      expect(seen.length).toBe(MAX_WEBHOOKS_PER_KEY + 1);
      expect((await admin.page(0, "")).webhooks.length).toBe(100);
      expect(await code(admin.page(1001, ""))).toBe(Code.InvalidArgument);
      expect(await code(admin.page(10, "not an id"))).toBe(Code.InvalidArgument);
    }, 60_000);
  });
}
