import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { byAssetId, byRarity } from "../support/oracle.js";
import { clientFor, restGet, transportFor, useFixtureServer } from "../support/server.js";

// assetId lists on appraisals and rarity (api.md 4.1, 4.2; decisions.md).

const t = useFixtureServer(buildFixture);
const get = (path: string, query: Record<string, string | number | string[] | undefined>) =>
  restGet(t.server.baseUrl, path, query, t.f.key);


describe.each([
  ["/v1/asset/appraisals", "nextPage"],
  ["/v1/asset/rarity", "nextPage"],
])("%s with assetId", (path) => {
  const ordered = () =>
    path.endsWith("rarity")
      ? byRarity(t.f.rarity).map((r) => r.assetId)
      : byAssetId(t.f.appraisals).map((a) => a.assetId);

  it("returns just those assets, in the endpoint's order, duplicates collapsed, unknown ids absent", async () => {
    const { status, body } = await get(path, { contractAddress: COLLECTION, assetId: "70,7,0,7,99999" });
    expect(status).toBe(200);
    const ids = (body.data as { assetId: string }[]).map((r) => r.assetId);
    expect(ids).toEqual(ordered().filter((id) => ["70", "7", "0"].includes(id)));
    expect(body.nextPage).toBe("");
  });

  it("accepts repeated keys as well as commas", async () => {
    const { body } = await get(path, { contractAddress: COLLECTION, assetId: ["14", "21,28"] });
    expect((body.data as { assetId: string }[]).map((r) => r.assetId).sort()).toEqual(["14", "21", "28"]);
  });

  it("ignores limit and cursor entirely, even invalid ones", async () => {
    const ids = Array.from({ length: 20 }, (_, i) => String(i * 7));
    const { status, body } = await get(path, {
      contractAddress: COLLECTION,
      assetId: ids.join(","),
      limit: 999,
      cursor: "not-a-token",
    });
    expect(status).toBe(200);
    expect((body.data as unknown[]).length).toBe(20);
  });

  it("accepts 20 distinct ids and rejects 21", async () => {
    const ids = Array.from({ length: 21 }, (_, i) => String(i));
    expect((await get(path, { contractAddress: COLLECTION, assetId: ids.slice(0, 20).join(",") })).status).toBe(200);
    const { status, body } = await get(path, { contractAddress: COLLECTION, assetId: ids.join(",") });
    expect(status).toBe(400);
    expect(body).toEqual({ successful: 0, code: "invalid_argument", message: "assetId accepts at most 20 ids, got 21" });
  });

  it("counts ids after collapsing duplicates", async () => {
    const ids = [...Array.from({ length: 20 }, (_, i) => String(i)), "0", "1", "2"];
    expect((await get(path, { contractAddress: COLLECTION, assetId: ids.join(",") })).status).toBe(200);
  });
});

it("behaves the same over Connect", async () => {
  const client = clientFor(AssetService, transportFor("connect", t.server.baseUrl));
  const res = await client.listRarity(
    { contractAddress: COLLECTION.toUpperCase().replace("0X", "0x"), assetId: ["7", "7", "0"], limit: 999, cursor: "junk" },
    { headers: { "x-api-key": t.f.key } },
  );
  expect(res.data.map((r) => r.assetId)).toEqual(byRarity(t.f.rarity).map((r) => r.assetId).filter((id) => id === "7" || id === "0"));
  expect(res.nextPage).toBe("");
});

// Sales take a list too (issue 49, item 20): "assetId must be given at most once" was the answer.
describe("/v1/asset/sales with several assetIds", () => {
  type Sale = { hash: string; assetId: string; timestamp: number; block: number };
  const all = async (query: Record<string, string | number | string[]>) => {
    const rows: Sale[] = [];
    for (let cursor = "", pages = 0; pages < 100; pages++) {
      const { status, body } = await get("/v1/asset/sales", { contractAddress: COLLECTION, limit: 3, ...query, ...(cursor === "" ? {} : { cursor }) });
      expect(status, JSON.stringify(body)).toBe(200);
      rows.push(...(body.data as Sale[]));
      cursor = body.cursor as string;
      if (cursor === "") break;
    }
    return rows;
  };
  const order = (a: Sale, b: Sale) => b.timestamp - a.timestamp || b.block - a.block || (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0) || (BigInt(a.assetId) < BigInt(b.assetId) ? -1 : 1);

  it("answers the sales of any of them, in the list's order, paged, commas or repeated keys", async () => {
    const ids = [...new Set(t.f.sales.map((s) => s.assetId))].slice(0, 3);
    expect(ids.length).toBe(3);
    const each = (await Promise.all(ids.map((id) => all({ assetId: id })))).flat().sort(order);
    expect(each.length).toBeGreaterThan(3);
    expect(await all({ assetId: ids.join(",") })).toEqual(each);
    expect(await all({ assetId: [ids[0]!, `${ids[1]},${ids[2]}`] })).toEqual(each);
  });

  it("refuses 21 ids with the family's flag", async () => {
    const { status, body } = await get("/v1/asset/sales", { contractAddress: COLLECTION, assetId: Array.from({ length: 21 }, (_, i) => String(i)).join(",") });
    expect(status).toBe(400);
    expect(body).toEqual({ success: 0, code: "invalid_argument", message: "assetId accepts at most 20 ids, got 21" });
  });
});
