import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { restGet, transportFor, useEmptyStoreServer } from "../support/server.js";

// A sale's payment token and fees (issue 53, docs/money.md), on either
// engine: named by symbol or by contract, stored and answered by symbol,
// through every read of a sale (the REST JSON kept per row, the binary
// encoded from the columns, a token's last sale, a sale taken back); the
// tokens whose amounts are wei of ETH count in the ETH figures as ETH does,
// and a sale in one whose amounts are not is listed in its unit and counted
// in no figure in wei (an order in one is refused by name). Listings and offers
// carry theirs as sales do, through a replay of an order's log and an order
// taken back whole.

const s = useEmptyStoreServer({ ingestRateLimit: 0 });

const C = "0x00000000000000000000000000000000000000d1";
const ALICE = "0x000000000000000000000000000000000000a11c";
const BOB = "0x0000000000000000000000000000000000000b0b";
const NOW = Math.floor(Date.now() / 1000) - 3600;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const WETH_CONTRACT = "0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2";

const sale = (n: number, price: string, extra: object = {}) => ({
  hash: hash(n), from: ALICE, to: BOB, contractAddress: C, assetId: String(n), timestamp: NOW + n, block: 100 + n,
  price, amountReceived: price, currency: "ETH", marketplace: "OPENSEA", ...extra,
});

async function post(kind: string, records: readonly object[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${s.server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": s.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const get = (path: string, query: Record<string, string>) => restGet(s.server.baseUrl, path, query, s.read);
type Money = { assetId: string; price: string; currency: string; marketplaceFee: string; royaltyFee: string };
const money = (x: Money) => [x.assetId, x.currency, x.marketplaceFee, x.royaltyFee];

describe("a sale's payment token and fees", () => {
  it("are taken by symbol or contract, answered by symbol on every read, and WETH and Blur's pool ETH count as ETH", async () => {
    const posted = await post("sales", [
      sale(1, "1000000000000000000", { currency: WETH_CONTRACT, amountReceived: "925000000000000000", marketplaceFee: "25000000000000000", royaltyFee: "50000000000000000" }),
      sale(2, "2000000000000000000", { currency: "blur_pool", marketplace: "BLUR", marketplaceFee: "0", royaltyFee: "10000000000000000" }),
      sale(3, "3000000000000000000"),
    ]);
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);

    const expected = [
      ["3", "ETH", "", ""],
      ["2", "BLUR_POOL", "0", "10000000000000000"],
      ["1", "WETH", "25000000000000000", "50000000000000000"],
    ];
    // The REST JSON: each sale's kept answer, its finality and wash fields put back before the fees.
    const rest = (await get("/v1/asset/sales", { contractAddress: C })).body.data as Money[];
    expect(rest.map(money)).toEqual(expected);
    expect(Object.keys(rest[0]!).slice(-6)).toEqual(["washFlags", "washScore", "marketplaceFee", "royaltyFee", "priceUsd", "quantity"]);
    // The binary pages are encoded from the columns.
    const asset = createClient(AssetService, transportFor("grpc", s.server.baseUrl));
    const rpc = await asset.listSales({ contractAddress: C }, { headers: { "x-api-key": s.read } });
    expect(rpc.data.map(money)).toEqual(expected);
    // A token's last sale.
    const tokens = (await get("/v1/asset/tokens", { contractAddress: C })).body.data as { assetId: string; lastSale: Money }[];
    expect(tokens.map((t) => money(t.lastSale)).sort()).toEqual([...expected].sort());

    // WETH and Blur's pool ETH are wei of ETH: the ETH figures add them as they add ETH.
    const stats = (await get("/v1/collection/stats", { contractAddress: C })).body.data as { totalNumSales: number; totalVolume: string; currency: string };
    expect(stats).toMatchObject({ totalNumSales: 3, totalVolume: "6000000000000000000", currency: "ETH" });

    // Taken back, a sale keeps them: the activity list reads it back with includeRemoved.
    expect((await post("sales", [sale(1, "1000000000000000000", { currency: "WETH", removed: true })])).status).toBe(200);
    const activity = (await get("/v1/collection/activity", { contractAddress: C, includeRemoved: "true" })).body.data as { removed: { sale: Money } | null }[];
    const removed = activity.flatMap((e) => (e.removed?.sale ? [e.removed.sale] : []));
    expect(removed.map(money)).toEqual([expected[2]]);
  });

  it("takes a sale in a token of another unit (USDC): answered in its unit, priced by its own points, in no figure in wei, with wash or not", async () => {
    const CX = "0x00000000000000000000000000000000000000d3";
    const at = (n: number, price: string, extra: object = {}) => ({ ...sale(n, price, extra), contractAddress: CX });
    // 2,500 USDC (6 decimals), by its contract, and 1 ETH.
    const posted = await post("sales", [at(11, "2500000000", { currency: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", amountReceived: "2437500000" }), at(12, "1000000000000000000")]);
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);
    expect((await post("prices", [{ currency: "USDC", minute: NOW - (NOW % 60), usd: "0.9998" }])).status).toBe(200);
    const listed = (await get("/v1/asset/sales", { contractAddress: CX })).body.data as (Money & { priceUsd: string; washFlags: string[]; washScore: number })[];
    expect(listed.map((x) => [x.assetId, x.currency, x.price, x.priceUsd, x.washFlags, x.washScore])).toEqual([
      ["12", "ETH", "1000000000000000000", "", [], 0],
      ["11", "USDC", "2500000000", "2499.50", [], 0],
    ]);
    // Every figure in wei holds the sale in ETH alone: stats with wash or not, the collections list with wash or not.
    for (const includeWash of ["false", "true"]) {
      const stats = (await get("/v1/collection/stats", { contractAddress: CX, includeWash })).body.data as { totalNumSales: number; totalVolume: string };
      expect(stats, includeWash).toMatchObject({ totalNumSales: 1, totalVolume: "1000000000000000000" });
      const list = (await get("/v1/collections", { query: CX.slice(-6), includeWash })).body.data as { sales30d: number; volume30d: string }[];
      expect(list.map((c) => [c.sales30d, c.volume30d]), includeWash).toEqual([[1, "1000000000000000000"]]);
    }
  });

  it("refuses a token the chain has not, and fees past the price, each by name", async () => {
    const refused = async (extra: object) => {
      const r = await post("sales", [sale(9, "1000", extra)]);
      expect(r.status).toBe(400);
      return JSON.stringify(r.body);
    };
    expect(await refused({ currency: "USDC", chain: "polygon" })).toMatch(/currency: must be one of polygon's payment tokens, ETH, WETH/);
    expect(await refused({ currency: "BLUR_POOL", chain: "base" })).toMatch(/currency: must be one of base's payment tokens, ETH, WETH/);
    expect(await refused({ marketplaceFee: "1001" })).toMatch(/marketplaceFee: must not exceed price \(1000\)/);
    expect(await refused({ marketplaceFee: "600", royaltyFee: "500" })).toMatch(/royaltyFee: marketplaceFee and royaltyFee together must not exceed price/);
    expect(await refused({ royaltyFee: 5 })).toMatch(/royaltyFee: must be a canonical unsigned decimal/);
    // Stats answer in wei of ETH or in dollars, nothing else.
    const stats = await get("/v1/collection/stats", { contractAddress: C, currency: "btc" });
    expect(stats.status).toBe(400);
    expect(JSON.stringify(stats.body)).toMatch(/currency must be one of eth, usd, got \\"btc\\"/);
  });
});

describe("an order's payment token", () => {
  const CO = "0x00000000000000000000000000000000000000d2";
  const listing = (id: string, price: string, block: number, extra: object = {}) => ({
    marketplaceId: id, marketplace: "OPENSEA", contractAddress: CO, assetId: id, createdAt: NOW, lastUpdatedAt: NOW + (block % 100),
    price, currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: hash(block) }), ...extra,
  });
  const offer = (id: string, price: string, block: number, extra: object = {}) => ({
    marketplaceId: id, marketplace: "OPENSEA", contractAddress: CO, assetId: "1", maker: ALICE, price, currency: "WETH",
    createdAt: NOW, lastUpdatedAt: NOW, status: "CREATED", block, ...(block === 0 ? {} : { blockHash: hash(block) }), ...extra,
  });
  type Order = { marketplaceId: string; price: string; currency: string };
  const told = (orders: Order[]) => orders.map((o) => [o.marketplaceId, o.price, o.currency]).sort();

  it("is taken by symbol or contract and answered on every read of listings and offers, through a replay and a removal", async () => {
    expect((await post("tokens", ["1", "2", "3"].map((assetId) => ({ contractAddress: CO, assetId, currentOwner: "", attributes: [] })))).status).toBe(200);
    expect((await post("listings", [
      listing("1", "10", 0, { currency: WETH_CONTRACT }),
      listing("2", "20", 0, { currency: "blur_pool", marketplace: "BLUR" }),
      listing("3", "30", 0),
    ])).status).toBe(200);
    expect((await post("offers", [offer("4", "5", 0), offer("5", "6", 0, { currency: "ETH", assetId: "2" })])).status).toBe(200);

    const listings = [["1", "10", "WETH"], ["2", "20", "BLUR_POOL"], ["3", "30", "ETH"]];
    const offers = [["4", "5", "WETH"], ["5", "6", "ETH"]];
    // The REST JSON (a listing's kept answer, an offer's columns) and the binary.
    expect(told((await get("/v1/asset/listings", { contractAddress: CO })).body.data as Order[])).toEqual(listings);
    expect(told((await get("/v1/asset/offers", { contractAddress: CO })).body.data as Order[])).toEqual(offers);
    const asset = createClient(AssetService, transportFor("grpc", s.server.baseUrl));
    const headers = { headers: { "x-api-key": s.read } };
    expect(told((await asset.listListings({ contractAddress: CO }, headers)).data)).toEqual(listings);
    expect(told((await asset.listOffers({ contractAddress: CO }, headers)).data)).toEqual(offers);
    // A token's cheapest listing.
    const tokens = (await get("/v1/asset/tokens", { contractAddress: CO })).body.data as { listing: Order | null }[];
    expect(told(tokens.flatMap((t) => (t.listing ? [t.listing] : [])))).toEqual(listings);
    const collection = createClient(CollectionService, transportFor("connect", s.server.baseUrl));
    const market = await collection.getCollectionFloor({ contractAddress: CO }, headers);
    // WETH and Blur's pool ETH are wei of ETH: the cheapest is the floor whatever it was paid in; the floor is an ETH figure.
    expect(market.data?.floor).toMatchObject({ marketplaceId: "1", price: "10", currency: "ETH" });

    // An order's log keeps each record's token: listing 1 repriced on-chain in ETH, that record taken back, it is its WETH record again.
    expect((await post("listings", [listing("1", "9", 6001, { currency: "ETH" })])).status).toBe(200);
    expect(told((await get("/v1/asset/listings", { contractAddress: CO, assetId: "1" })).body.data as Order[])).toEqual([["1", "9", "ETH"]]);
    expect((await post("listings", [listing("1", "9", 6001, { currency: "ETH", removed: true })])).body).toMatchObject({ accepted: 1 });
    expect(told((await get("/v1/asset/listings", { contractAddress: CO, assetId: "1" })).body.data as Order[])).toEqual([["1", "10", "WETH"]]);
    // An order taken back whole keeps it: the activity list reads it back with includeRemoved.
    expect((await post("offers", [offer("6", "7", 6002)])).status).toBe(200);
    expect((await post("offers", [offer("6", "7", 6002, { removed: true })])).body).toMatchObject({ accepted: 1 });
    const activity = (await get("/v1/collection/activity", { contractAddress: CO, types: "offer", includeRemoved: "true" })).body.data as
      { removed: { offer: Order | null } | null }[];
    expect(told(activity.flatMap((e) => (e.removed?.offer ? [e.removed.offer] : [])))).toEqual([["6", "7", "WETH"]]);
  });

  it("answers its price in US dollars at the point in force when read, with currency=usd, over REST and the RPC", async () => {
    const CU = "0x00000000000000000000000000000000000000d3";
    const ETH = 10n ** 18n;
    expect((await post("listings", [
      listing("31", String(3n * ETH / 2n), 0, { contractAddress: CU, currency: WETH_CONTRACT }),
      listing("32", String(2n * ETH), 0, { contractAddress: CU, currency: "BLUR_POOL", marketplace: "BLUR" }),
    ])).status).toBe(200);
    expect((await post("offers", [offer("33", String(ETH / 4n), 0, { contractAddress: CU })])).status).toBe(200);
    const asset = createClient(AssetService, transportFor("connect", s.server.baseUrl));
    const headers = { headers: { "x-api-key": s.read } };
    const read = async () => {
      const listings = told((await get("/v1/asset/listings", { contractAddress: CU, currency: "usd" })).body.data as Order[]);
      const offers = told((await get("/v1/asset/offers", { contractAddress: CU, currency: "USD" })).body.data as Order[]);
      // The RPC answers the same.
      expect(told((await asset.listListings({ contractAddress: CU, currency: "usd" }, headers)).data)).toEqual(listings);
      expect(told((await asset.listOffers({ contractAddress: CU, currency: "usd" }, headers)).data)).toEqual(offers);
      return [...listings, ...offers];
    };
    const minute = (t: number) => Math.floor(t / 60) * 60;
    const now = Math.floor(Date.now() / 1000);
    // No point yet, then only one older than a day and one after now: none is in force.
    expect(await read()).toEqual([["31", "", "USD"], ["32", "", "USD"], ["33", "", "USD"]]);
    expect((await post("prices", [{ currency: "ETH", minute: minute(now - 2 * 86_400), usd: "1000" }, { currency: "ETH", minute: minute(now + 3600), usd: "9999" }])).status).toBe(200);
    expect(await read()).toEqual([["31", "", "USD"], ["32", "", "USD"], ["33", "", "USD"]]);
    // The latest point at or before now prices every token that is wei of ETH: 1.5, 2 and 0.25 ETH at $2000.50.
    expect((await post("prices", [{ currency: "ETH", minute: minute(now - 7200), usd: "1990" }, { currency: "ETH", minute: minute(now - 3600), usd: "2000.5" }])).status).toBe(200);
    expect(await read()).toEqual([["31", "3000.75", "USD"], ["32", "4001.00", "USD"], ["33", "500.13", "USD"]]);
    // Without the parameter, the token's own unit, as before.
    expect(told((await get("/v1/asset/listings", { contractAddress: CU })).body.data as Order[])).toEqual([["31", String(3n * ETH / 2n), "WETH"], ["32", String(2n * ETH), "BLUR_POOL"]]);
    // Any other unit is refused by name, on every list.
    for (const path of ["/v1/asset/listings", "/v1/asset/offers", "/v1/asset/sales"]) {
      const r = await get(path, { contractAddress: CU, currency: "btc" });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body)).toMatch(/currency must be one of eth, usd, got \\"btc\\"/);
    }
  });

  it("refuses a token the chain has not, or one whose amounts are not wei of ETH, by name", async () => {
    const l = await post("listings", [listing("9", "1", 0, { currency: "USDC" })]);
    expect(l.status).toBe(400);
    expect(JSON.stringify(l.body)).toMatch(/currency: USDC is not taken for a listing or an offer: its amounts are not wei of ETH/);
    const o = await post("offers", [offer("9", "1", 0, { currency: "BLUR_POOL", chain: "base" })]);
    expect(o.status).toBe(400);
    expect(JSON.stringify(o.body)).toMatch(/currency: must be one of base's payment tokens, ETH, WETH/);
  });
});
