import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import type { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { type Clients, clientsFor, restGet, transportFor, useFixtureServer } from "../support/server.js";

// Every validation error of decisions.md, on REST and over gRPC: 400 /
// invalid_argument, the family's flag at 0, and a message naming the
// parameter and the bad value.

const t = useFixtureServer(buildFixture);
let rpc: Clients;

beforeAll(() => {
  rpc = clientsFor(transportFor("grpc", t.server.baseUrl));
});

type Query = Record<string, string | number | string[]>;
type RpcCall = (c: Clients, headers: Record<string, string>) => Promise<unknown>;

interface Case {
  name: string;
  path: string;
  query: Query;
  message: string | RegExp;
  /** The same request over RPC, where the protocol can express it. */
  rpc?: RpcCall;
}

const C = COLLECTION;
const ms = 1_700_000_000_000n;
const twentyOne = Array.from({ length: 21 }, (_, i) => `0x${String(i).padStart(40, "0")}`);

const listEndpoints: [string, string, (c: Clients, h: Record<string, string>, req: { contractAddress: string; limit?: number }) => Promise<unknown>][] = [
  ["appraisals", "/v1/asset/appraisals", (c, h, r) => c.asset.listAppraisals(r, { headers: h })],
  ["rarity", "/v1/asset/rarity", (c, h, r) => c.asset.listRarity(r, { headers: h })],
  ["sales", "/v1/asset/sales", (c, h, r) => c.asset.listSales(r, { headers: h })],
  ["listings", "/v1/asset/listings", (c, h, r) => c.asset.listListings(r, { headers: h })],
  ["influencers", "/v1/collection/influencers", (c, h, r) => c.collection.listInfluencers(r, { headers: h })],
  ["tweets", "/v1/collection/tweets", (c, h, r) => c.collection.listTweets(r, { headers: h })],
];

const cases: Case[] = [
  ...listEndpoints.flatMap(([name, path, call]): Case[] => [
    { name: `${name}: contractAddress missing`, path, query: {}, message: "contractAddress is required", rpc: (c, h) => call(c, h, { contractAddress: "" }) },
    {
      name: `${name}: contractAddress malformed`,
      path,
      query: { contractAddress: "0x123" },
      message: 'contractAddress must be 0x followed by 40 hex characters, got "0x123"',
      rpc: (c, h) => call(c, h, { contractAddress: "0x123" }),
    },
    { name: `${name}: limit 0`, path, query: { contractAddress: C, limit: 0 }, message: "limit must be between 1 and 50, got 0", rpc: (c, h) => call(c, h, { contractAddress: C, limit: 0 }) },
    { name: `${name}: limit 51`, path, query: { contractAddress: C, limit: 51 }, message: "limit must be between 1 and 50, got 51", rpc: (c, h) => call(c, h, { contractAddress: C, limit: 51 }) },
    { name: `${name}: limit -3`, path, query: { contractAddress: C, limit: -3 }, message: "limit must be between 1 and 50, got -3", rpc: (c, h) => call(c, h, { contractAddress: C, limit: -3 }) },
    { name: `${name}: limit not a number`, path, query: { contractAddress: C, limit: "ten" }, message: 'limit must be an integer, got "ten"' },
    { name: `${name}: limit given twice`, path, query: { contractAddress: C, limit: ["5", "6"] }, message: "limit must be given at most once" },
    { name: `${name}: unknown parameter`, path, query: { contractAddress: C, colour: "red" }, message: /^unknown query parameter "colour"; accepted: contractAddress, / },
    { name: `${name}: contractAddress given twice`, path, query: { contractAddress: [C, C] }, message: "contractAddress must be given at most once" },
  ]),
  ...(["appraisals", "rarity"] as const).flatMap((name): Case[] => {
    const path = `/v1/asset/${name}`;
    const call: RpcCall = (c, h) =>
      name === "rarity"
        ? c.asset.listRarity({ contractAddress: C, assetId: ["1", "007"] }, { headers: h })
        : c.asset.listAppraisals({ contractAddress: C, assetId: ["1", "007"] }, { headers: h });
    return [
      { name: `${name}: assetId with a leading zero`, path, query: { contractAddress: C, assetId: "1,007" }, message: 'assetId must be a decimal token id (no sign, no leading zeros, at most 78 digits), got "007"', rpc: call },
      { name: `${name}: assetId not a number`, path, query: { contractAddress: C, assetId: "ape" }, message: /assetId must be a decimal token id .*got "ape"/ },
      { name: `${name}: empty assetId in the list`, path, query: { contractAddress: C, assetId: "1,,2" }, message: /assetId must be a decimal token id .*got ""/ },
      { name: `${name}: assetId above uint256`, path, query: { contractAddress: C, assetId: "9".repeat(78) }, message: /assetId must be a decimal token id/ },
      { name: `${name}: 21 assetIds`, path, query: { contractAddress: C, assetId: Array.from({ length: 21 }, (_, i) => String(i)).join(",") }, message: "assetId accepts at most 20 ids, got 21" },
      { name: `${name}: bad cursor`, path, query: { contractAddress: C, cursor: "xyz" }, message: 'cursor is not a valid page token, got "xyz"' },
    ];
  }),
  ...(
    [
      ["sales", "/v1/asset/sales", (c: Clients, h: Record<string, string>, r: object) => c.asset.listSales({ contractAddress: C, ...r }, { headers: h })],
      ["stats", "/v1/collection/stats", (c: Clients, h: Record<string, string>, r: object) => c.collection.getCollectionStats({ contractAddress: C, ...r }, { headers: h })],
    ] as const
  ).flatMap(([name, path, call]): Case[] => [
    { name: `${name}: assetId malformed`, path, query: { contractAddress: C, assetId: "-1" }, message: /assetId must be a decimal token id .*got "-1"/, rpc: (c, h) => call(c, h, { assetId: "-1" }) },
    // Sales take a list (asset-id-lists.test.ts); stats one asset.
    ...(name === "stats" ? [{ name: `${name}: assetId list`, path, query: { contractAddress: C, assetId: "1,2" }, message: /assetId must be a decimal token id .*got "1,2"/ }] : []),
    { name: `${name}: since in milliseconds`, path, query: { contractAddress: C, since: String(ms) }, message: `since must be epoch seconds below 100000000000, got ${ms} (milliseconds?)`, rpc: (c, h) => call(c, h, { since: ms }) },
    { name: `${name}: until in milliseconds`, path, query: { contractAddress: C, until: String(ms) }, message: `until must be epoch seconds below 100000000000, got ${ms} (milliseconds?)`, rpc: (c, h) => call(c, h, { until: ms }) },
    { name: `${name}: negative since`, path, query: { contractAddress: C, since: -5 }, message: "since must be epoch seconds (not negative), got -5", rpc: (c, h) => call(c, h, { since: -5n }) },
    { name: `${name}: since after until`, path, query: { contractAddress: C, since: 20, until: 10 }, message: "since must not be greater than until, got since=20 until=10", rpc: (c, h) => call(c, h, { since: 20n, until: 10n }) },
    { name: `${name}: since not a number`, path, query: { contractAddress: C, since: "yesterday" }, message: 'since must be an integer, got "yesterday"' },
    { name: `${name}: until beyond int64`, path, query: { contractAddress: C, until: "99999999999999999999" }, message: /^until is out of range/ },
  ]),
  { name: "stats: unknown parameter", path: "/v1/collection/stats", query: { contractAddress: C, limit: 5 }, message: "unknown query parameter \"limit\"; accepted: contractAddress, assetId, since, until, chain, includeWash, currency" },
  { name: "sales: marketplace not an identifier", path: "/v1/asset/sales", query: { contractAddress: C, marketplace: "open-sea" }, message: 'marketplace must be a marketplace identifier matching [A-Z0-9_]{1,32} (any case), got "open-sea"', rpc: (c, h) => c.asset.listSales({ contractAddress: C, marketplace: "open-sea" }, { headers: h }) },
  // A well-formed name no record of the store names (issue 49, item 20): the names there are, not an empty list.
  { name: "sales: marketplace the store has no record of", path: "/v1/asset/sales", query: { contractAddress: C, marketplace: "nope" }, message: /^marketplace "NOPE" is not one this store has records of; known: .*OPENSEA/, rpc: (c, h) => c.asset.listSales({ contractAddress: C, marketplace: "NOPE" }, { headers: h }) },
  { name: "listings: marketplace the store has no record of", path: "/v1/asset/listings", query: { contractAddress: C, marketplace: "X2Y3" }, message: /^marketplace "X2Y3" is not one this store has records of; known: / },
  { name: "listings: marketplace too long", path: "/v1/asset/listings", query: { contractAddress: C, marketplace: "X".repeat(33) }, message: /^marketplace must be a marketplace identifier/ },
  { name: "listings: unknown status", path: "/v1/asset/listings", query: { contractAddress: C, status: "SOLD" }, message: 'status must be one of CREATED, FULFILLED, CANCELLED, EXPIRED, got "SOLD"' },
  { name: "listings: status out of the enum over RPC", path: "/v1/asset/listings", query: { contractAddress: C, status: "7" }, message: 'status must be one of CREATED, FULFILLED, CANCELLED, EXPIRED, got "7"', rpc: (c, h) => c.asset.listListings({ contractAddress: C, status: 7 as ListingStatus }, { headers: h }) },
  { name: "listings: assetId malformed", path: "/v1/asset/listings", query: { contractAddress: C, assetId: "0x1" }, message: /assetId must be a decimal token id .*got "0x1"/, rpc: (c, h) => c.asset.listListings({ contractAddress: C, assetId: "0x1" }, { headers: h }) },
  { name: "listings: bad cursor", path: "/v1/asset/listings", query: { contractAddress: C, cursor: "%%%" }, message: 'cursor is not a valid page token, got "%%%"' },
  { name: "sales: bad cursor", path: "/v1/asset/sales", query: { contractAddress: C, cursor: "abc" }, message: 'cursor is not a valid page token, got "abc"', rpc: (c, h) => c.asset.listSales({ contractAddress: C, cursor: "abc" }, { headers: h }) },
  { name: "scores: contractAddress missing", path: "/v1/collection/scores", query: {}, message: "contractAddress is required", rpc: (c, h) => c.collection.listScores({ contractAddress: [] }, { headers: h }) },
  { name: "scores: one address malformed", path: "/v1/collection/scores", query: { contractAddress: `${C},0xzz` }, message: 'contractAddress must be 0x followed by 40 hex characters, got "0xzz"', rpc: (c, h) => c.collection.listScores({ contractAddress: [C, "0xzz"] }, { headers: h }) },
  { name: "scores: 21 addresses", path: "/v1/collection/scores", query: { contractAddress: twentyOne.join(",") }, message: "contractAddress accepts at most 20 addresses, got 21", rpc: (c, h) => c.collection.listScores({ contractAddress: twentyOne }, { headers: h }) },
  { name: "scores: unknown parameter", path: "/v1/collection/scores", query: { contractAddress: C, limit: 3 }, message: 'unknown query parameter "limit"; accepted: contractAddress, chain' },
  // A long value is echoed cut to 100 characters, with its length (URLs past 8 KiB are 414: memory-bounds.test.ts).
  { name: "a 5,000-character address is echoed cut", path: "/v1/asset/sales", query: { contractAddress: "z".repeat(5_000) }, message: `contractAddress must be 0x followed by 40 hex characters, got "${"z".repeat(100)}"... (5000 characters)`, rpc: (c, h) => c.asset.listSales({ contractAddress: "z".repeat(5_000) }, { headers: h }) },
  { name: "a 5,000-character parameter name is echoed cut", path: "/v1/collection/scores", query: { contractAddress: C, ["p".repeat(5_000)]: 1 }, message: /^unknown query parameter "p{100}"\.\.\. \(5000 characters\); accepted: contractAddress, chain$/ },
];

const flagOf = (path: string) =>
  /appraisals|rarity|stats|scores/.test(path) ? "successful" : "success";

describe("parameters in any case (issue 49, item 20)", () => {
  it("marketplace=blur is BLUR and status=created is CREATED, as addresses are case-insensitive", async () => {
    for (const [path, lower, upper] of [
      ["/v1/asset/sales", { marketplace: "blur" }, { marketplace: "BLUR" }],
      ["/v1/asset/listings", { marketplace: "Opensea", status: "created" }, { marketplace: "OPENSEA", status: "CREATED" }],
      ["/v1/asset/listings", { status: "fulfilled" }, { status: "FULFILLED" }],
    ] as const) {
      const a = await restGet(t.server.baseUrl, path, { contractAddress: C, ...lower }, t.f.key);
      const b = await restGet(t.server.baseUrl, path, { contractAddress: C, ...upper }, t.f.key);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(a.body).toEqual(b.body);
    }
  });
});

describe("validation errors", () => {
  it.each(cases.map((c) => [c.name, c] as const))("REST: %s", async (_, c) => {
    const { status, body } = await restGet(t.server.baseUrl, c.path, c.query, t.f.key);
    expect(status).toBe(400);
    expect(Object.keys(body)).toEqual([flagOf(c.path), "code", "message"]);
    expect(body[flagOf(c.path)]).toBe(0);
    expect(body.code).toBe("invalid_argument");
    if (typeof c.message === "string") expect(body.message).toBe(c.message);
    else expect(body.message).toMatch(c.message);
  });

  it("gRPC: a 60 KB address (just under the message limit) gets an error message of bounded size", async () => {
    const err = (await rpc.asset.listSales({ contractAddress: "y".repeat(60_000) }, { headers: { "x-api-key": t.f.key } }).then(
      () => undefined,
      (e: unknown) => e,
    )) as ConnectError;
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage.length).toBeLessThan(300);
    expect(err.rawMessage).toMatch(/\.\.\. \(60000 characters\)$/);
  });

  const rpcCases = cases.filter((c) => c.rpc);
  it("covers every endpoint over RPC too", () => {
    expect(new Set(rpcCases.map((c) => c.path)).size).toBe(8);
  });

  it.each(rpcCases.map((c) => [c.name, c] as const))("gRPC: %s", async (_, c) => {
    const err = await c.rpc!(rpc, { "x-api-key": t.f.key }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    const e = err as ConnectError;
    expect(e.code).toBe(Code.InvalidArgument);
    if (typeof c.message === "string") expect(e.rawMessage).toBe(c.message.replace('got "7"', "got 7"));
    else expect(e.rawMessage).toMatch(c.message);
  });
});
