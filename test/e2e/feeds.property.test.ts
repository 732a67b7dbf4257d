import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ingestOk, restListAll, useEmptyStoreServer } from "../support/server.js";
import { openSse } from "../../src/bench/sse-client.js";

// Exactly once, in commit order, as a property: random ingest batches (new
// sales and changes to earlier ones) while subscribers on SSE, Connect and
// gRPC are dropped and resumed from their last token at random points. Each
// subscriber's positions only grow (nothing twice), and what it received,
// each sale as last received, equals the list endpoint's answer (nothing
// missed). On the test engine.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

type Protocol = "sse" | "connect" | "grpc";

interface Received {
  token: string;
  sale?: Record<string, unknown>;
}

/** One stream from `cursor`, message by message, until closed. */
async function open(protocol: Protocol, collection: string, cursor: string): Promise<{ next(): Promise<Received>; close(): void }> {
  if (protocol === "sse") {
    const url = new URL("/v1/asset/sales/stream", ctx.server.baseUrl);
    url.searchParams.set("contractAddress", collection);
    // Resumed by Last-Event-ID, as an EventSource does.
    const s = await openSse(url.toString(), { "x-api-key": ctx.read, ...(cursor === "" ? {} : { "last-event-id": cursor }) });
    if (s.status !== 200) throw new Error(`SSE ${s.status} ${JSON.stringify(s.errorBody)}`);
    return {
      next: async () => {
        const e = await s.next();
        if (e === undefined) throw new Error("SSE stream ended");
        return { token: e.id, sale: JSON.parse(e.data) as Record<string, unknown> };
      },
      close: () => s.close(),
    };
  }
  const transport =
    protocol === "grpc" ? createGrpcTransport({ baseUrl: ctx.server.baseUrl }) : createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" });
  const abort = new AbortController();
  const it = createClient(AssetService, transport)
    .watchSales({ contractAddress: collection, cursor }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })
    [Symbol.asyncIterator]();
  return {
    next: async () => {
      for (;;) {
        const r = await it.next();
        if (r.done === true) throw new Error("stream ended");
        // Position-only messages (the opening one) carry no sale.
        if (r.value.sale !== undefined) {
          const { $typeName: _, ...sale } = r.value.sale;
          return { token: r.value.resumeToken, sale: { ...sale, timestamp: Number(sale.timestamp), block: Number(sale.block) } };
        }
      }
    },
    close: () => abort.abort(),
  };
}

const positionOf = (token: string) => (JSON.parse(Buffer.from(token, "base64url").toString()) as { k: [number, string] }).k[0];
const keyOf = (s: Record<string, unknown>) => `${s.hash as string}/${s.assetId as string}`;

/** A subscriber that reads until told to stop, dropping and resuming after each count in `drops`. */
function subscriber(protocol: Protocol, collection: string, firstToken: string, drops: number[]) {
  const state = { seen: new Map<string, Record<string, unknown>>(), positions: [] as number[], token: firstToken, stop: false, error: undefined as unknown };
  const done = (async () => {
    let stream = await open(protocol, collection, state.token);
    let untilDrop = drops.shift();
    while (!state.stop) {
      const m = await Promise.race([stream.next(), new Promise<undefined>((r) => setTimeout(() => r(undefined), 100))]).catch((err: unknown) => {
        state.error = err;
        state.stop = true;
        return undefined;
      });
      if (m === undefined) continue;
      state.positions.push(positionOf(m.token));
      state.seen.set(keyOf(m.sale!), m.sale!);
      state.token = m.token;
      if (untilDrop !== undefined && --untilDrop <= 0) {
        stream.close();
        stream = await open(protocol, collection, state.token);
        untilDrop = drops.shift();
      }
    }
    stream.close();
  })();
  return { state, done };
}

const op = fc.record({ key: fc.integer({ min: 0, max: 24 }), price: fc.integer({ min: 1, max: 4 }), blur: fc.boolean() });

let runs = 0;

describe("live feeds: exactly once, in commit order", () => {
  it("the union of what each dropped-and-resumed subscriber received equals the list", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 12 }), { minLength: 2, maxLength: 7 }),
        fc.array(fc.record({ protocol: fc.constantFrom<Protocol>("sse", "connect", "grpc"), drops: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 4 }) }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (batches, subscribers) => {
          const collection = `0x${(0xfeed0000 + ++runs).toString(16).padStart(40, "0")}`;
          await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: collection, name: `run ${runs}` }]);
          // Every subscriber starts at the collection's beginning: the opening token of a stream on the empty collection.
          const first = await (async () => {
            const abort = new AbortController();
            const client = createClient(AssetService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
            const it = client.watchSales({ contractAddress: collection }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })[Symbol.asyncIterator]();
            const m = await it.next();
            abort.abort();
            return m.value!.resumeToken;
          })();
          const subs = subscribers.map((s) => subscriber(s.protocol, collection, first, [...s.drops]));
          for (const batch of batches) {
            const records = batch.map((o) => ({
              hash: `0x${o.key.toString(16).padStart(64, "0")}`,
              from: `0x${"1".repeat(40)}`,
              to: `0x${"2".repeat(40)}`,
              contractAddress: collection,
              assetId: String(o.key % 5),
              timestamp: 1_700_000_000 + o.key,
              block: 18_000_000 + o.key,
              price: String(o.price * 1000),
              amountReceived: "1",
              currency: "ETH",
              marketplace: o.blur ? "BLUR" : "OPENSEA",
            }));
            await ingestOk(ctx.server, ctx.ingest, "sales", records);
          }
          const expected = new Map((await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: collection }, ctx.read)).map((s) => [keyOf(s), s]));
          try {
            for (const { state } of subs) {
              await expect.poll(() => state.error ?? Object.fromEntries(state.seen), { timeout: 10_000 }).toEqual(Object.fromEntries(expected));
              for (let i = 1; i < state.positions.length; i++) expect(state.positions[i]).toBeGreaterThan(state.positions[i - 1]!);
            }
          } finally {
            for (const s of subs) s.state.stop = true;
            await Promise.all(subs.map((s) => s.done));
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 240_000);
});
