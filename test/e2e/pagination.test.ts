import { describe, expect, it } from "vitest";
import { buildFixture, COLLECTION, EMPTY_COLLECTION, type Fixture } from "../support/fixture.js";
import { byAssetId, byListingOrder, byRarity, bySaleOrder } from "../support/oracle.js";
import { restGet, useFixtureServer } from "../support/server.js";

const t = useFixtureServer(buildFixture);
type Query = Record<string, string | number | string[] | undefined>;
const get = (path: string, query: Query) => restGet(t.server.baseUrl, path, query, t.f.key);


interface Paged {
  path: string;
  tokenField: "nextPage" | "cursor";
}

const APPRAISALS: Paged = { path: "/v1/asset/appraisals", tokenField: "nextPage" };
const RARITY: Paged = { path: "/v1/asset/rarity", tokenField: "nextPage" };
const SALES: Paged = { path: "/v1/asset/sales", tokenField: "cursor" };
const LISTINGS: Paged = { path: "/v1/asset/listings", tokenField: "cursor" };

/** Follows tokens to the end; checks no page is empty and the last token is "". */
async function walk(p: Paged, query: Query, limit: number): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  let token: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const { status, body } = await get(p.path, { ...query, limit, cursor: token });
    expect(status, JSON.stringify(body)).toBe(200);
    const data = body.data as Record<string, unknown>[];
    const next = body[p.tokenField] as string;
    expect(typeof next).toBe("string");
    if (next !== "") expect(data.length).toBe(limit);
    rows.push(...data);
    if (next === "") return rows;
    token = next;
  }
  throw new Error("too many pages");
}

const saleKey = (s: { hash?: unknown; assetId?: unknown }) => `${s.hash}/${s.assetId}`;
const listingKey = (l: { marketplace?: unknown; marketplaceId?: unknown }) => `${l.marketplace}/${l.marketplaceId}`;

describe("keyset pagination", () => {
  it.each([1, 7, 45, 50])("appraisals: every row once, by assetId, with limit %i", async (limit) => {
    const rows = await walk(APPRAISALS, { contractAddress: COLLECTION }, limit);
    expect(rows.map((r) => r.assetId)).toEqual(byAssetId(t.f.appraisals).map((a) => a.assetId));
  });

  it.each([2, 9])("rarity: every row once, by rank then assetId, with limit %i", async (limit) => {
    const rows = await walk(RARITY, { contractAddress: COLLECTION }, limit);
    expect(rows.map((r) => r.assetId)).toEqual(byRarity(t.f.rarity).map((a) => a.assetId));
  });

  const saleFilters: [string, Query, (s: Fixture["sales"][number]) => boolean][] = [
    ["no filter", {}, () => true],
    ["assetId", { assetId: "13" }, (s) => s.assetId === "13"],
    ["marketplace", { marketplace: "BLUR" }, (s) => s.marketplace === "BLUR"],
    ["since/until", { since: 1_700_007_200, until: 1_700_090_000 }, (s) => s.timestamp >= 1_700_007_200 && s.timestamp <= 1_700_090_000],
    [
      "marketplace + since",
      { marketplace: "OPENSEA", since: 1_700_050_000 },
      (s) => s.marketplace === "OPENSEA" && s.timestamp >= 1_700_050_000,
    ],
  ];
  it.each(saleFilters)("sales (%s): every row once, in the documented order", async (_, query, keep) => {
    for (const limit of [1, 4, 50]) {
      const rows = await walk(SALES, { contractAddress: COLLECTION, ...query }, limit);
      expect(rows.map(saleKey)).toEqual(bySaleOrder(t.f.sales.filter(keep)).map((s) => saleKey(s)));
    }
  });

  const listingFilters: [string, Query, (l: Fixture["listings"][number]) => boolean][] = [
    ["no filter", {}, () => true],
    ["assetId", { assetId: "43" }, (l) => l.assetId === "43"],
    ["marketplace", { marketplace: "OPENSEA" }, (l) => l.marketplace === "OPENSEA"],
    ["status (short name)", { status: "CANCELLED" }, (l) => l.status === "CANCELLED"],
    ["status (full name)", { status: "LISTING_STATUS_EXPIRED" }, (l) => l.status === "EXPIRED"],
    ["marketplace + status", { marketplace: "BLUR", status: "CREATED" }, (l) => l.marketplace === "BLUR" && l.status === "CREATED"],
  ];
  it.each(listingFilters)("listings (%s): every row once, in the documented order", async (_, query, keep) => {
    for (const limit of [3, 50]) {
      const rows = await walk(LISTINGS, { contractAddress: COLLECTION, ...query }, limit);
      expect(rows.map(listingKey)).toEqual(byListingOrder(t.f.listings.filter(keep)).map((l) => listingKey(l)));
    }
  });

  it("an exact multiple of the limit ends with an empty token, never an empty page", async () => {
    const { body } = await get(APPRAISALS.path, { contractAddress: COLLECTION, limit: 45 });
    expect((body.data as unknown[]).length).toBe(45);
    expect(body.nextPage).toBe("");
  });

  it("the token is URL-safe", async () => {
    const { body } = await get(SALES.path, { contractAddress: COLLECTION, limit: 5 });
    expect(body.cursor).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("a known collection with nothing to list returns an empty page and an empty token", async () => {
    for (const p of [APPRAISALS, RARITY, SALES, LISTINGS]) {
      const { status, body } = await get(p.path, { contractAddress: EMPTY_COLLECTION });
      expect(status).toBe(200);
      expect(body.data).toEqual([]);
      expect(body[p.tokenField]).toBe("");
    }
  });

  it("the page size may change between pages", async () => {
    const first = await get(SALES.path, { contractAddress: COLLECTION, limit: 5 });
    const second = await get(SALES.path, { contractAddress: COLLECTION, limit: 20, cursor: first.body.cursor as string });
    const expected = bySaleOrder(t.f.sales).slice(5, 25).map(saleKey);
    expect((second.body.data as Record<string, unknown>[]).map(saleKey)).toEqual(expected);
  });

  describe("a token reused with another query is rejected", () => {
    const cases: [Paged, Query, Query][] = [
      [APPRAISALS, { contractAddress: COLLECTION }, { contractAddress: EMPTY_COLLECTION }],
      [RARITY, { contractAddress: COLLECTION }, { contractAddress: EMPTY_COLLECTION }],
      [SALES, { contractAddress: COLLECTION }, { contractAddress: COLLECTION, marketplace: "BLUR" }],
      [SALES, { contractAddress: COLLECTION, since: 1 }, { contractAddress: COLLECTION, since: 2 }],
      [SALES, { contractAddress: COLLECTION, assetId: "13" }, { contractAddress: COLLECTION, assetId: "26" }],
      [LISTINGS, { contractAddress: COLLECTION }, { contractAddress: COLLECTION, status: "CREATED" }],
      [LISTINGS, { contractAddress: COLLECTION }, { contractAddress: EMPTY_COLLECTION }],
    ];
    it.each(cases)("%s", async (p, original, other) => {
      const first = await get(p.path, { ...original, limit: 1 });
      const token = first.body[p.tokenField] as string;
      expect(token).not.toBe("");
      const reused = await get(p.path, { ...other, limit: 1, cursor: token });
      expect(reused.status).toBe(400);
      expect(reused.body).toMatchObject({ code: "invalid_argument" });
      expect(reused.body.message).toMatch(/cursor/);
    });
  });

  it.each(["garbage", "eyJxIjoiYSIsImsiOlsxXX0", "!!!", "e30"])("a token that does not decode (%s) is rejected", async (token) => {
    for (const p of [APPRAISALS, SALES, LISTINGS, RARITY]) {
      const { status, body } = await get(p.path, { contractAddress: COLLECTION, cursor: token });
      expect(status).toBe(400);
      expect(body.code).toBe("invalid_argument");
      expect(body.message).toContain("cursor");
    }
  });
});
