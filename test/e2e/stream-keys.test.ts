import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { IngestService, type IngestSalesRequestSchema } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { RESUME_TOKEN_HEADER } from "../../src/service/watch.js";
import { openSse } from "../../bench/sse-client.js";
import { withKeys } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";
import { ingestOk, restListAll, startTestServer, useEmptyStoreServer } from "../support/server.js";

// Keys and limits on the calls that last: a key revoked while it holds live
// feeds open ends each of them `unauthenticated` (SSE: an "end" event with
// the code and the cursor) within about a second, on every protocol; an
// ingest stream's next message after a revocation ends it; and each message
// of an ingest stream is a batch held to the key's ingest limit (held back,
// not refused). On the test engine.

const C = "0x5151515151515151515151515151515151515151";
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

beforeAll(async () => {
  await ingestOk(ctx.server, ctx.ingest, "sales", [numberedSale(0, C)]);
});

const newKey = (scope: "read" | "ingest") => withKeys(ctx.target, (admin) => admin.create(`stream-${scope}`, { scope }));
const revoke = (id: number) => withKeys(ctx.target, (admin) => admin.revoke(id));

const rpcTransports = (): Record<string, Transport> => ({
  Connect: createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }),
  "gRPC-Web": createGrpcWebTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }),
  gRPC: createGrpcTransport({ baseUrl: ctx.server.baseUrl }),
});

/** A WatchSales stream whose end (error or not) is recorded as it comes. */
function watch(transport: Transport, key: string) {
  const abort = new AbortController();
  const it = createClient(AssetService, transport)
    .watchSales({ contractAddress: C }, { headers: { "x-api-key": key }, signal: abort.signal })
    [Symbol.asyncIterator]();
  const state = { opened: false, ended: undefined as ConnectError | "clean" | undefined };
  const done = (async () => {
    try {
      for (;;) {
        const r = await it.next();
        if (r.done === true) break;
        state.opened = true;
      }
      state.ended = "clean";
    } catch (err) {
      state.ended = ConnectError.from(err);
    }
  })();
  return { state, close: () => abort.abort(), done };
}

describe("a key revoked while it holds streams open", () => {
  it("ends its live feeds unauthenticated, with their cursors, on SSE, Connect, gRPC-Web and gRPC within about a second; other keys' stay", async () => {
    const doomed = await newKey("read");
    const other = await newKey("read");
    const url = new URL("/v1/asset/sales/stream", ctx.server.baseUrl);
    url.searchParams.set("contractAddress", C);
    const sse = await openSse(url.toString(), { "x-api-key": doomed.key });
    expect(sse.status).toBe(200);
    const rpc = Object.entries(rpcTransports()).map(([name, t]) => ({ name, ...watch(t, doomed.key) }));
    const survivor = watch(rpcTransports().gRPC!, other.key);
    try {
      for (const s of [...rpc, survivor]) await expect.poll(() => s.state.opened, { timeout: 10_000 }).toBe(true);
      const revokedAt = Date.now();
      expect(await revoke(doomed.id)).toBe(true);
      const end = await sse.next(10_000);
      expect(end?.event).toBe("end");
      expect(JSON.parse(end!.data)).toMatchObject({ code: "unauthenticated", cursor: sse.lastEventId });
      for (const s of rpc) {
        await expect.poll(() => s.state.ended, { timeout: 10_000 }).toBeDefined();
        const err = s.state.ended as ConnectError;
        expect(err, s.name).toBeInstanceOf(ConnectError);
        expect(err.code, s.name).toBe(Code.Unauthenticated);
        expect(err.metadata.get(RESUME_TOKEN_HEADER), s.name).not.toBeNull();
      }
      // "About a second": the keys' version is read every 250 ms while keys are held.
      const tookMs = Date.now() - revokedAt;
      console.log(`revocation to the last stream's end: ${tookMs} ms`);
      expect(tookMs).toBeLessThan(5_000);
      // The other key's stream is still open and still delivers.
      expect(survivor.state.ended).toBeUndefined();
      // A new stream with the revoked key is refused outright.
      expect((await openSse(url.toString(), { "x-api-key": doomed.key })).status).toBe(401);
    } finally {
      sse.close();
      for (const s of [...rpc, survivor]) s.close();
      await Promise.all([...rpc, survivor].map((s) => s.done));
    }
  });

  for (const [name, transport] of [
    ["Connect (HTTP/2)", () => createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "2" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: ctx.server.baseUrl })],
  ] as const) {
    it(`${name}: an ingest stream's next message after the revocation ends it unauthenticated, and is not written`, async () => {
      const writer = await newKey("ingest");
      const collection = `0x${(name.length * 1000 + 7).toString(16).padStart(40, "5")}`;
      const first = numberedSale(1, collection);
      const second = numberedSale(2, collection);
      let sendSecond!: () => void;
      const secondMayGo = new Promise<void>((r) => (sendSecond = r));
      async function* batches(): AsyncGenerator<MessageInitShape<typeof IngestSalesRequestSchema>> {
        yield { records: [toSaleMessage(first)] };
        await secondMayGo;
        yield { records: [toSaleMessage(second)] };
      }
      const answer = createClient(IngestService, transport()).streamSales(batches(), { headers: { "x-api-key": writer.key } });
      answer.catch(() => {});
      await expect.poll(async () => (await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: collection }, ctx.read)).length, { timeout: 10_000 }).toBe(1);
      await revoke(writer.id);
      sendSecond();
      await expect(answer).rejects.toMatchObject({ code: Code.Unauthenticated });
      const hashes = (await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: collection }, ctx.read)).map((s) => s.hash);
      expect(hashes).toEqual([first.hash]);
    });
  }
});

describe("--ingest-rate-limit on ingest streams", () => {
  it("counts each message as a batch: a stream of 6 at 2 batches a second is held back across windows, and every batch is written", async () => {
    const server = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 2 });
    try {
      const collection = "0x5252525252525252525252525252525252525252";
      const sales = Array.from({ length: 6 }, (_, i) => numberedSale(100 + i, collection));
      async function* batches(): AsyncGenerator<MessageInitShape<typeof IngestSalesRequestSchema>> {
        for (const s of sales) yield { records: [toSaleMessage(s)] };
      }
      const started = Date.now();
      const answer = await createClient(IngestService, createGrpcTransport({ baseUrl: server.baseUrl })).streamSales(batches(), {
        headers: { "x-api-key": ctx.ingest },
      });
      const tookMs = Date.now() - started;
      expect(answer.accepted).toBe(6);
      // Six batches at two per one-second window span at least three windows: more than one second.
      expect(tookMs).toBeGreaterThanOrEqual(1000);
      const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text();
      expect(Number(/^marketdata_rate_limited_total\{subject="key"\} (\d+)/m.exec(metrics)?.[1] ?? 0)).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });
});

/** A sale record of the import's JSON shape as the RPC's Sale message. */
function toSaleMessage(s: ReturnType<typeof numberedSale>) {
  return { ...s, timestamp: BigInt(s.timestamp as number), block: BigInt(s.block as number) } as never;
}
