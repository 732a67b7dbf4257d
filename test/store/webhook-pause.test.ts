import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeliveryClient, DeliveryResult } from "../../src/service/webhooks/delivery.js";
import { WebhookDispatcher } from "../../src/service/webhooks/dispatcher.js";
import { openReadRepositories, openWebhookStore } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import type { WebhookStore } from "../../src/store/ports/webhooks.js";
import { importRecords, withKeys } from "../support/engine.js";
import { storeEngines } from "../support/store-engines.js";
import { numberedSale } from "../support/sales.js";

// A webhook paused right after a delivery, before the dispatcher wrote the
// delivered position (it writes every 100 ms): the next lease round no
// longer holds the webhook, and once dropped its position with it, so a
// resume sent the delivered batch again (a CI run saw four events twice).
// The position is now written as the webhook is let go.

const engines = storeEngines("webhook-pause");
const C = `0x${"9a".repeat(20)}`;

for (const [name, open, skip] of engines) {
  describe.skipIf(skip)(`a webhook paused just after a delivery (${name})`, () => {
    let target: string;
    let drop: () => Promise<void>;
    let repos: ReadRepositories;
    let hooks: WebhookStore;
    beforeAll(async () => {
      ({ target, drop } = await open());
      await importRecords(target, "sales", [1, 2, 3].map((n) => numberedSale(n, C)));
      repos = await openReadRepositories(target);
      hooks = await openWebhookStore(target);
    });
    afterAll(async () => {
      await hooks?.close();
      await repos?.close();
      await drop?.();
    });

    it("keeps its position: resumed, it sends nothing it had sent", async () => {
      const keyId = await withKeys(target, async (a) => (await a.create("k")).id);
      const hook = await hooks.create({
        id: "wh_paused00000000000000", url: "http://127.0.0.1:9/in", collections: [C], kinds: ["sales"], keyId, secret: "whsec_x",
        epoch: await repos.feed.epoch(), positions: { sales: 0, listings: 0, offers: 0, transfers: 0, tokens: 0 },
      });
      const sent: string[] = [];
      let paused: Promise<unknown> | undefined;
      const client = {
        post(_url: string, id: string): Promise<DeliveryResult> {
          sent.push(id);
          // Paused as the receiver answers: before the dispatcher's next commit.
          paused ??= hooks.setState(hook.id, "paused", null);
          return Promise.resolve({ status: 200, latencyMs: 1, error: "" });
        },
        close() {},
      };
      const dispatcher = new WebhookDispatcher(repos, hooks, {
        holder: "process-a", client: client as unknown as DeliveryClient, log: { warn: () => {}, info: () => {} },
        pollMs: 5, leaseEveryMs: 5, random: () => 0,
      });
      dispatcher.start();
      try {
        await expect.poll(() => sent.length, { timeout: 10_000, interval: 10 }).toBe(1);
        await paused;
        // Lease rounds come and go while it is paused; then it is resumed.
        await new Promise((r) => setTimeout(r, 500));
        await hooks.setState(hook.id, "active", null, true);
        await new Promise((r) => setTimeout(r, 1000));
      } finally {
        await dispatcher.close(1000);
      }
      expect(sent).toHaveLength(1);
      expect((await hooks.get(hook.id))!.positions.sales).toBeGreaterThan(0);
    });
  });
}
