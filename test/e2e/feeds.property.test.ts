import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ingestOk, restListAll, useEmptyStoreServer } from "../support/server.js";
import { openSse } from "../../bench/sse-client.js";

// Exactly once, in commit order, as a property: random ingest batches (new
// sales and changes to earlier ones), some committed before the subscribers
// open (a backlog they replay, three rows a read, so that it spans reads)
// and the rest while they read. Subscribers on SSE, Connect, gRPC and
// gRPC-Web are dropped after random numbers of messages, counting the
// position-only ones (the opening message, so a drop right after it too),
// and resumed from the token of the last message they got, whatever it was.
// Each subscriber's sale positions only grow (nothing twice), its tokens
// never go back, and what it received, each sale as last received, equals
// the list endpoint's answer (nothing missed). On the test engine.

const PAGE_ROWS = 3;
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0, feedPageRows: PAGE_ROWS });

const PROTOCOLS = ["sse", "connect", "grpc", "grpc-web"] as const;
type Protocol = (typeof PROTOCOLS)[number];

interface Received {
  token: string;
  sale?: Record<string, unknown>;
}

interface Stream {
  /** The next message, position-only ones included; undefined once the stream ended or was closed. */
  next(): Promise<Received | undefined>;
  close(): void;
}

/** One stream from `cursor`, message by message. */
async function open(protocol: Protocol, collection: string, cursor: string): Promise<Stream> {
  if (protocol === "sse") {
    const url = new URL("/v1/asset/sales/stream", ctx.server.baseUrl);
    url.searchParams.set("contractAddress", collection);
    // Resumed by Last-Event-ID, as an EventSource does.
    const s = await openSse(url.toString(), { "x-api-key": ctx.read, ...(cursor === "" ? {} : { "last-event-id": cursor }) }, { positions: true });
    if (s.status !== 200) throw new Error(`SSE ${s.status} ${JSON.stringify(s.errorBody)}`);
    let closed = false;
    return {
      next: async () => {
        const e = await s.next(30_000).catch((err: unknown) => {
          if (closed) return undefined;
          throw err;
        });
        if (e === undefined) return undefined;
        if (e.event === "end") throw new Error(`SSE stream ended: ${e.data}`);
        return e.event === "position" ? { token: e.id } : { token: e.id, sale: JSON.parse(e.data) as Record<string, unknown> };
      },
      close: () => {
        closed = true;
        s.close();
      },
    };
  }
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl: ctx.server.baseUrl })
      : protocol === "grpc-web"
        ? createGrpcWebTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" })
        : createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" });
  const abort = new AbortController();
  const it = createClient(AssetService, transport)
    .watchSales({ contractAddress: collection, cursor }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })
    [Symbol.asyncIterator]();
  return {
    next: async () => {
      const r = await it.next().catch((err: unknown) => {
        if (abort.signal.aborted) return { done: true as const, value: undefined };
        throw err;
      });
      if (r.done === true) return undefined;
      if (r.value.sale === undefined) return { token: r.value.resumeToken };
      const { $typeName: _, ...sale } = r.value.sale;
      return { token: r.value.resumeToken, sale: { ...sale, timestamp: Number(sale.timestamp), block: Number(sale.block) } };
    },
    close: () => abort.abort(),
  };
}

const positionOf = (token: string) => (JSON.parse(Buffer.from(token, "base64url").toString()) as { k: [number, string] }).k[0];
const keyOf = (s: Record<string, unknown>) => `${s.hash as string}/${s.assetId as string}`;

/**
 * A subscriber that reads every message until stopped, dropping after each
 * count of messages in `drops` (position-only ones counted) and resuming
 * from the token of the last message it got. Each message is awaited to the
 * end (never raced against a timer: a message that came late would be lost
 * by the test, not by the server).
 */
function subscriber(protocol: Protocol, collection: string, firstToken: string, drops: number[]) {
  const state = {
    seen: new Map<string, Record<string, unknown>>(),
    salePositions: [] as number[],
    tokenPositions: [] as number[],
    token: firstToken,
    stop: false,
    error: undefined as unknown,
  };
  let stream: Stream | undefined;
  const done = (async () => {
    try {
      while (!state.stop) {
        stream = await open(protocol, collection, state.token);
        for (let untilDrop = drops.shift() ?? Infinity; untilDrop > 0 && !state.stop; untilDrop--) {
          const m = await stream.next();
          if (m === undefined) break;
          state.tokenPositions.push(positionOf(m.token));
          state.token = m.token;
          if (m.sale === undefined) continue;
          state.salePositions.push(positionOf(m.token));
          state.seen.set(keyOf(m.sale), m.sale);
        }
        stream.close();
      }
    } catch (err) {
      state.error = err;
    }
  })();
  return {
    state,
    stop: async () => {
      state.stop = true;
      stream?.close();
      await done;
    },
  };
}

const op = fc.record({ key: fc.integer({ min: 0, max: 24 }), price: fc.integer({ min: 1, max: 4 }), blur: fc.boolean() });

let runs = 0;

async function ingestBatch(collection: string, batch: readonly { key: number; price: number; blur: boolean }[]): Promise<void> {
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

/** The opening token of a stream on the collection now: where a subscriber that starts from it starts. */
async function openingToken(collection: string): Promise<string> {
  const abort = new AbortController();
  const client = createClient(AssetService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
  const it = client.watchSales({ contractAddress: collection }, { headers: { "x-api-key": ctx.read }, signal: abort.signal })[Symbol.asyncIterator]();
  const m = await it.next();
  abort.abort();
  return m.value!.resumeToken;
}

describe("live feeds: exactly once, in commit order", () => {
  it("the union of what each dropped-and-resumed subscriber received equals the list, backlog and live", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(op, { minLength: 1, maxLength: 12 }), { minLength: 2, maxLength: 7 }),
        fc.nat(),
        fc.array(fc.record({ protocol: fc.constantFrom<Protocol>(...PROTOCOLS), drops: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 4 }) }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (batches, backlogSeed, subscribers) => {
          const collection = `0x${(0xfeed0000 + ++runs).toString(16).padStart(40, "0")}`;
          await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: collection, name: `run ${runs}` }]);
          // Every subscriber starts at the collection's beginning, then finds
          // `backlog` batches committed before it opened, then the rest live.
          const first = await openingToken(collection);
          const backlog = backlogSeed % (batches.length + 1);
          for (const batch of batches.slice(0, backlog)) await ingestBatch(collection, batch);
          const subs = subscribers.map((s) => subscriber(s.protocol, collection, first, [...s.drops]));
          for (const batch of batches.slice(backlog)) await ingestBatch(collection, batch);
          const expected = new Map((await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: collection }, ctx.read)).map((s) => [keyOf(s), s]));
          try {
            for (const { state } of subs) {
              await expect.poll(() => state.error ?? Object.fromEntries(state.seen), { timeout: 10_000 }).toEqual(Object.fromEntries(expected));
              for (let i = 1; i < state.salePositions.length; i++) expect(state.salePositions[i]).toBeGreaterThan(state.salePositions[i - 1]!);
              for (let i = 1; i < state.tokenPositions.length; i++) expect(state.tokenPositions[i]).toBeGreaterThanOrEqual(state.tokenPositions[i - 1]!);
            }
          } finally {
            await Promise.all(subs.map((s) => s.stop()));
          }
        },
      ),
      { numRuns: 16 },
    );
  }, 300_000);
});
