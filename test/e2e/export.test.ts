import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildDemo } from "../../src/demo/build.js";
import { generateDemo } from "../../src/demo/generate.js";
import { EXPORT_KINDS } from "../../src/domain/export-kinds.js";
import { openWritableStore } from "../../src/store/open.js";
import { EXPORT_DONE_HEADER, EXPORT_POSITION_HEADER } from "../../src/transport/rest/export.js";
import { exportRecords } from "../../src/cli/export.js";
import { emptyStore, importRecords, withKeys } from "../support/engine.js";
import { ingestOk, startTestServer, type TestServer } from "../support/server.js";

// GET /v1/export/KIND on the test engine: a demo store's every collection
// exported kind by kind, in chunks smaller than a kind's records (each
// chunk from the position the one before answered), then imported into an
// empty store: the copy answers every read endpoint byte for byte as the
// source does (influencers, tweets and scores are not exported: their
// endpoints are left out, as are the price points, imported from the
// demo's data as a second instance would from its own source). Then what a
// chunk promises: a later chunk from the last position carries exactly what
// was written since; positions of another kind or collection, unknown
// kinds and collections, and a missing key are refused; the CLI's --url
// export writes the same lines as its --db one.

const END = 1_790_000_000;
const SEED = 3;
let source: { target: string; cleanup(): Promise<void> };
let copy: { target: string; cleanup(): Promise<void> };
let sourceServer: TestServer;
let copyServer: TestServer;
let key: string;
let copyKey: string;
let ingestKey: string;
let meteredKey: string;
let collections: string[];

type Query = Record<string, string | number>;

async function getText(server: TestServer, path: string, query: Query, apiKey = key) {
  const url = new URL(path, server.baseUrl);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  // A GET asked again once when a kept-alive connection was reset under it (the server closes idle ones after 5 s,
  // and a loaded machine can reuse one just as it goes): the read changes nothing.
  const res = await fetch(url, { headers: { "x-api-key": apiKey } }).catch(async (e: Error) => {
    if ((e.cause as { code?: string } | undefined)?.code !== "ECONNRESET") throw e;
    return fetch(url, { headers: { "x-api-key": apiKey } });
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Every record of a kind, chunk after chunk of `limit`, with the chunks' count. */
async function exported(kind: string, contractAddress: string, limit: number) {
  const lines: string[] = [];
  let position = "";
  let chunks = 0;
  for (;;) {
    const r = await getText(sourceServer, `/v1/export/${kind}`, { contractAddress, limit, ...(position === "" ? {} : { position }) });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/x-ndjson");
    chunks++;
    if (r.text !== "") lines.push(...r.text.slice(0, -1).split("\n"));
    position = r.headers.get(EXPORT_POSITION_HEADER)!;
    if (r.headers.get(EXPORT_DONE_HEADER) === "true") return { lines, chunks, position };
  }
}

/** Every page of a list, as the server wrote them. */
async function pages(server: TestServer, apiKey: string, path: string, query: Query): Promise<string[]> {
  const out: string[] = [];
  let cursor = "";
  do {
    const r = await getText(server, path, { ...query, limit: 50, ...(cursor === "" ? {} : { cursor }) }, apiKey);
    expect(r.status, `${path} ${r.text}`).toBe(200);
    out.push(r.text);
    const body = JSON.parse(r.text) as { nextPage?: string; cursor?: string };
    cursor = body.nextPage ?? body.cursor ?? "";
  } while (cursor !== "");
  return out;
}

/** What a caller reads of a collection, endpoint by endpoint. */
async function answers(server: TestServer, apiKey: string, contractAddress: string): Promise<Record<string, string[]>> {
  const q = { contractAddress };
  const single = async (path: string, query: Query) => {
    const r = await getText(server, path, query, apiKey);
    expect(r.status, `${path} ${r.text}`).toBe(200);
    return [r.text];
  };
  return {
    sales: await pages(server, apiKey, "/v1/asset/sales", q),
    listings: await pages(server, apiKey, "/v1/asset/listings", q),
    tokens: await pages(server, apiKey, "/v1/asset/tokens", q),
    tokensByPrice: await pages(server, apiKey, "/v1/asset/tokens", { ...q, sort: "price" }),
    offers: await pages(server, apiKey, "/v1/asset/offers", q),
    appraisals: await pages(server, apiKey, "/v1/asset/appraisals", q),
    rarity: await pages(server, apiKey, "/v1/asset/rarity", q),
    activity: await pages(server, apiKey, "/v1/collection/activity", q),
    holders: await pages(server, apiKey, "/v1/collection/holders", q),
    stats: await single("/v1/collection/stats", q),
    floor: await single("/v1/collection/floor", q),
    floorDaysAgo: await single("/v1/collection/floor", { ...q, at: END - 3 * 86_400 }),
    market: await single("/v1/collection/market", q),
    traits: await single("/v1/collection/traits", q),
    series: await pages(server, apiKey, "/v1/collection/stats/series", { ...q, interval: "day", since: END - 30 * 86_400, until: END }),
    candles: await pages(server, apiKey, "/v1/collection/candles", { ...q, interval: "1h", since: END - 3 * 86_400, until: END }),
  };
}

beforeAll(async () => {
  source = await emptyStore();
  copy = await emptyStore();
  const store = await openWritableStore(source.target, { migrateEmpty: true });
  try {
    await buildDemo(store, SEED, "small", undefined, END);
  } finally {
    await store.close();
  }
  await (await openWritableStore(copy.target, { migrateEmpty: true })).close();
  ({ key, ingestKey, meteredKey } = await withKeys(source.target, async (admin) => ({
    key: (await admin.create("exporter")).key,
    ingestKey: (await admin.create("indexer", { scope: "ingest" })).key,
    meteredKey: (await admin.create("metered", { rateLimit: 2 })).key,
  })));
  copyKey = await withKeys(copy.target, async (admin) => (await admin.create("reader")).key);
  sourceServer = await startTestServer(source.target, { ingestRateLimit: 0, rateLimit: 0 });
  const listed = JSON.parse((await getText(sourceServer, "/v1/collections", { limit: 50, includeSpam: "true" })).text) as { data: { contractAddress: string }[] };
  collections = listed.data.map((c) => c.contractAddress).sort();
}, 240_000);

afterAll(async () => {
  await sourceServer?.close();
  await copyServer?.close();
  await source?.cleanup();
  await copy?.cleanup();
});

describe("export", () => {
  it("seeds an empty store that answers every endpoint as the source does", async () => {
    expect(collections.length).toBe(3);
    // Collections first, in one batch in the order the source took them: a page token names the store's own collection id.
    const made = (generateDemo(SEED, "small", END).collections as { contractAddress: string }[]).map((c) => c.contractAddress.toLowerCase());
    const records = await Promise.all(made.map(async (c) => (await exported("collections", c, 10)).lines.map((l) => JSON.parse(l) as object)));
    await importRecords(copy.target, "collections", records.flat());
    for (const contractAddress of collections) {
      for (const kind of EXPORT_KINDS) {
        const { lines, chunks } = await exported(kind, contractAddress, 700);
        if (lines.length > 700) expect(chunks).toBeGreaterThan(1);
        await importRecords(copy.target, kind, lines.map((l) => JSON.parse(l) as object));
      }
    }
    await importRecords(copy.target, "prices", generateDemo(SEED, "small", END).prices);
    copyServer = await startTestServer(copy.target);
    for (const contractAddress of collections) {
      const [a, b] = [await answers(sourceServer, key, contractAddress), await answers(copyServer, copyKey, contractAddress)];
      for (const endpoint of Object.keys(a)) expect(b[endpoint], `${endpoint} of ${contractAddress}`).toEqual(a[endpoint]);
    }
    // windowsEnd is the hour each store last kept its summaries in (the source's when it was built, the copy's when it was
    // imported): a run across an hour differs there only, as every demo sale is older than the 30-day window.
    const list = async (server: TestServer, apiKey: string) =>
      (await pages(server, apiKey, "/v1/collections", { sort: "volumeAll", includeSpam: "true" })).map((p) => p.replace(/"windowsEnd":"?\d+"?/, '"windowsEnd":""'));
    expect(await list(copyServer, copyKey)).toEqual(await list(sourceServer, key));
  }, 300_000);

  it("goes on from a position with what was written since, and refuses what is not its own", async () => {
    const c = collections[0]!;
    const first = await exported("sales", c, 10_000);
    const sale = {
      hash: `0x${"ab".repeat(32)}`, from: `0x${"11".repeat(20)}`, to: `0x${"22".repeat(20)}`, contractAddress: c, assetId: "1",
      timestamp: END + 60, block: 30_000_000, price: "1000", amountReceived: "900", currency: "ETH", marketplace: "OPENSEA",
    };
    await ingestOk(sourceServer, ingestKey, "sales", [sale]);
    const later = await getText(sourceServer, "/v1/export/sales", { contractAddress: c, position: first.position });
    expect(later.status).toBe(200);
    expect(later.text.trim().split("\n").map((l) => (JSON.parse(l) as { hash: string }).hash)).toEqual([sale.hash]);
    expect(later.headers.get(EXPORT_DONE_HEADER)).toBe("true");
    // Nothing since: an empty chunk, at the same position.
    const none = await getText(sourceServer, "/v1/export/sales", { contractAddress: c, position: later.headers.get(EXPORT_POSITION_HEADER)! });
    expect([none.status, none.text, none.headers.get(EXPORT_POSITION_HEADER)]).toEqual([200, "", later.headers.get(EXPORT_POSITION_HEADER)]);

    // A collection of another chain: each line names it, as its import line must.
    const B = `0x${"b5".repeat(20)}`;
    await ingestOk(sourceServer, ingestKey, "sales", [{ ...sale, contractAddress: B, chain: "base" }]);
    const base = await getText(sourceServer, "/v1/export/sales", { contractAddress: B, chain: "base" });
    expect(JSON.parse(base.text.trim())).toMatchObject({ chain: "base", contractAddress: B, hash: sale.hash });

    const refused = async (path: string, query: Query, apiKey = key) => {
      const r = await getText(sourceServer, path, query, apiKey);
      return [r.status, (JSON.parse(r.text) as { code: string }).code];
    };
    expect(await refused("/v1/export/listings", { contractAddress: c, position: first.position })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/sales", { contractAddress: collections[1]!, position: first.position })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/scores", { contractAddress: c })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/sales", { contractAddress: "0xnope" })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/sales", { contractAddress: `0x${"99".repeat(20)}` })).toEqual([404, "not_found"]);
    expect(await refused("/v1/export/sales", { contractAddress: c, limit: 10_001 })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/sales", { contractAddress: c, sort: "x" })).toEqual([400, "invalid_argument"]);
    expect(await refused("/v1/export/sales", { contractAddress: c }, "")).toEqual([401, "unauthenticated"]);
  }, 60_000);

  it("is metered: each page of 1,000 records is a read of the key's limit, held back over it", async () => {
    const counted = await Promise.all(collections.map(async (c) => [c, (await exported("sales", c, 10_000)).lines.length] as const));
    const [largest, sales] = counted.reduce((a, b) => (b[1] > a[1] ? b : a));
    expect(sales).toBeGreaterThan(4_000);
    // 5 pages: 5 reads of a key allowed 2 a second span 3 windows, held back rather than refused (unmetered: ~0.1 s).
    const started = performance.now();
    const r = await getText(sourceServer, "/v1/export/sales", { contractAddress: largest, limit: 10_000 }, meteredKey);
    expect(r.status, r.text).toBe(200);
    expect(r.text.trim().split("\n")).toHaveLength(sales);
    expect(performance.now() - started).toBeGreaterThan(1_000);
  }, 60_000);

  it("writes the same lines from a server (--url) as from the store (--db)", async () => {
    const c = collections[1]!;
    const dir = mkdtempSync(join(tmpdir(), "marketdata-export-"));
    try {
      const viaDb = await exportRecords({ kind: "listings", contract: c, chain: "", position: "", out: join(dir, "db.ndjson"), db: source.target });
      const viaUrl = await exportRecords({ kind: "listings", contract: c, chain: "", position: "", out: join(dir, "url.ndjson"), db: "", url: sourceServer.baseUrl, key });
      expect(viaUrl).toEqual(viaDb);
      expect(readFileSync(join(dir, "url.ndjson"), "utf8")).toBe(readFileSync(join(dir, "db.ndjson"), "utf8"));
      expect(viaDb.records).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
