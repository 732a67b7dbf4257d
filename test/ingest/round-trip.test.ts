import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildDemo } from "../../src/demo/build.js";
import { importLines } from "../../src/ingest/importer.js";
import { SqliteRecordImport } from "../../src/store/sqlite/importer.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import { withStoreKeys } from "../../src/store/sqlite/key-admin.js";
import { keysFileOf, openKeys, openWritable } from "../../src/store/sqlite/database.js";
import { restGet, startTestServer, type TestServer } from "../support/server.js";
import { sqliteWritable } from "../../src/store/sqlite/writable.js";

// What one instance serves, another can import: every record the API serves
// for the demo store, imported into a fresh store, yields the same responses.

const dir = mkdtempSync(join(tmpdir(), "marketdata-roundtrip-"));
let source: TestServer;
let copy: TestServer;
let key: string;
let collections: string[];

type Query = Record<string, string | number | string[] | undefined>;

async function allPages(server: TestServer, path: string, query: Query, token: "nextPage" | "cursor") {
  const pages: Record<string, unknown>[] = [];
  let cursor: string | undefined;
  do {
    const { status, body } = await restGet(server.baseUrl, path, { ...query, limit: 50, cursor }, key);
    expect(status).toBe(200);
    pages.push(body);
    cursor = body[token] as string;
  } while (cursor !== "");
  return pages;
}

beforeAll(async () => {
  const sourcePath = join(dir, "source.sqlite");
  const copyPath = join(dir, "copy.sqlite");
  const db = openWritable(sourcePath);
  await buildDemo(sqliteWritable(db), 3, "small");
  key = withStoreKeys(sourcePath, (admin) => admin.create("t").key);
  collections = db.prepare("SELECT address FROM collections ORDER BY address").pluck().all() as string[];
  // Price points have no read endpoint (a sale answers its priceUsd from them): read from the file, imported as their kind.
  const points = db.prepare("SELECT currency, minute, usd FROM price_points ORDER BY currency, minute").all() as object[];
  db.close();
  source = await startTestServer(sourcePath);

  // Export through the API only (but the price points, above).
  const exported: Record<Kind, object[]> = {
    collections: [], tokens: [], appraisals: [], rarity: [], sales: [], listings: [], transfers: [], offers: [], influencers: [], tweets: [], scores: [], reorgs: [], finality: [], spam: [], flags: [],
    prices: points,
  };
  for (const contractAddress of collections) {
    const q = { contractAddress };
    for (const [path, kind, token] of [
      ["/v1/asset/appraisals", "appraisals", "nextPage"],
      ["/v1/asset/rarity", "rarity", "nextPage"],
      ["/v1/asset/sales", "sales", "cursor"],
      ["/v1/asset/listings", "listings", "cursor"],
    ] as const) {
      for (const page of await allPages(source, path, q, token)) exported[kind].push(...(page.data as object[]));
    }
    // Transfers from the activity feed: they move owners (rarity's currentOwner) and end listings.
    for (const page of await allPages(source, "/v1/collection/activity", { ...q, types: "transfer" }, "nextPage")) {
      exported.transfers.push(...(page.data as { transfer: object }[]).map((e) => e.transfer));
    }
    const influencers = await restGet(source.baseUrl, "/v1/collection/influencers", { ...q, limit: 50 }, key);
    exported.influencers.push(...(influencers.body.data as object[]).map((r) => ({ ...r, contractAddress })));
    const tweets = await restGet(source.baseUrl, "/v1/collection/tweets", { ...q, limit: 50 }, key);
    exported.tweets.push(...(tweets.body.data as object[]).map((r) => ({ ...r, contractAddress })));
    const scores = await restGet(source.baseUrl, "/v1/collection/scores", q, key);
    exported.scores.push(...(scores.body.data as object[]));
  }

  const target = openWritable(copyPath);
  for (const kind of Object.keys(exported) as Kind[]) {
    await importLines(new SqliteRecordImport(target), (async function* () {
      for (const r of exported[kind]) yield JSON.stringify(r);
    })(), { kind, skipInvalid: false });
  }
  target.close();
  // Keys are the operator's, not the API's: copied file to file.
  const keys = openKeys(copyPath);
  keys.exec(`ATTACH DATABASE '${keysFileOf(sourcePath)}' AS src`);
  keys.exec("INSERT INTO api_keys (name, key_hash, created_at) SELECT name, key_hash, created_at FROM src.api_keys");
  keys.exec("DETACH DATABASE src");
  keys.close();
  copy = await startTestServer(copyPath);
});

afterAll(async () => {
  await source?.close();
  await copy?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("round trip through NDJSON", () => {
  it("serves the same pages on every paged endpoint", async () => {
    for (const contractAddress of collections) {
      for (const [path, token, extra] of [
        ["/v1/asset/appraisals", "nextPage", {}],
        ["/v1/asset/rarity", "nextPage", {}],
        ["/v1/asset/sales", "cursor", {}],
        ["/v1/asset/sales", "cursor", { marketplace: "BLUR" }],
        ["/v1/asset/listings", "cursor", { status: "CANCELLED" }],
      ] as const) {
        const q = { contractAddress, ...extra };
        expect(await allPages(copy, path, q, token)).toEqual(await allPages(source, path, q, token));
      }
    }
  });

  it("serves the same stats, influencers, tweets and scores", async () => {
    for (const contractAddress of collections) {
      for (const [path, q] of [
        ["/v1/collection/stats", { contractAddress }],
        ["/v1/collection/stats", { contractAddress, since: 1_750_000_000, until: 1_770_000_000 }],
        ["/v1/collection/stats", { contractAddress, assetId: "3" }],
        ["/v1/collection/influencers", { contractAddress, limit: 50 }],
        ["/v1/collection/tweets", { contractAddress, limit: 50 }],
        ["/v1/collection/scores", { contractAddress: collections.join(",") }],
      ] as const) {
        const [a, b] = await Promise.all([restGet(source.baseUrl, path, q, key), restGet(copy.baseUrl, path, q, key)]);
        expect(b).toEqual(a);
      }
    }
  });
});
