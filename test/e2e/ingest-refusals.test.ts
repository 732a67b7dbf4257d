import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { IngestResponseSchema, IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { ImportRejected } from "../../src/ingest/importer.js";
import { importRecords } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";
import { restListAll, startTestServer, useEmptyStoreServer } from "../support/server.js";

// What the ingest API and import refuse, and how: each refusal a clear 400
// (REST) / invalid_argument (RPC) naming the record and field, or a counted
// rejection of import, with nothing of the batch written. On the test engine.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0x7171717171717171717171717171717171717171";

async function post(kind: string, body: string | Buffer, server = ctx.server): Promise<{ status: number; body: Record<string, unknown>; bytes: number }> {
  const r = await fetch(`${server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
    body,
  });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text) as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

const now = () => Math.floor(Date.now() / 1000);
const DAY = 86_400;

const listing = (createdAt: number, lastUpdatedAt = createdAt) => ({
  marketplaceId: String(createdAt),
  marketplace: "OPENSEA",
  contractAddress: C,
  assetId: "1",
  createdAt,
  lastUpdatedAt,
  price: "1000",
  currency: "ETH",
  status: "CREATED",
});

describe("sale and listing times past the server's clock", () => {
  it("are refused beyond the allowed skew (a day by default), on REST and RPC; within it they are taken", async () => {
    const far = { ...numberedSale(1, C), timestamp: 99_999_999_999 };
    const tomorrowAndABit = { ...numberedSale(2, C), timestamp: now() + DAY + 3600 };
    const soon = { ...numberedSale(3, C), timestamp: now() + 3600 };
    for (const sale of [far, tomorrowAndABit]) {
      const r = await post("sales", `${JSON.stringify(soon)}\n${JSON.stringify(sale)}\n`);
      expect(r.status).toBe(400);
      expect(r.body.rejected).toEqual([{ line: 2, message: expect.stringMatching(/^timestamp: must not be later than this server's clock allows/) }]);
    }
    const rpc = createClient(IngestService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    await expect(
      rpc.ingestSales({ records: [{ ...far, timestamp: BigInt(far.timestamp), block: BigInt((far as Record<string, unknown>).block as number) } as never] }, { headers: { "x-api-key": ctx.ingest } }),
    ).rejects.toMatchObject({ code: 3, rawMessage: expect.stringMatching(/record 1: timestamp: must not be later/) });
    for (const l of [listing(now() + 2 * DAY), listing(now() - DAY, now() + 2 * DAY)]) {
      const r = await post("listings", JSON.stringify(l));
      expect(r.status).toBe(400);
      expect(String((r.body.rejected as { message: string }[])[0]!.message)).toMatch(/(createdAt|lastUpdatedAt): must not be later/);
    }
    expect(await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: C }, ctx.read).catch(() => [])).toEqual([]);
    expect((await post("sales", JSON.stringify(soon))).status).toBe(200);
  });

  it("--max-clock-skew sets the bound: a server allowing a week takes a sale dated tomorrow and a bit", async () => {
    const server = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0, maxClockSkewSeconds: 7 * DAY });
    try {
      expect((await post("sales", JSON.stringify({ ...numberedSale(4, C), timestamp: now() + DAY + 3600 }), server)).status).toBe(200);
      expect((await post("sales", JSON.stringify({ ...numberedSale(5, C), timestamp: now() + 8 * DAY }), server)).status).toBe(400);
    } finally {
      await server.close();
    }
  });

  it("are counted rejections of import, which then writes nothing", async () => {
    const err = await importRecords(ctx.target, "sales", [numberedSale(6, C), { ...numberedSale(7, C), timestamp: now() + 3 * DAY }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportRejected);
    expect((err as ImportRejected).stats).toMatchObject({ lines: 2, rejected: 1 });
  });
});

const token = (extra: Record<string, unknown> = {}) => ({ contractAddress: C, assetId: "1", currentOwner: "", attributes: [], ...extra });

describe("a bad record gets a clear, bounded 400 and nothing else", () => {
  it("a 200 KB line of 1,000 bad attributes: a short answer naming its first problems (before: megabytes), the same each time", async () => {
    const line = JSON.stringify(token({ attributes: Array.from({ length: 1000 }, () => ({ trait_type: 1, value: { v: "x".repeat(200) } })) }));
    expect(line.length).toBeGreaterThan(200_000);
    const first = await post("tokens", line);
    const again = await post("tokens", line);
    expect(first.status).toBe(400);
    expect(first.bytes).toBeLessThan(4096);
    expect(again.body).toEqual(first.body);
    const message = (first.body.rejected as { line: number; message: string }[])[0]!;
    expect(message.line).toBe(1);
    // The first problems, each value quoted short, the whole cut at 200 characters in a refused batch's answer.
    expect(message.message).toMatch(/^attributes\[0\]\.trait_type: must be a string, got 1; attributes\[0\]\.value: must be a string, number or boolean, got \{"v":"x+\.\.\.;/);
    expect(message.message.length).toBeLessThanOrEqual(203);
  });

  it("a 600 KB line of 60,000 unknown fields is a 400 (before: a 500 from a stack overflow)", async () => {
    const record: Record<string, unknown> = token();
    for (let i = 0; i < 60_000; i++) record[`x${i}`] = 1;
    const r = await post("tokens", JSON.stringify(record));
    expect(r.status).toBe(400);
    expect(r.bytes).toBeLessThan(4096);
  });

  it("10,000 invalid records over gRPC: invalid_argument listing the first 10, within gRPC's trailers (before: a frame-size error)", async () => {
    const rpc = createClient(IngestService, createGrpcTransport({ baseUrl: ctx.server.baseUrl }));
    const records = Array.from({ length: 10_000 }, (_, i) => ({ contractAddress: `bad-${i}`, name: "n".repeat(200) }));
    const err = await rpc.ingestCollections({ records }, { headers: { "x-api-key": ctx.ingest } }).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).rawMessage).toMatch(/^10000 of 10000 records invalid \(the first 10 listed\)/);
    const detail = (err as ConnectError).findDetails(IngestResponseSchema)[0]!;
    expect(detail.rejected.map((r) => r.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  });

  it("a value nested a million levels deep: 400 naming the line and the field (before: a 500)", async () => {
    const deep = `${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`;
    const line = JSON.stringify(token()).replace('"attributes":[]', `"attributes":${deep}`);
    const r = await post("tokens", `${JSON.stringify(token())}\n${line}\n`);
    expect(r.status).toBe(400);
    expect(r.body.rejected).toEqual([{ line: 2, message: "attributes: must not nest deeper than 8 levels" }]);
    // A retweet of a retweet of ...: the same bound, whatever field nests.
    let tweet: Record<string, unknown> | null = null;
    for (let i = 0; i < 50; i++) tweet = { retweetedStatus: tweet };
    const t = await post("tweets", JSON.stringify({ contractAddress: C, ...tweet }));
    expect(t.status).toBe(400);
    expect(String((t.body.rejected as { message: string }[])[0]!.message)).toBe("retweetedStatus: must not nest deeper than 8 levels");
  });

  it("an RPC JSON body nested a million levels deep: invalid_argument before it is parsed, on Connect and gRPC-Web", async () => {
    const body = `{"records":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`;
    const headers = { "x-api-key": ctx.ingest };
    const connect = await fetch(`${ctx.server.baseUrl}/marketdata.v1.IngestService/IngestSales`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
    expect(connect.status).toBe(400);
    expect(await connect.json()).toEqual({ code: "invalid_argument", message: 'the JSON message nests deeper than 16 levels (in "records")' });
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(Buffer.byteLength(body), 1);
    const web = await fetch(`${ctx.server.baseUrl}/marketdata.v1.IngestService/IngestSales`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/grpc-web+json" },
      body: Buffer.concat([frame, Buffer.from(body)]),
    });
    const trailer = Buffer.from(await web.arrayBuffer()).toString("latin1");
    expect(web.headers.get("grpc-status") ?? /grpc-status: ?(\d+)/.exec(trailer)?.[1]).toBe("3");
    // A body as deep as a real batch still decodes (a record's attributes, as tokens carry them).
    const rpc = createClient(IngestService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    const ok = await rpc.ingestTokens({ records: [{ contractAddress: C, assetId: "77", currentOwner: C, attributes: [{ traitType: "Fur", value: { case: "stringValue" as const, value: "Red" }, displayType: "" }] }] }, { headers });
    expect(ok.accepted + ok.duplicates).toBe(1);
  });

  it("refuses Object.prototype's names like any unknown field (before: toString, constructor, __proto__ passed)", async () => {
    for (const name of ["toString", "constructor", "__proto__", "hasOwnProperty", "valueOf"]) {
      const line = JSON.stringify(numberedSale(8, C)).replace(/^\{/, `{"${name}":1,`);
      const r = await post("sales", line);
      expect(r.status, name).toBe(400);
      expect(r.body.rejected, name).toEqual([{ line: 1, message: `${name}: is not a field of this kind` }]);
    }
  });

  it("refuses a line that is not UTF-8 and text with a lone surrogate, naming the line (before: stored as U+FFFD)", async () => {
    const good = Buffer.from(`${JSON.stringify({ contractAddress: C, name: "fine" })}\n`);
    const broken = Buffer.concat([Buffer.from(`{"contractAddress":"${C}","name":"caf`), Buffer.from([0xe9]), Buffer.from('"}\n')]);
    const r = await post("collections", Buffer.concat([good, broken]));
    expect(r.status).toBe(400);
    expect(r.body.rejected).toEqual([{ line: 2, message: "record: is not valid UTF-8 text (a decoder would store U+FFFD in its place)" }]);
    const lone = await post("collections", `{"contractAddress":"${C}","name":"a\\ud800b"}`);
    expect(lone.status).toBe(400);
    expect(String((lone.body.rejected as { message: string }[])[0]!.message)).toMatch(/^name: must be valid Unicode text/);
    // Connect with a JSON body that is not UTF-8: invalid_argument, not a U+FFFD.
    const rpc = await fetch(`${ctx.server.baseUrl}/marketdata.v1.IngestService/IngestCollections`, {
      method: "POST",
      headers: { "x-api-key": ctx.ingest, "content-type": "application/json" },
      body: Buffer.concat([Buffer.from(`{"records":[{"contractAddress":"${C}","name":"caf`), Buffer.from([0xe9]), Buffer.from('"}]}')]),
    });
    expect(rpc.status).toBe(400);
    expect(((await rpc.json()) as { code: string }).code).toBe("invalid_argument");
  });

  it("an import line that is not UTF-8 is a counted rejection", async () => {
    const { importLines } = await import("../../src/ingest/importer.js");
    const { lineBatches } = await import("../../src/ingest/line-batches.js");
    const { openWritableStore } = await import("../../src/store/open.js");
    const { Readable } = await import("node:stream");
    const store = await openWritableStore(ctx.target);
    const rejected: number[] = [];
    try {
      const bytes = Buffer.concat([Buffer.from(`{"contractAddress":"${C}","name":"a"}\n{"contractAddress":"${C}","name":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}\n')]);
      const stats = await importLines(store.records, lineBatches(Readable.from([bytes])), { kind: "collections", skipInvalid: true, onReject: (e) => rejected.push(e.line) });
      expect(stats).toMatchObject({ lines: 2, rejected: 1 });
      expect(rejected).toEqual([2]);
    } finally {
      await store.close();
    }
  });

  it("bounds every text field (before: an 8 MiB name was taken and served on every read)", async () => {
    const huge = await post("collections", JSON.stringify({ contractAddress: C, name: "n".repeat(8 * 1024 * 1024) }));
    expect(huge.status).toBe(400);
    expect(huge.body.rejected).toEqual([{ line: 1, message: "name: must be at most 256 characters, got 8388608" }]);
    const many = await post("tokens", JSON.stringify(token({ attributes: Array.from({ length: 1001 }, () => ({ trait_type: "t", value: 1 })) })));
    expect(many.status).toBe(400);
    expect(String((many.body.rejected as { message: string }[])[0]!.message)).toBe("attributes: must hold at most 1000 items, got 1001");
    const long = await post("tokens", JSON.stringify(token({ attributes: [{ trait_type: "t", value: "v".repeat(1025) }] })));
    expect(String((long.body.rejected as { message: string }[])[0]!.message)).toBe("attributes[0].value: must be at most 1024 characters, got 1025");
    expect((await post("collections", JSON.stringify({ contractAddress: C, name: "n".repeat(256) }))).status).toBe(200);
  });
});
