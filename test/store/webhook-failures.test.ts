import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeliveryClient, DeliveryResult } from "../../src/service/webhooks/delivery.js";
import { WebhookDispatcher } from "../../src/service/webhooks/dispatcher.js";
import { openReadRepositories, openWebhookStore } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import type { WebhookStore } from "../../src/store/ports/webhooks.js";
import { importRecords, withKeys } from "../support/engine.js";
import { storeEngines } from "../support/store-engines.js";
import { numberedSale } from "../support/sales.js";

// A webhook whose receiver keeps failing (issue 49, item 14), on both
// engines: the server's log says so (at warn, once a minute per webhook,
// with the failures counted, the destination's origin only), and the
// batch's attempt number goes on counting across a restart of the
// delivering process instead of starting again at 1.


const engines = storeEngines("webhook-failures");
const C = `0x${"fa".repeat(20)}`;

class FailingClient {
  readonly attempts: string[] = [];
  post(_url: string, id: string): Promise<DeliveryResult> {
    this.attempts.push(id);
    return Promise.resolve({ status: 0, latencyMs: 1, error: "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9" });
  }
  close(): void {}
}

for (const [name, open, skip] of engines) {
  describe.skipIf(skip)(`a failing webhook (${name})`, () => {
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

    it("is logged at warn once a minute, and its attempts go on counting after a restart", async () => {
      const keyId = await withKeys(target, async (a) => (await a.create("k")).id);
      const hook = await hooks.create({
        id: "wh_failing0000000000000", url: "https://hooks.example.com/in?token=secret", collections: [C], kinds: ["sales"], keyId, secret: "whsec_x",
        epoch: await repos.feed.epoch(), positions: { sales: 0, listings: 0, offers: 0, transfers: 0, tokens: 0 },
      });
      const run = async (holder: string, attempts: number) => {
        const client = new FailingClient();
        const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
        const dispatcher = new WebhookDispatcher(repos, hooks, {
          holder, client: client as unknown as DeliveryClient, log: { warn: (obj, msg) => warnings.push({ obj: obj as Record<string, unknown>, msg }), info: () => {} },
          pollMs: 5, leaseEveryMs: 50, random: () => 0,
        });
        dispatcher.start();
        try {
          await expect.poll(() => client.attempts.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(attempts);
        } finally {
          await dispatcher.close(1000);
        }
        return warnings;
      };
      const first = await run("process-a", 3);
      const failed = first.filter((w) => w.msg === "webhooks: delivery failed; retrying");
      expect(failed).toHaveLength(1);
      expect(failed[0]!.obj).toMatchObject({ webhook: hook.id, destination: "https://hooks.example.com", attempt: 1, error: expect.stringMatching(/ECONNREFUSED/) });
      expect(JSON.stringify(first)).not.toMatch(/token=secret/);
      const before = (await hooks.attempts(hook.id, 1))[0]!;
      expect(before.attempt).toBeGreaterThanOrEqual(3);
      // Another process (or this one restarted) takes the webhook over: the same batch, the next attempt.
      await run("process-b", 1);
      const after = await hooks.attempts(hook.id, 100);
      expect(after[0]!.messageId).toBe(before.messageId);
      expect(after[0]!.attempt).toBeGreaterThan(before.attempt);
      // Never counted from 1 again.
      expect(after.filter((a) => a.attempt === 1)).toHaveLength(1);
    }, 60_000);
  });
}
