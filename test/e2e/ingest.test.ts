import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IngestResponseSchema, IngestSalesRequestSchema, IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import type { Sale } from "../../gen/marketdata/v1/resources_pb.js";
import { MAX_BATCH_RECORDS } from "../../src/domain/ingest-limits.js";
import { openWritableStore } from "../../src/store/open.js";
import { emptyStore, fixtureRecords, withKeys } from "../support/engine.js";
import { ENDPOINTS } from "../support/endpoints.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { clientsFor, PROTOCOLS, restGet, startTestServer, type TestServer, transportFor, useFixtureServer } from "../support/server.js";

// The ingest API (POST /v1/ingest/KIND and IngestService on every RPC
// protocol), against an empty store on the test engine, with the fixture's
// server as the oracle: what the read API answers there, sent through the
// ingest API, must be answered the same here. Every kind goes through REST
// (as NDJSON, the fixture's import records) and again through the RPCs (as
// the messages the read API returned), where each record must then be a
// duplicate: the RPC records mean exactly what the import lines mean.

const src = useFixtureServer(buildFixture);
const dst = {} as { target: string; cleanup(): Promise<void>; server: TestServer; ingestKey: string; adminKey: string; readKey: string };

beforeAll(async () => {
  Object.assign(dst, await emptyStore());
  // An empty store at this build's schema, as `migrate` leaves it.
  await (await openWritableStore(dst.target, { migrateEmpty: true })).close();
  await withKeys(dst.target, async (admin) => {
    dst.ingestKey = (await admin.create("indexer", { scope: "ingest" })).key;
    dst.adminKey = (await admin.create("operator", { scope: "admin" })).key;
    dst.readKey = (await admin.create("reader")).key;
  });
  dst.server = await startTestServer(dst.target, { ingestRateLimit: 0 });
});

afterAll(async () => {
  await dst.server?.close();
  await dst.cleanup?.();
});

const ndjson = (records: readonly object[]) => records.map((r) => JSON.stringify(r)).join("\n") + "\n";

async function post(kind: string, body: string, key: string | undefined, query = "", type = "application/x-ndjson") {
  const headers: Record<string, string> = { "content-type": type };
  if (key !== undefined) headers["x-api-key"] = key;
  const r = await fetch(`${dst.server.baseUrl}/v1/ingest/${kind}${query}`, { method: "POST", headers, body });
  return { status: r.status, body: (await r.json()) as Record<string, unknown>, headers: r.headers };
}

/** The query each endpoint is compared with (scores takes a list). */
const QUERIES: Record<string, Record<string, string | number | undefined>> = Object.fromEntries(
  ENDPOINTS.map(([path]) => [path, path.endsWith("/scores") ? { contractAddress: COLLECTION } : { contractAddress: COLLECTION, limit: 50 }]),
);

describe("ingest over REST (NDJSON)", () => {
  it("takes every kind's import lines, and then answers every endpoint as the imported store does", async () => {
    const records = fixtureRecords(src.f);
    for (const [kind, rows] of Object.entries(records)) {
      const r = await post(kind, ndjson(rows), dst.ingestKey);
      expect(r.status, `${kind}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body).toEqual({ accepted: rows.length, duplicates: 0, rejected: [] });
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
    for (const [path] of ENDPOINTS) {
      const want = await restGet(src.server.baseUrl, path, QUERIES[path]!, src.f.key);
      const got = await restGet(dst.server.baseUrl, path, QUERIES[path]!, dst.readKey);
      expect(got, path).toEqual(want);
    }
  });

  it("counts a record sent again as a duplicate, never a second row", async () => {
    const sales = fixtureRecords(src.f).sales!;
    const r = await post("sales", ndjson(sales), dst.adminKey);
    expect(r.body).toEqual({ accepted: 0, duplicates: sales.length, rejected: [] });
    const stats = await restGet(dst.server.baseUrl, "/v1/collection/stats", { contractAddress: COLLECTION }, dst.readKey);
    const want = await restGet(src.server.baseUrl, "/v1/collection/stats", { contractAddress: COLLECTION }, src.f.key);
    expect(stats.body).toEqual(want.body);
  });

  it("refuses a batch with an invalid line whole, naming each line; with skipInvalid writes the valid ones", async () => {
    const fresh = { ...fixtureRecords(src.f).sales![0]!, hash: `0x${"e".repeat(64)}` } as Record<string, unknown>;
    const body = `${JSON.stringify(fresh)}\n\n{"hash": "nope"}\nnot json\n`;
    const refused = await post("sales", body, dst.ingestKey);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe("invalid_argument");
    expect(refused.body.message).toMatch(/^2 of 3 records invalid; nothing was written/);
    expect(refused.body.accepted).toBe(0);
    const rejected = refused.body.rejected as { line: number; message: string }[];
    // Lines as an editor numbers them: the blank line counts.
    expect(rejected.map((r) => r.line)).toEqual([3, 4]);
    expect(rejected[0]!.message).toMatch(/^hash: must be 0x followed by 64 hex characters/);
    expect(rejected[1]!.message).toMatch(/^record: is not valid JSON/);
    const before = await restGet(dst.server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION, assetId: String(fresh.assetId) }, dst.readKey);
    expect((before.body.data as { hash: string }[]).some((s) => s.hash === fresh.hash)).toBe(false);

    const kept = await post("sales", body, dst.ingestKey, "?skipInvalid=true");
    expect(kept.status).toBe(200);
    expect(kept.body).toMatchObject({ accepted: 1, duplicates: 0 });
    expect((kept.body.rejected as unknown[]).length).toBe(2);
    const after = await restGet(dst.server.baseUrl, "/v1/asset/sales", { contractAddress: COLLECTION, assetId: String(fresh.assetId) }, dst.readKey);
    expect((after.body.data as { hash: string }[]).some((s) => s.hash === fresh.hash)).toBe(true);
  });

  it("needs a key that may write: a read key is refused with 403, no key with 401", async () => {
    const line = ndjson(fixtureRecords(src.f).scores!);
    const read = await post("scores", line, dst.readKey);
    expect(read.status).toBe(403);
    expect(read.body).toEqual({ code: "permission_denied", message: expect.stringMatching(/may only read.*--scope ingest/) });
    const none = await post("scores", line, undefined);
    expect(none.status).toBe(401);
    expect(none.body.code).toBe("unauthenticated");
  });

  it("answers the caller's mistakes in the API's error form", async () => {
    const line = ndjson(fixtureRecords(src.f).scores!);
    const json = await post("scores", line, dst.ingestKey, "", "application/json");
    expect(json.status).toBe(415);
    expect(json.body).toEqual({ code: "invalid_argument", message: expect.stringMatching(/NDJSON.*application\/x-ndjson/) });
    const unknownParam = await post("scores", line, dst.ingestKey, "?skip=true");
    expect(unknownParam.status).toBe(400);
    expect(unknownParam.body.message).toMatch(/unknown query parameter "skip"; accepted: skipInvalid/);
    const badFlag = await post("scores", line, dst.ingestKey, "?skipInvalid=maybe");
    expect(badFlag.status).toBe(400);
    const noKind = await post("nothing", line, dst.ingestKey);
    expect(noKind.status).toBe(404);
    expect(noKind.body.code).toBe("not_found");
    const tooMany = await post("scores", "{}\n".repeat(MAX_BATCH_RECORDS + 1), dst.ingestKey);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe(`a batch holds at most ${MAX_BATCH_RECORDS} records, got more; split it`);
    const empty = await post("scores", "", dst.ingestKey);
    expect(empty.body).toEqual({ accepted: 0, duplicates: 0, rejected: [] });
  });

  it("refuses a body over the batch size with 413, before reading it all", async () => {
    const big = "x".repeat(17 * 1024 * 1024);
    const r = await post("sales", big, dst.ingestKey);
    expect(r.status).toBe(413);
    expect(r.body.code).toBe("resource_exhausted");
  });

  it("holds writes to their own per-key limit, apart from reads", async () => {
    const limited = await startTestServer(dst.target, { ingestRateLimit: 1 });
    try {
      const line = ndjson(fixtureRecords(src.f).scores!);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await fetch(`${limited.baseUrl}/v1/ingest/scores`, {
          method: "POST",
          headers: { "content-type": "application/x-ndjson", "x-api-key": dst.ingestKey },
          body: line,
        });
        statuses.push(r.status);
        await r.arrayBuffer();
      }
      expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
      // Reads by the same key are not counted against it.
      const read = await restGet(limited.baseUrl, "/v1/collection/scores", { contractAddress: COLLECTION }, dst.ingestKey);
      expect(read.status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

/** Every page of a list, through an RPC client. */
async function allPages<T>(page: (cursor: string) => Promise<{ data: T[]; cursor: string }>): Promise<T[]> {
  const out: T[] = [];
  for (let cursor = ""; ; ) {
    const p = await page(cursor);
    out.push(...p.data);
    if (p.cursor === "") return out;
    cursor = p.cursor;
  }
}

/** Whether a protocol's run below has taken back the rarity answers already. */
let rarityTakenBack = false;

describe.each(PROTOCOLS.filter((p) => p !== "connect-binary-get"))("IngestService over %s", (protocol) => {
  const headers = () => ({ "x-api-key": dst.ingestKey });

  it("takes back what the read API answered, every record a duplicate of the NDJSON one", async () => {
    const read = clientsFor(transportFor("connect", src.server.baseUrl));
    const h = { headers: { "x-api-key": src.f.key } };
    const c = createClient(IngestService, transportFor(protocol, dst.server.baseUrl));
    const sales = await allPages(async (cursor) => {
      const r = await read.asset.listSales({ contractAddress: COLLECTION, limit: 50, cursor }, h);
      return { data: r.data, cursor: r.cursor };
    });
    const listings = await allPages(async (cursor) => {
      const r = await read.asset.listListings({ contractAddress: COLLECTION, limit: 50, cursor }, h);
      return { data: r.data, cursor: r.cursor };
    });
    const appraisals = await allPages(async (cursor) => {
      const r = await read.asset.listAppraisals({ contractAddress: COLLECTION, limit: 50, cursor }, h);
      return { data: r.data, cursor: r.nextPage };
    });
    const rarity = await allPages(async (cursor) => {
      const r = await read.asset.listRarity({ contractAddress: COLLECTION, limit: 50, cursor }, h);
      return { data: r.data, cursor: r.nextPage };
    });
    const influencers = (await read.collection.listInfluencers({ contractAddress: COLLECTION, limit: 50 }, h)).data;
    const tweets = (await read.collection.listTweets({ contractAddress: COLLECTION, limit: 50 }, h)).data;
    const scores = (await read.collection.listScores({ contractAddress: [COLLECTION] }, h)).data;
    const want = fixtureRecords(src.f);
    expect(sales.length).toBe(want.sales!.length);
    expect(tweets.length).toBe(want.tweets!.length);

    const answers = [
      ["sales", await c.ingestSales({ records: sales }, { headers: headers() })],
      ["listings", await c.ingestListings({ records: listings }, { headers: headers() })],
      ["appraisals", await c.ingestAppraisals({ records: appraisals }, { headers: headers() })],
      ["rarity", await c.ingestRarity({ records: rarity }, { headers: headers() })],
      ["influencers", await c.ingestInfluencers({ records: influencers.map((i) => ({ contractAddress: COLLECTION, user: i.user, score: i.score })) }, { headers: headers() })],
      ["tweets", await c.ingestTweets({ records: tweets.map((tweet) => ({ contractAddress: COLLECTION, tweet })) }, { headers: headers() })],
      ["scores", await c.ingestScores({ records: scores }, { headers: headers() })],
      ["collections", await c.ingestCollections({ records: want.collections as never }, { headers: headers() })],
    ] as const;
    const sizes: Record<string, number> = { sales: sales.length, listings: listings.length, appraisals: appraisals.length, rarity: rarity.length, influencers: influencers.length, tweets: tweets.length, scores: scores.length, collections: want.collections!.length };
    // Rarity answers a sold token's owner as its buyer (decisions.md,
    // "Ownership"): the first time they are taken back, those records change
    // the stored record's owner; after that they are duplicates too.
    const moved = rarity.filter((r) => want.rarity!.some((w) => (w as { assetId: string }).assetId === r.assetId && (w as { currentOwner: string }).currentOwner !== r.currentOwner)).length;
    expect(moved).toBeGreaterThan(0);
    const changed: Record<string, number> = { rarity: rarityTakenBack ? 0 : moved };
    rarityTakenBack = true;
    for (const [kind, answer] of answers) {
      const accepted = changed[kind] ?? 0;
      expect({ kind, accepted: answer.accepted, duplicates: answer.duplicates, rejected: answer.rejected }).toEqual({ kind, accepted, duplicates: sizes[kind]! - accepted, rejected: [] });
    }
  });

  it("takes tokens, with attribute values of each type", async () => {
    const c = createClient(IngestService, transportFor(protocol, dst.server.baseUrl));
    const token = {
      contractAddress: COLLECTION,
      assetId: "424242",
      currentOwner: `0x${"5".repeat(40)}`,
      attributes: [
        { traitType: "Fur", value: { case: "stringValue" as const, value: "Gold" }, displayType: "" },
        { traitType: "Level", value: { case: "numberValue" as const, value: 7 }, displayType: "number" },
        { traitType: "Shiny", value: { case: "boolValue" as const, value: true }, displayType: "" },
      ],
    };
    const first = await c.ingestTokens({ records: [token] }, { headers: headers() });
    const again = await c.ingestTokens({ records: [token] }, { headers: headers() });
    expect(first.accepted + first.duplicates).toBe(1);
    expect({ accepted: again.accepted, duplicates: again.duplicates }).toEqual({ accepted: 0, duplicates: 1 });
    // The same token as an NDJSON line is the same record.
    const line = { contractAddress: COLLECTION, assetId: "424242", currentOwner: token.currentOwner, attributes: [{ trait_type: "Fur", value: "Gold" }, { trait_type: "Level", value: 7, display_type: "number" }, { trait_type: "Shiny", value: true }] };
    const rest = await post("tokens", ndjson([line]), dst.ingestKey);
    expect(rest.body).toEqual({ accepted: 0, duplicates: 1, rejected: [] });
  });

  it("refuses an invalid batch as invalid_argument, the rejected records in the error's detail", async () => {
    const c = createClient(IngestService, transportFor(protocol, dst.server.baseUrl));
    const sale = { ...fixtureRecords(src.f).sales![0]!, timestamp: 5n, block: 1n } as unknown as Sale;
    const err = await c.ingestSales({ records: [sale, { ...sale, hash: "nope" }] }, { headers: headers() }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toMatch(/^1 of 2 records invalid; nothing was written/);
    const detail = err!.findDetails(IngestResponseSchema)[0];
    expect(detail?.rejected.map((r) => r.line)).toEqual([2]);
    expect(detail?.rejected[0]!.message).toMatch(/^hash: must be 0x followed by 64 hex characters/);
  });

  it("refuses a read key with permission_denied", async () => {
    const c = createClient(IngestService, transportFor(protocol, dst.server.baseUrl));
    const err = await c.ingestScores({ records: [] }, { headers: { "x-api-key": dst.readKey } }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.PermissionDenied);
  });
});

it("takes a batch near the size bound (14 MB in one gRPC message)", async () => {
  const c = createClient(IngestService, transportFor("grpc", dst.server.baseUrl));
  // Each field within its bound (docs/limits.md): two long trait values make a token ~1.4 KB. A thousand
  // values per trait: PostgreSQL's per-row trait counts cost time quadratic in the tokens sharing a value
  // within one batch (one value held by all 10,000 tokens: 40 s here; a hundred values, each held by 100:
  // 28 s on a store with data, at the request timeout's edge; noted for the write-path issue).
  const trait = (t: string, i: number) => ({ traitType: t, value: { case: "stringValue" as const, value: `${String(i % 1000).padStart(3, "0")}${"v".repeat(687)}` }, displayType: "" });
  const records = Array.from({ length: MAX_BATCH_RECORDS }, (_, i) => ({ contractAddress: "0x00000000000000000000000000000000000c0000", assetId: String(i), currentOwner: "", attributes: [trait("a", i), trait("b", i)] }));
  const r = await c.ingestTokens({ records }, { headers: { "x-api-key": dst.ingestKey } });
  expect(r.accepted + r.duplicates).toBe(MAX_BATCH_RECORDS);
});

describe.each(["grpc", "connect"] as const)("StreamSales over %s (HTTP/2)", (protocol) => {
  it("commits each batch as it comes and answers their sum, records numbered across the stream", async () => {
    const transport = protocol === "grpc" ? transportFor("grpc", dst.server.baseUrl) : transportFor("connect-binary-get", dst.server.baseUrl);
    const c = createClient(IngestService, transport);
    const sales = fixtureRecords(src.f).sales!.slice(0, 6).map((s) => ({ ...s, timestamp: BigInt((s as { timestamp: number }).timestamp), block: BigInt((s as { block: number }).block) })) as unknown as Sale[];
    const fresh = { ...sales[0]!, hash: `0x${"f".repeat(63)}${protocol === "grpc" ? "1" : "2"}` } as Sale;
    async function* batches() {
      yield create(IngestSalesRequestSchema, { records: sales.slice(0, 3) });
      yield create(IngestSalesRequestSchema, { records: [...sales.slice(3), fresh, { ...fresh, hash: "bad" }], skipInvalid: true });
    }
    const answer = await c.streamSales(batches(), { headers: { "x-api-key": dst.ingestKey } });
    expect(answer.accepted).toBe(1);
    expect(answer.duplicates).toBe(6);
    expect(answer.rejected.map((r) => r.line)).toEqual([8]);
  });
});

it("a sales stream that lasts longer than the request timeout is not cut (it is a feed, held to the idle rules)", async () => {
  const quick = await startTestServer(dst.target, { ingestRateLimit: 0, timeouts: { headersMs: 500, requestMs: 500, keepAliveMs: 1000, idleMs: 5000, shutdownMs: 1000 } });
  try {
    const c = createClient(IngestService, transportFor("grpc", quick.baseUrl));
    const sales = fixtureRecords(src.f).sales!.slice(0, 3).map((s) => ({ ...s, timestamp: BigInt((s as { timestamp: number }).timestamp), block: BigInt((s as { block: number }).block) })) as unknown as Sale[];
    async function* slow() {
      for (const sale of sales) {
        yield create(IngestSalesRequestSchema, { records: [sale] });
        await new Promise((r) => setTimeout(r, 400));
      }
    }
    const answer = await c.streamSales(slow(), { headers: { "x-api-key": dst.ingestKey } });
    expect(answer.duplicates).toBe(3);
  } finally {
    await quick.close();
  }
});

