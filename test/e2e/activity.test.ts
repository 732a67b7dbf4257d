import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { openSse, type SseStream } from "../../bench/sse-client.js";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";
import { openReadRepositories } from "../../src/store/open.js";
import { encodePageToken, queryDigest } from "../../src/service/page-token.js";

// The activity feed through the served API (decisions.md, "Activity"):
// GET /v1/collection/activity answers sales, listings, offers and transfers
// newest first, a kind filter, pages; /v1/collection/activity/stream (and
// WatchCollectionActivity over gRPC) sends each commit's events live, and a
// stream dropped at any event resumes from its token with exactly the
// events it had not sent: none twice, none missed, each kind in its commit
// order. The list's order against an oracle: test/store/activity.property.test.ts.

const C = "0xac71ac71ac71ac71ac71ac71ac71ac71ac71ac71";
const T = Math.floor(Date.now() / 1000) - 3600;
const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });

let n = 0;
const sale = (at: number) => ({
  hash: `0x${(++n).toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, contractAddress: C,
  assetId: String(n), timestamp: at, block: 1000 + n, price: "5", amountReceived: "5", currency: "ETH", marketplace: "BLUR",
});
const transfer = (at: number) => ({
  hash: `0x${(++n).toString(16).padStart(64, "0")}`, logIndex: 1, from: `0x${"2".repeat(40)}`, to: `0x${"3".repeat(40)}`, contractAddress: C,
  assetId: String(n), timestamp: at, block: 1000 + n,
});
const listing = (at: number) => ({
  marketplaceId: String(++n), marketplace: "OPENSEA", contractAddress: C, assetId: String(5000 + n), createdAt: at, lastUpdatedAt: at, price: "9",
  currency: "ETH", status: "CREATED",
});
const offer = (at: number) => ({
  marketplaceId: String(++n), marketplace: "BLUR", contractAddress: C, maker: `0x${"5".repeat(40)}`, price: "4", currency: "ETH",
  createdAt: at, lastUpdatedAt: at, expiresAt: 0, status: "CREATED",
});

/** One commit of each kind: a sale, a transfer, a listing and an offer, at `at`. */
async function writeEach(at: number): Promise<string[]> {
  const records = { sales: sale(at), transfers: transfer(at), listings: listing(at), offers: offer(at) };
  for (const [kind, r] of Object.entries(records)) await ingestOk(ctx.server, ctx.ingest, kind, [r]);
  return [`sale ${records.sales.hash}`, `transfer ${records.transfers.hash}`, `listing ${records.listings.marketplaceId}`, `offer ${records.offers.marketplaceId}`];
}

interface Event {
  type: string;
  timestamp: number;
  sale: { hash: string } | null;
  transfer: { hash: string } | null;
  listing: { marketplaceId: string } | null;
  offer: { marketplaceId: string } | null;
}
const idOf = (e: Event) => `${e.type} ${e.sale?.hash ?? e.transfer?.hash ?? e.listing?.marketplaceId ?? e.offer?.marketplaceId}`;

function sse(query: Record<string, string>): Promise<SseStream> {
  const url = new URL("/v1/collection/activity/stream", ctx.server.baseUrl);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  return openSse(url.toString(), { "x-api-key": ctx.read });
}

/** The next `count` events of a stream, with each one's resume token. */
async function take(stream: SseStream, count: number): Promise<{ id: string; token: string }[]> {
  const out: { id: string; token: string }[] = [];
  while (out.length < count) {
    const e = await stream.next(10_000);
    if (e === undefined) throw new Error("stream ended");
    out.push({ id: idOf(JSON.parse(e.data) as Event), token: e.id });
  }
  return out;
}

/** The order each kind's events came in (kinds interleave as their feeds are read). */
const byKind = (ids: string[]) => Object.fromEntries(["sale", "transfer", "listing", "offer"].map((k) => [k, ids.filter((i) => i.startsWith(`${k} `))]));

describe("the activity feed", () => {
  it("lists every kind newest first, ties by kind, filtered by kind, paged", async () => {
    const older = await writeEach(T);
    const newer = await writeEach(T + 60);
    const all = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C }, ctx.read);
    expect(all.status).toBe(200);
    const order = ["listing", "offer", "sale", "transfer"];
    // At equal times: listing, offer, sale, transfer.
    const byTime = (ids: string[]) => [...ids].sort((a, b) => order.indexOf(a.split(" ")[0]!) - order.indexOf(b.split(" ")[0]!));
    expect((all.body.data as Event[]).map(idOf)).toEqual([...byTime(newer), ...byTime(older)]);
    const first = (all.body.data as Event[])[0]!;
    expect(first).toMatchObject({ type: "listing", timestamp: T + 60, sale: null, offer: null, transfer: null, listing: { status: "CREATED", price: "9" } });

    const some = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C, types: "sale,transfer", limit: "3" }, ctx.read);
    expect((some.body.data as Event[]).map(idOf)).toEqual([newer[0], newer[1], older[0]]);
    const rest = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C, types: "sale,transfer", limit: "3", cursor: some.body.nextPage as string }, ctx.read);
    expect(rest.body).toMatchObject({ nextPage: "" });
    expect((rest.body.data as Event[]).map(idOf)).toEqual([older[1]]);

    const bad = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C, types: "sale,mint" }, ctx.read);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('types must be some of listing, offer, sale, transfer, got "mint"');
    // A caller's long value is quoted cut short, as every message quotes one.
    const long = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C, types: "x".repeat(5000) }, ctx.read);
    expect(long.status).toBe(400);
    expect(String(long.body.message).length).toBeLessThan(300);
    const other = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: C, types: "sale", cursor: some.body.nextPage as string }, ctx.read);
    expect(other.status).toBe(400);
    expect(other.body.message).toMatch(/belongs to a different query/);
  });

  it("streams each commit live; dropped at any event, resumes with exactly what it had not sent", async () => {
    await writeEach(T); // the collection exists; the stream starts after this
    const stream = await sse({ contractAddress: C });
    const written = [...(await writeEach(T + 120)), ...(await writeEach(T + 180))];
    const seen = await take(stream, written.length);
    stream.close();
    expect(seen.map((e) => e.id).sort()).toEqual([...written].sort());
    // Each kind in its commit order.
    expect(byKind(seen.map((e) => e.id))).toEqual(byKind(written));

    // Dropped after each event in turn, with more written meanwhile: the resumed stream sends the rest, once each.
    let later: string[] = [];
    for (const k of [0, 3, 6]) {
      later = [...later, ...(await writeEach(T + 240 + k))];
      const resumed = await sse({ contractAddress: C, cursor: seen[k]!.token });
      const expected = [...seen.slice(k + 1).map((e) => e.id), ...later];
      const got = await take(resumed, expected.length);
      expect(got.map((e) => e.id).sort()).toEqual([...expected].sort());
      // Nothing more: the next message (a heartbeat's, none within a second) carries no event.
      await expect(resumed.next(1000)).rejects.toThrow();
      resumed.close();
    }
  });

  it("over gRPC: the same events, a kind filter, and a cursor of another query refused", async () => {
    const client = createClient(CollectionService, createGrpcTransport({ baseUrl: ctx.server.baseUrl }));
    const headers = { "x-api-key": ctx.read };
    await writeEach(T);
    const abort = new AbortController();
    const stream = client.watchCollectionActivity({ contractAddress: C, types: ["offer"] }, { headers, signal: abort.signal })[Symbol.asyncIterator]();
    const opening = (await stream.next()).value!;
    expect(opening.event).toBeUndefined();
    const written = await writeEach(T + 400);
    const got = (await stream.next()).value!;
    expect(got.event).toMatchObject({ type: "offer", offer: { marketplaceId: written[3]!.split(" ")[1] } });
    abort.abort();
    const wrong = client.watchCollectionActivity({ contractAddress: C, types: ["sale"], cursor: got.resumeToken }, { headers })[Symbol.asyncIterator]();
    await expect(wrong.next()).rejects.toSatisfy((e: unknown) => ConnectError.from(e).code === Code.InvalidArgument);
  });

  it("sends a token's record written (types=token: a metadata refresh is an event), only when asked; resumes a cursor made before tokens were a feed", async () => {
    const K = "0xac72ac72ac72ac72ac72ac72ac72ac72ac72ac72";
    const client = createClient(CollectionService, createGrpcTransport({ baseUrl: ctx.server.baseUrl }));
    const headers = { "x-api-key": ctx.read };
    const token = (image: string) => ({ contractAddress: K, assetId: "1", attributes: [], name: "One", image });
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("ipfs://a")]);
    const abort = new AbortController();
    const tokens = client.watchCollectionActivity({ contractAddress: K, types: ["token"] }, { headers, signal: abort.signal })[Symbol.asyncIterator]();
    const market = client.watchCollectionActivity({ contractAddress: K }, { headers, signal: abort.signal })[Symbol.asyncIterator]();
    const opening = (await tokens.next()).value!;
    expect((await market.next()).value!.event).toBeUndefined();
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("ipfs://a")]);
    await ingestOk(ctx.server, ctx.ingest, "tokens", [token("ipfs://b")]);
    const got = (await tokens.next()).value!;
    expect(got.event).toMatchObject({ type: "token", token: { assetId: "1", name: "One", image: "ipfs://b" } });
    // The market's stream (no types) got nothing: its next message is a sale written after.
    await ingestOk(ctx.server, ctx.ingest, "sales", [{ ...sale(T), contractAddress: K }]);
    expect((await market.next()).value!.event?.type).toBe("sale");
    abort.abort();
    // From the opening token: the one change since, not the unchanged record.
    const again = client.watchCollectionActivity({ contractAddress: K, types: ["token"], cursor: opening.resumeToken }, { headers })[Symbol.asyncIterator]();
    expect((await again.next()).value!.event).toBeUndefined();
    expect((await again.next()).value!.event?.token?.image).toBe("ipfs://b");
    await again.return?.();
    // The list carries no tokens: a token's write is no market event of its own time.
    const listed = await restGet(ctx.server.baseUrl, "/v1/collection/activity", { contractAddress: K, types: "token" }, ctx.read);
    expect(listed.status).toBe(400);
    // A cursor of the stream's four kinds, as made before tokens were a feed (no token position): resumed from it.
    const store = await openReadRepositories(ctx.target);
    const [epoch, last] = await Promise.all([store.feed.epoch(), store.feed.last()]);
    await store.close();
    const old = encodePageToken(queryDigest(["watch-activity", K, ["listing", "offer", "sale", "transfer"]]), [epoch, last, last, last, last]);
    const abortOld = new AbortController();
    const resumed = client.watchCollectionActivity({ contractAddress: K, cursor: old }, { headers, signal: abortOld.signal })[Symbol.asyncIterator]();
    expect((await resumed.next()).value!.event).toBeUndefined();
    await ingestOk(ctx.server, ctx.ingest, "sales", [{ ...sale(T), contractAddress: K }]);
    expect((await resumed.next()).value!.event?.type).toBe("sale");
    abortOld.abort();
  });
});
