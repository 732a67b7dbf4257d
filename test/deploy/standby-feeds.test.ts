import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AssetService, type WatchSalesResponse } from "../../gen/marketdata/v1/asset_service_pb.js";
import { allowReplication, createStandby, type Standby } from "../../tools/deploy/standby.js";
import { openKeyAdmin, openWritableStore } from "../../src/store/open.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";
import { freePort, ingestOk, startTestServer, type TestServer } from "../support/server.js";
import { openSse } from "../../bench/sse-client.js";

// The live feeds on a PostgreSQL hot standby (pg_basebackup -R of the test
// cluster): LISTEN/NOTIFY would not reach it, so a server there polls the
// data version it has replayed and reads the feed from its own copy. Sales
// ingested through a server on the primary reach subscribers of a server on
// the standby, over gRPC and SSE, and a subscriber resumes there exactly.

const C = "0x4444444444444444444444444444444444444444";
const ctx = {} as { drop(): Promise<void>; dir: string; standby: Standby; primary: TestServer; replica: TestServer; ingest: string; read: string };

describe.skipIf(skipPg)("live feeds on a PostgreSQL standby", () => {
  beforeAll(async () => {
    const db = await createTestDatabase();
    ctx.drop = db.drop;
    await (await openWritableStore(db.url, { migrateEmpty: true })).close();
    const admin = await openKeyAdmin(db.url);
    ctx.ingest = (await admin.create("indexer", { scope: "ingest" })).key;
    ctx.read = (await admin.create("reader")).key;
    await admin.close();
    ctx.primary = await startTestServer(db.url, { rateLimit: 0, ingestRateLimit: 0 });
    await ingestOk(ctx.primary, ctx.ingest, "collections", [{ contractAddress: C, name: "standby feed" }]);
    await allowReplication(db.url);
    ctx.dir = mkdtempSync(join(tmpdir(), "marketdata-standby-feeds-"));
    // A free port now: one derived from the pid may be another service's.
    ctx.standby = await createStandby(db.url, await freePort(), join(ctx.dir, "standby"));
    ctx.replica = await startTestServer(ctx.standby.url(new URL(db.url).pathname.slice(1)), { rateLimit: 0 });
  }, 180_000);

  afterAll(async () => {
    await ctx.replica?.close();
    await ctx.primary?.close();
    await ctx.standby?.destroy();
    if (ctx.dir !== undefined) rmSync(ctx.dir, { recursive: true, force: true });
    await ctx.drop?.();
  });

  it("delivers what the primary committed once replayed, over gRPC and SSE, and resumes exactly from a token", async () => {
    const client = createClient(AssetService, createGrpcTransport({ baseUrl: ctx.replica.baseUrl }));
    const abort = new AbortController();
    // The collection reaches the standby a moment after the primary committed it.
    let it: AsyncIterator<WatchSalesResponse> | undefined;
    await expect
      .poll(async () => {
        it = client.watchSales({ contractAddress: C }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })[Symbol.asyncIterator]();
        return (await it.next().catch(() => ({ value: undefined }))).value?.resumeToken ?? "";
      }, { timeout: 15_000 })
      .not.toBe("");
    const url = new URL("/v1/asset/sales/stream", ctx.replica.baseUrl);
    url.searchParams.set("contractAddress", C);
    const sse = await openSse(url.toString(), { "x-api-key": ctx.read });
    expect(sse.status).toBe(200);

    const batches = [0, 1, 2].map((b) => Array.from({ length: 5 }, (_, i) => numberedSale(1000 + b * 10 + i, C)));
    for (const batch of batches) await ingestOk(ctx.primary, ctx.ingest, "sales", batch);
    const expected = batches.flat().map((s) => s.hash);

    const viaGrpc: string[] = [];
    const tokens: string[] = [];
    while (viaGrpc.length < expected.length) {
      const m = (await it!.next()).value as WatchSalesResponse;
      if (m.sale !== undefined) {
        viaGrpc.push(m.sale.hash);
        tokens.push(m.resumeToken);
      }
    }
    abort.abort();
    expect(viaGrpc).toEqual(expected);
    const viaSse: string[] = [];
    while (viaSse.length < expected.length) viaSse.push((JSON.parse((await sse.next())!.data) as { hash: string }).hash);
    sse.close();
    expect(viaSse).toEqual(expected);

    // Resumed on the standby after the seventh sale: the eighth on, and what came since.
    const resumed = await openSse(url.toString(), { "x-api-key": ctx.read, "last-event-id": tokens[6]! });
    const later = Array.from({ length: 3 }, (_, i) => numberedSale(2000 + i, C));
    await ingestOk(ctx.primary, ctx.ingest, "sales", later);
    const rest: string[] = [];
    while (rest.length < expected.length - 7 + later.length) rest.push((JSON.parse((await resumed.next())!.data) as { hash: string }).hash);
    resumed.close();
    expect(rest).toEqual([...expected.slice(7), ...later.map((s) => s.hash)]);
  }, 60_000);
});
