import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VALID } from "../ingest/records.js";
import { deriveAll } from "../../src/derive/derive.js";
import { openWritableStore } from "../../src/store/open.js";
import { emptyStore, importRecords, withKeys } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";
import { ingestOk, startTestServer, type TestServer } from "../support/server.js";

// Data versions per collection (issue 21, item 5), on the test engine: a
// write to one collection leaves every cached answer and ETag of the others
// valid, and makes that collection's answers fresh at once; a change that
// may reach every collection (a social user's new profile) and a change to
// the keys are seen at once too. Writes come through the ingest API (the
// server's own writer) and through imports and derives from another
// connection, as the CLI makes them.

const A = "0x" + "a".repeat(40);
const B = "0x" + "b".repeat(40);
const s = {} as { target: string; cleanup(): Promise<void>; server: TestServer; readKey: string; ingestKey: string };

const user = (followersCount: number) => ({ ...(VALID.influencers!.user as object), followersCount });

beforeAll(async () => {
  Object.assign(s, await emptyStore());
  for (const c of [A, B]) {
    await importRecords(s.target, "sales", [0, 1, 2].map((n) => numberedSale(n, c)));
    await importRecords(s.target, "influencers", [{ contractAddress: c, user: user(100), score: 50 }]);
  }
  await withKeys(s.target, async (admin) => {
    s.readKey = (await admin.create("reader")).key;
    s.ingestKey = (await admin.create("indexer", { scope: "ingest" })).key;
  });
  s.server = await startTestServer(s.target, { ingestRateLimit: 0 });
});

afterAll(async () => {
  await s.server?.close();
  await s.cleanup?.();
});

async function get(path: string, collection: string, key = s.readKey) {
  const r = await fetch(`${s.server.baseUrl}${path}?contractAddress=${collection}&limit=50`, { headers: { "x-api-key": key } });
  return { status: r.status, etag: r.headers.get("etag"), body: (await r.json()) as Record<string, unknown> };
}

const SALES = "/v1/asset/sales";
const INFLUENCERS = "/v1/collection/influencers";

/** The cache's hits and misses over `fn`. */
async function cacheUse(fn: () => Promise<void>): Promise<{ hits: number; misses: number }> {
  const { hits, misses } = s.server.cache;
  await fn();
  return { hits: s.server.cache.hits - hits, misses: s.server.cache.misses - misses };
}

const ingest = (kind: string, records: object[]) => ingestOk(s.server, s.ingestKey, kind, records);

const saleCount = (body: Record<string, unknown>) => ((body.sales ?? body.data) as unknown[]).length;

describe("data versions per collection", () => {
  it("a write to one collection keeps the other's cached answers and ETags, and the written one's answers are fresh at once", async () => {
    const a0 = await get(SALES, A);
    const b0 = await get(SALES, B);
    expect([a0.status, b0.status]).toEqual([200, 200]);
    expect(saleCount(b0.body)).toBe(3);

    // Through the server's own writer.
    await ingest("sales", [numberedSale(10, B)]);
    let a1: Awaited<ReturnType<typeof get>> | undefined;
    let b1: Awaited<ReturnType<typeof get>> | undefined;
    const use = await cacheUse(async () => {
      a1 = await get(SALES, A);
      b1 = await get(SALES, B);
    });
    expect(a1!.etag).toBe(a0.etag);
    expect(saleCount(b1!.body)).toBe(4);
    expect(b1!.etag).not.toBe(b0.etag);
    expect(use).toEqual({ hits: 1, misses: 1 });

    // From another connection, as `marketdata import` writes.
    await importRecords(s.target, "sales", [numberedSale(11, A)]);
    const use2 = await cacheUse(async () => {
      const a2 = await get(SALES, A);
      const b2 = await get(SALES, B);
      expect(saleCount(a2.body)).toBe(4);
      expect(b2.etag).toBe(b1!.etag);
    });
    expect(use2).toEqual({ hits: 1, misses: 1 });
  });

  it("a derive of one collection keeps the other's cached answers", async () => {
    await get(SALES, A);
    await get(SALES, B);
    const store = await openWritableStore(s.target);
    try {
      await deriveAll(store.derive, A);
    } finally {
      await store.close();
    }
    const use = await cacheUse(async () => {
      await get(SALES, A);
      await get(SALES, B);
    });
    expect(use).toEqual({ hits: 1, misses: 1 });
  });

  it("a user's new profile, sent with one collection's influencers, shows at once in every collection's", async () => {
    const b0 = await get(INFLUENCERS, B);
    await ingest("influencers", [{ contractAddress: A, user: user(999), score: 50 }]);
    const b1 = await get(INFLUENCERS, B);
    expect(b1.etag).not.toBe(b0.etag);
    expect(JSON.stringify(b1.body)).toContain("999");
  });

  it("a revoked key is refused at once, and the data's cached answers stay", async () => {
    const extra = await withKeys(s.target, (admin) => admin.create("short-lived"));
    expect((await get(SALES, A, extra.key)).status).toBe(200);
    await get(SALES, B);
    await withKeys(s.target, (admin) => admin.revoke(extra.id));
    expect((await get(SALES, A, extra.key)).status).toBe(401);
    const use = await cacheUse(async () => {
      expect((await get(SALES, B)).status).toBe(200);
    });
    expect(use).toEqual({ hits: 1, misses: 0 });
  });
});
