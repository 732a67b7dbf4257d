import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { createClientWith, createMarketDataClient, type Protocol, type RetryInfo, WebhookService } from "@marketdata/client";
import { describe, expect, it } from "vitest";
import { MAX_BATCH_BYTES } from "../../src/domain/ingest-limits.js";
import { withKeys } from "../support/engine.js";
import { ingestOk, startTestServer, useEmptyStoreServer } from "../support/server.js";
import { numberedSale } from "../support/sales.js";

// @marketdata/client (as built: the workspace package) retries only what
// another attempt may get past: a rate limit (resource_exhausted with
// Retry-After) and an unavailable server. A refusal of the request itself
// (too large, a bad argument, a key it lacks) is answered at once: before,
// a batch over the size bound was sent four times.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0x8181818181818181818181818181818181818181";

function client(protocol: Protocol, key: string, baseUrl = ctx.server.baseUrl) {
  const retries: RetryInfo[] = [];
  const c = createMarketDataClient({ baseUrl, apiKey: key, protocol, onRetry: (r) => retries.push(r) });
  return { c, retries };
}

describe("@marketdata/client retries", () => {
  for (const protocol of ["connect", "grpc-web", "grpc"] as const) {
    it(`${protocol}: a batch over the size bound is refused once, not retried`, async () => {
      const { c, retries } = client(protocol, ctx.ingest);
      // 20 MB of names over a 16 MiB bound (each name within its own bound).
      const records = Array.from({ length: 80_000 }, (_, i) => ({ contractAddress: `0x${i.toString(16).padStart(40, "0")}`, name: "n".repeat(200) }));
      const err = await c.ingest.ingestCollections({ records }).catch((e: unknown) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code, (err as ConnectError).message).toBe(Code.ResourceExhausted);
      expect(retries).toEqual([]);
      expect(MAX_BATCH_BYTES).toBeLessThan(20 * 1024 * 1024);
    }, 60_000);

    it(`${protocol}: a bad argument and a read key's write are answered at once`, async () => {
      const { c, retries } = client(protocol, ctx.read);
      await expect(c.asset.listSales({ contractAddress: C, limit: 99 })).rejects.toMatchObject({ code: Code.InvalidArgument });
      await expect(c.ingest.ingestSales({ records: [] })).rejects.toMatchObject({ code: Code.PermissionDenied });
      expect(retries).toEqual([]);
    });
  }

  it("webhook administration: a read that timed out is tried again, a call that changes a webhook is not", async () => {
    // A server that answers every call with deadline_exceeded (a read's retry, never a write's), counting them.
    const calls: string[] = [];
    const timedOut = (name: string) => () => {
      calls.push(name);
      throw new ConnectError("took too long", Code.DeadlineExceeded);
    };
    const retries: RetryInfo[] = [];
    const c = createClientWith({ baseUrl: "http://127.0.0.1:1", apiKey: "k", maxAttempts: 3, backoffMs: 1, onRetry: (r) => retries.push(r) }, (_p, _u, interceptors) =>
      createRouterTransport(({ service }) => {
        service(WebhookService, {
          listWebhooks: timedOut("ListWebhooks"),
          getWebhook: timedOut("GetWebhook"),
          listWebhookAttempts: timedOut("ListWebhookAttempts"),
          createWebhook: timedOut("CreateWebhook"),
          pauseWebhook: timedOut("PauseWebhook"),
          deleteWebhook: timedOut("DeleteWebhook"),
        });
      }, { transport: { interceptors } }));
    for (const call of [() => c.webhooks.listWebhooks({}), () => c.webhooks.getWebhook({ id: "wh_x" }), () => c.webhooks.listWebhookAttempts({ id: "wh_x" })]) {
      await expect(call()).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    }
    for (const call of [() => c.webhooks.createWebhook({ url: "http://127.0.0.1:9/h" }), () => c.webhooks.pauseWebhook({ id: "wh_x" }), () => c.webhooks.deleteWebhook({ id: "wh_x" })]) {
      await expect(call()).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    }
    expect(calls).toEqual([
      ...Array(3).fill("ListWebhooks"), ...Array(3).fill("GetWebhook"), ...Array(3).fill("ListWebhookAttempts"), "CreateWebhook", "PauseWebhook", "DeleteWebhook",
    ]);
    expect(retries.map((r) => r.procedure)).toEqual(["ListWebhooks", "GetWebhook", "ListWebhookAttempts"].flatMap((m) => Array(2).fill(`/marketdata.v1.WebhookService/${m}`)));
  });

  it("a rate limit (resource_exhausted with Retry-After) is still retried, and then answered", async () => {
    const server = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0 });
    try {
      await ingestOk(server, ctx.ingest, "sales", [numberedSale(1, C)]);
      const limited = await withKeys(ctx.target, async (admin) => (await admin.create("two a second", { rateLimit: 2 })).key);
      const { c, retries } = client("connect", limited, server.baseUrl);
      const answers = await Promise.all(Array.from({ length: 5 }, () => c.collection.getCollectionStats({ contractAddress: C })));
      expect(answers).toHaveLength(5);
      expect(retries.length).toBeGreaterThan(0);
      expect(retries.every((r) => r.error.code === Code.ResourceExhausted && r.error.metadata.get("retry-after") !== null)).toBe(true);
    } finally {
      await server.close();
    }
  }, 30_000);
});
