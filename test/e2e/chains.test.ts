import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { IngestSalesRequestSchema, IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { ListingStatus } from "../../gen/marketdata/v1/resources_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { createMarketDataClient } from "@marketdata/client";
import { openSse } from "../../bench/sse-client.js";
import { CHAINS } from "../../src/domain/chains.js";
import { restGet, transportFor, useEmptyStoreServer } from "../support/server.js";

// Several chains in one store (docs/chains.md): a collection is (chain,
// contract address). The same address is fed on Ethereum and on Base with
// different records, by every way a record names its chain (its own
// `chain`, the REST batch's ?chain=, the RPC request's chain), and every
// read answers the chain asked for, Ethereum when none is named.

const s = useEmptyStoreServer({ ingestRateLimit: 0 });

const SAME = "0x00000000000000000000000000000000000000c1";
const ONLY_BASE = "0x00000000000000000000000000000000000000c2";
const ALICE = "0x000000000000000000000000000000000000a11c";
const BOB = "0x0000000000000000000000000000000000000b0b";
const NOW = Math.floor(Date.now() / 1000) - 3600;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

const sale = (n: number, price: string, extra: object = {}) => ({
  hash: hash(n), from: ALICE, to: BOB, contractAddress: SAME, assetId: String(n), timestamp: NOW + n, block: 100 + n,
  price, amountReceived: price, currency: "ETH", marketplace: "OPENSEA", ...extra,
});

async function post(kind: string, records: readonly object[], query = ""): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${s.server.baseUrl}/v1/ingest/${kind}${query}`, {
    method: "POST",
    headers: { "x-api-key": s.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

const get = (path: string, query: Record<string, string>) => restGet(s.server.baseUrl, path, query, s.read);

describe("several chains in one store", () => {
  it("takes a record's chain from the record, the REST batch or the RPC request, Ethereum when none names one", async () => {
    // Ethereum: two sales (no chain named anywhere), and a name.
    expect((await post("sales", [sale(1, "1000"), sale(2, "3000")])).status).toBe(200);
    expect((await post("collections", [{ contractAddress: SAME, name: "Apes" }])).status).toBe(200);
    // Base: one sale naming its chain, one by the batch's ?chain=, one by the RPC request's chain.
    expect((await post("sales", [sale(3, "5", { chain: "base" })])).status).toBe(200);
    expect((await post("sales", [sale(4, "7")], "?chain=base")).status).toBe(200);
    expect((await post("collections", [{ contractAddress: SAME, name: "Base Apes", chain: "base" }, { contractAddress: ONLY_BASE, name: "Only on Base", chain: "base" }])).status).toBe(200);
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const rpcSale = { ...sale(5, "11"), timestamp: BigInt(NOW + 5), block: 105n };
    const answer = await ingest.ingestSales(create(IngestSalesRequestSchema, { records: [rpcSale], chain: "base" }), { headers: { "x-api-key": s.ingest } });
    expect(answer.accepted).toBe(1);
    // The same sale on Ethereum is another record (another collection's).
    const again = await ingest.ingestSales(create(IngestSalesRequestSchema, { records: [rpcSale] }), { headers: { "x-api-key": s.ingest } });
    expect(again.accepted).toBe(1);

    const stats = async (query: Record<string, string>) => (await get("/v1/collection/stats", { contractAddress: SAME, ...query })).body.data as Record<string, unknown>;
    expect(await stats({})).toMatchObject({ contractAddress: SAME, totalNumSales: 3, totalVolume: "4011" });
    expect(await stats({ chain: "ethereum" })).toMatchObject({ totalNumSales: 3, totalVolume: "4011" });
    expect(await stats({ chain: "base" })).toMatchObject({ contractAddress: SAME, totalNumSales: 3, totalVolume: "23" });

    const sales = async (chain: string) => ((await get("/v1/asset/sales", { contractAddress: SAME, chain })).body.data as { price: string }[]).map((x) => x.price).sort();
    expect(await sales("base")).toEqual(["11", "5", "7"]);
    expect(await sales("")).toEqual(["1000", "11", "3000"]);
    // The answers' shapes are api.md's: no field names the chain.
    const one = ((await get("/v1/asset/sales", { contractAddress: SAME, chain: "base" })).body.data as object[])[0]!;
    expect(Object.keys(one)).not.toContain("chain");
  });

  it("lists each chain's collections apart, each naming its chain", async () => {
    const list = async (query: Record<string, string>) => (await get("/v1/collections", query)).body.data as { contractAddress: string; name: string; chain: string }[];
    expect((await list({})).map((c) => [c.contractAddress, c.name, c.chain])).toEqual([[SAME, "Apes", "ethereum"]]);
    expect((await list({ chain: "base" })).map((c) => [c.contractAddress, c.name, c.chain]).sort()).toEqual([
      [SAME, "Base Apes", "base"],
      [ONLY_BASE, "Only on Base", "base"],
    ]);
    expect(await list({ chain: "polygon" })).toEqual([]);
  });

  it("answers a wallet's tokens and a collection's holders on the chain asked", async () => {
    const tokens = async (chain: string) => ((await get("/v1/asset/tokens", { owner: BOB, chain })).body.data as { assetId: string }[]).map((t) => t.assetId).sort();
    expect(await tokens("")).toEqual(["1", "2", "5"]);
    expect(await tokens("base")).toEqual(["3", "4", "5"]);
    const holders = (await get("/v1/collection/holders", { contractAddress: SAME, chain: "base" })).body.data as { totalTokens: number };
    expect(holders.totalTokens).toBe(3);
  });

  it("refuses a chain it does not know, naming the ones it does, and says which chain lacks a collection", async () => {
    const bad = await get("/v1/collection/stats", { contractAddress: SAME, chain: "solana" });
    expect(bad.status).toBe(400);
    expect(String(bad.body.message)).toContain(`chain must be one of ${CHAINS.join(", ")}`);
    const missing = await get("/v1/collection/stats", { contractAddress: ONLY_BASE });
    expect(missing.status).toBe(404);
    expect(String(missing.body.message)).toBe(`collection ${ONLY_BASE} not found`);
    const elsewhere = await get("/v1/collection/stats", { contractAddress: SAME, chain: "arbitrum" });
    expect(elsewhere.status).toBe(404);
    expect(String(elsewhere.body.message)).toBe(`collection ${SAME} on arbitrum not found`);
    const refused = await post("sales", [sale(9, "1", { chain: "solana" })]);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("chain: must be one of");
    const wrongBatch = await post("sales", [sale(9, "1")], "?chain=solana");
    expect(wrongBatch.status).toBe(400);
    expect(String(wrongBatch.body.message)).toContain("chain must be one of");
  });

  it("binds a page's cursor to its chain", async () => {
    const first = await get("/v1/asset/sales", { contractAddress: SAME, chain: "base", limit: "1" });
    const cursor = String(first.body.cursor);
    expect(cursor).not.toBe("");
    expect((await get("/v1/asset/sales", { contractAddress: SAME, chain: "base", limit: "1", cursor })).status).toBe(200);
    const other = await get("/v1/asset/sales", { contractAddress: SAME, limit: "1", cursor });
    expect(other.status).toBe(400);
  });

  it("streams the chain asked for: a sale on another chain at the same address is not sent", async () => {
    const asset = createClient(AssetService, transportFor("connect", s.server.baseUrl));
    const abort = new AbortController();
    const stream = asset.watchSales({ contractAddress: SAME, chain: "base" }, { headers: { "x-api-key": s.read }, signal: abort.signal });
    const it = stream[Symbol.asyncIterator]();
    // The first message says where the stream stands.
    expect((await it.next()).value?.sale).toBeUndefined();
    expect((await post("sales", [sale(20, "20")])).status).toBe(200);
    expect((await post("sales", [sale(21, "21", { chain: "base" })])).status).toBe(200);
    const next = await it.next();
    expect(next.value?.sale?.price).toBe("21");
    abort.abort();
    await it.return?.().catch(() => undefined);
  });
});

describe("block hashes", () => {
  const BLOCK = `0x${"b1".repeat(32)}`;
  it("are taken on a sale and a transfer and answered on every read of them, \"\" for a record sent without one", async () => {
    expect((await post("sales", [sale(40, "40", { blockHash: BLOCK.toUpperCase().replace("0X", "0x") })])).status).toBe(200);
    const transfer = { hash: hash(41), logIndex: 3, from: BOB, to: ALICE, contractAddress: SAME, assetId: "40", timestamp: NOW + 41, block: 141, blockHash: BLOCK };
    expect((await post("transfers", [transfer])).status).toBe(200);
    const sales = (await get("/v1/asset/sales", { contractAddress: SAME, limit: "50" })).body.data as { price: string; blockHash: string }[];
    expect(sales.find((x) => x.price === "40")?.blockHash).toBe(BLOCK);
    expect(sales.find((x) => x.price === "1000")?.blockHash).toBe("");
    // The binary form is encoded from the columns: the same hash.
    const asset = createClient(AssetService, transportFor("connect-binary-get", s.server.baseUrl));
    const rpc = await asset.listSales({ contractAddress: SAME, limit: 50 }, { headers: { "x-api-key": s.read } });
    expect(rpc.data.find((x) => x.price === "40")?.blockHash).toBe(BLOCK);
    const activity = (await get("/v1/collection/activity", { contractAddress: SAME, types: "transfer" })).body.data as { transfer: { blockHash: string } }[];
    expect(activity[0]?.transfer.blockHash).toBe(BLOCK);
    // A token's latest sale answers it too.
    const token = ((await get("/v1/asset/tokens", { contractAddress: SAME, assetId: "40" })).body.data as { lastSale: { blockHash: string } | null }[])[0];
    expect(token?.lastSale?.blockHash).toBe(BLOCK);
  });

  it("are refused when not a block hash", async () => {
    const refused = await post("sales", [sale(42, "1", { blockHash: "0x12" })]);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('blockHash: must be 0x followed by 64 hex characters, or \\"\\" for none');
  });

  it("are taken with the block of a listing's and an offer's on-chain event and answered on every read, 0 and \"\" for an order made off-chain", async () => {
    const ORDERS = "0x00000000000000000000000000000000000000c3";
    const listing = (id: string, price: string, extra: object = {}) => ({
      marketplaceId: id, marketplace: "CRYPTOPUNKS", contractAddress: ORDERS, assetId: "7", createdAt: NOW, lastUpdatedAt: NOW,
      price, currency: "ETH", status: "CREATED", ...extra,
    });
    const offer = (id: string, price: string, extra: object = {}) => ({
      marketplaceId: id, marketplace: "CRYPTOPUNKS", contractAddress: ORDERS, assetId: "7", maker: ALICE, price, currency: "ETH",
      createdAt: NOW, lastUpdatedAt: NOW, status: "CREATED", ...extra,
    });
    const onChain = { block: 19_000_001, blockHash: BLOCK.toUpperCase().replace("0X", "0x") };
    // The token, minted to its lister before it was listed.
    const mint = { hash: hash(60), logIndex: 0, from: `0x${"0".repeat(40)}`, to: ALICE, contractAddress: ORDERS, assetId: "7", timestamp: NOW - 10, block: 50 };
    expect((await post("transfers", [mint])).status).toBe(200);
    expect((await post("listings", [listing("1", "5", onChain), listing("2", "9")])).status).toBe(200);
    expect((await post("offers", [offer("3", "4", onChain), offer("4", "2")])).status).toBe(200);
    const blocks = (rows: { marketplaceId: string; block: number | bigint; blockHash: string }[]) =>
      Object.fromEntries(rows.map((r) => [r.marketplaceId, [Number(r.block), r.blockHash]]));
    const expected = { 1: [19_000_001, BLOCK], 2: [0, ""] };

    // The listings' kept answers (JSON and binary), and the offers' columns.
    const listings = (await get("/v1/asset/listings", { contractAddress: ORDERS })).body.data as { marketplaceId: string; block: number; blockHash: string }[];
    expect(blocks(listings)).toEqual(expected);
    expect(Object.keys(listings[0]!).slice(-3)).toEqual(["status", "block", "blockHash"]);
    const asset = createClient(AssetService, transportFor("connect-binary-get", s.server.baseUrl));
    expect(blocks((await asset.listListings({ contractAddress: ORDERS }, { headers: { "x-api-key": s.read } })).data)).toEqual(expected);
    const offers = (await get("/v1/asset/offers", { contractAddress: ORDERS })).body.data as { marketplaceId: string; block: number; blockHash: string }[];
    expect(blocks(offers)).toEqual({ 3: [19_000_001, BLOCK], 4: [0, ""] });
    // The activity (the feeds' reads), and a token's cheapest listing.
    const activity = (await get("/v1/collection/activity", { contractAddress: ORDERS, types: "listing,offer" })).body.data as
      { listing: { marketplaceId: string; block: number; blockHash: string } | null; offer: { marketplaceId: string; block: number; blockHash: string } | null }[];
    expect(blocks(activity.map((e) => (e.listing ?? e.offer)!))).toEqual({ ...expected, 3: [19_000_001, BLOCK], 4: [0, ""] });
    const token = ((await get("/v1/asset/tokens", { contractAddress: ORDERS, assetId: "7" })).body.data as { listing: { block: number; blockHash: string } | null }[])[0];
    expect([token?.listing?.block, token?.listing?.blockHash]).toEqual([19_000_001, BLOCK]);

    // Over RPC, the Listing message's own fields.
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const rpcListing = { ...listing("5", "8"), createdAt: BigInt(NOW), lastUpdatedAt: BigInt(NOW), status: ListingStatus.CREATED, block: 19_000_002n, blockHash: BLOCK };
    expect((await ingest.ingestListings({ records: [rpcListing] }, { headers: { "x-api-key": s.ingest } })).accepted).toBe(1);
    const viaRpc = (await get("/v1/asset/listings", { contractAddress: ORDERS, marketplace: "CRYPTOPUNKS" })).body.data as { marketplaceId: string; block: number; blockHash: string }[];
    expect(blocks(viaRpc)[5]).toEqual([19_000_002, BLOCK]);

    // A later record of the order replaces its block with its own (an off-chain update: none).
    expect((await post("listings", [listing("1", "6", { lastUpdatedAt: NOW + 1 })])).status).toBe(200);
    const again = (await get("/v1/asset/listings", { contractAddress: ORDERS })).body.data as { marketplaceId: string; block: number; blockHash: string }[];
    expect(blocks(again)).toEqual({ 1: [0, ""], 2: [0, ""], 5: [19_000_002, BLOCK] });
  });

  it("refuses a listing's or an offer's block hash without its block", async () => {
    const refused = await post("listings", [{
      marketplaceId: "9", marketplace: "CRYPTOPUNKS", contractAddress: SAME, assetId: "7", createdAt: NOW, lastUpdatedAt: NOW,
      price: "1", currency: "ETH", status: "CREATED", blockHash: BLOCK,
    }]);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("a record with a blockHash names its block too");
  });
});

describe("a collection's chain over RPC", () => {
  it("is refused as invalid_argument when unknown", async () => {
    const asset = createClient(AssetService, transportFor("connect", s.server.baseUrl));
    const err = await asset.listSales({ contractAddress: SAME, chain: "Base" }, { headers: { "x-api-key": s.read } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe("reorganisations through the ingest API", () => {
  const C2 = "0x00000000000000000000000000000000000000c3";
  const at = (n: number, extra: object = {}) => ({ ...sale(100 + n, String(n)), contractAddress: C2, block: 1000 + n, ...extra });
  const stats = async () => ((await get("/v1/collection/stats", { contractAddress: C2 })).body.data as { totalNumSales: number; totalVolume: string });
  const owner = async (assetId: string) => ((await get("/v1/asset/tokens", { contractAddress: C2, assetId })).body.data as { owner: string }[])[0]?.owner;

  it("takes back a record sent with removed: true (REST) or in a removed batch (RPC), and a chain's blocks (POST /v1/ingest/reorgs, IngestReorgs)", async () => {
    expect((await post("sales", [at(1), at(2), at(3), at(4)])).status).toBe(200);
    expect(await stats()).toMatchObject({ totalNumSales: 4, totalVolume: "10" });
    // One sale taken back, as Ethereum's JSON-RPC marks a log of an orphaned block.
    const removed = await post("sales", [at(4, { removed: true })]);
    expect(removed.body).toMatchObject({ accepted: 1, duplicates: 0 });
    expect(await stats()).toMatchObject({ totalNumSales: 3, totalVolume: "6" });
    // Again: nothing left to take back.
    expect((await post("sales", [at(4, { removed: true })])).body).toMatchObject({ accepted: 0, duplicates: 1 });
    // The RPC's removed batch.
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const rpc3 = { ...at(3), timestamp: BigInt(at(3).timestamp), block: BigInt(at(3).block) };
    const answer = await ingest.ingestSales(create(IngestSalesRequestSchema, { records: [rpc3], removed: true }), { headers: { "x-api-key": s.ingest } });
    expect(answer.accepted).toBe(1);
    expect(await stats()).toMatchObject({ totalNumSales: 2, totalVolume: "3" });
    // The blocks from 1002 on taken back: sale 2 goes, and its token's owner with it (back to none).
    expect(await owner("102")).toBe(BOB);
    const reorg = await post("reorgs", [{ fromBlock: 1002 }]);
    expect(reorg.body).toMatchObject({ accepted: 1 });
    expect(await stats()).toMatchObject({ totalNumSales: 1, totalVolume: "1" });
    expect(await owner("102")).toBe("");
    // On another chain nothing of this one is taken back.
    expect((await post("reorgs", [{ fromBlock: 0 }], "?chain=base")).status).toBe(200);
    expect(await stats()).toMatchObject({ totalNumSales: 1 });
    // Through the RPC, by the blocks' hashes: a hash no record was sent with takes nothing back.
    const named = { records: [{ chain: "ethereum", fromBlock: 1000n, blockHashes: [`0x${"ee".repeat(32)}`] }] };
    const reorgs = await ingest.ingestReorgs(named, { headers: { "x-api-key": s.ingest } });
    expect([reorgs.accepted, reorgs.duplicates]).toEqual([1, 0]);
    expect(await stats()).toMatchObject({ totalNumSales: 1 });
    // A reorganisation sent again is a duplicate, as any record.
    const again = await ingest.ingestReorgs(named, { headers: { "x-api-key": s.ingest } });
    expect([again.accepted, again.duplicates]).toEqual([0, 1]);
    // A bad reorganisation is refused by its fields.
    const bad = await post("reorgs", [{ fromBlock: -1, blockHashes: ["0x12"] }]);
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toMatch(/fromBlock: must be/);
  });
});

describe("finality", () => {
  const C3 = "0x00000000000000000000000000000000000000c4";
  const at = (n: number, extra: object = {}) => ({ ...sale(200 + n, String(n)), contractAddress: C3, block: 2000 + n, chain: "polygon", ...extra });
  const count = async () => ((await get("/v1/collection/stats", { contractAddress: C3, chain: "polygon" })).body.data as { totalNumSales: number }).totalNumSales;

  it("refuses a removal at or below the chain's finalized block, naming it, and takes one above it; a finality only moves forward", async () => {
    expect((await post("sales", [at(1), at(2), at(3)])).status).toBe(200);
    expect((await post("finality", [{ block: 2002 }], "?chain=polygon")).body).toMatchObject({ accepted: 1 });
    // Backward: nothing changes.
    expect((await post("finality", [{ chain: "polygon", block: 1999 }])).body).toMatchObject({ accepted: 0, duplicates: 1 });
    const record = await post("sales", [at(2, { removed: true })]);
    expect(record.status).toBe(400);
    expect(String(record.body.message)).toMatch(/in block 2002 of polygon, at or below its finalized block 2002: a final block is not taken back/);
    const reorg = await post("reorgs", [{ chain: "polygon", fromBlock: 2001 }]);
    expect(reorg.status).toBe(400);
    expect(String(reorg.body.message)).toMatch(/the reorganisation from block 2001 is in block 2001 of polygon, at or below its finalized block 2002/);
    expect(await count()).toBe(3);
    // Above it: taken back as before; another chain's finality does not reach this one.
    expect((await post("finality", [{ chain: "base", block: 99_999 }])).status).toBe(200);
    expect((await post("reorgs", [{ chain: "polygon", fromBlock: 2003 }])).body).toMatchObject({ accepted: 1 });
    expect(await count()).toBe(2);
  });
});


describe("finality of records", () => {
  const C6 = "0x00000000000000000000000000000000000000c6";
  const at = (n: number, block: number) => ({ ...sale(600 + n, String(n)), contractAddress: C6, block, chain: "arbitrum" });
  const move = (n: number, block: number) => ({ hash: hash(650 + n), logIndex: 0, from: BOB, to: ALICE, contractAddress: C6, assetId: String(600 + n), timestamp: NOW + 650 + n, block, chain: "arbitrum" });
  const q = { contractAddress: C6, chain: "arbitrum" };

  it("answers each sale and transfer final at or below its chain's finalized block, pending above, on every read and form, and again once the finality moves", async () => {
    expect((await post("sales", [at(1, 5000), at(2, 5005)])).status).toBe(200);
    expect((await post("transfers", [move(1, 5001), move(2, 5006)])).status).toBe(200);
    const answers = async () => {
      const sales = (await get("/v1/asset/sales", q)).body.data as { price: string; finality: string }[];
      const asset = createClient(AssetService, transportFor("connect-binary-get", s.server.baseUrl));
      const binary = (await asset.listSales(q, { headers: { "x-api-key": s.read } })).data;
      const activity = (await get("/v1/collection/activity", { ...q, types: "transfer" })).body.data as { transfer: { block: number; finality: string } }[];
      const token = ((await get("/v1/asset/tokens", { ...q, assetId: "601" })).body.data as { lastSale: { finality: string } }[])[0];
      return {
        sales: sales.map((x) => [x.price, x.finality]).sort(),
        binary: binary.map((x) => [x.price, x.finality]).sort(),
        transfers: activity.map((x) => [x.transfer.block, x.transfer.finality]).sort(),
        lastSale: token?.lastSale.finality,
      };
    };
    // No finality on arbitrum yet: everything is pending.
    expect(await answers()).toEqual({ sales: [["1", "pending"], ["2", "pending"]], binary: [["1", "pending"], ["2", "pending"]], transfers: [[5001, "pending"], [5006, "pending"]], lastSale: "pending" });
    expect((await post("finality", [{ chain: "arbitrum", block: 5001 }])).body).toMatchObject({ accepted: 1 });
    // The answers remembered before are not served again: the finality moved.
    expect(await answers()).toEqual({ sales: [["1", "final"], ["2", "pending"]], binary: [["1", "final"], ["2", "pending"]], transfers: [[5001, "final"], [5006, "pending"]], lastSale: "final" });
    expect((await post("finality", [{ chain: "arbitrum", block: 5006 }])).status).toBe(200);
    expect((await answers()).transfers).toEqual([[5001, "final"], [5006, "final"]]);
    // The sales list's JSON keeps api.md's fields in their order, then blockHash, finality, the wash fields (docs/wash-trades.md),
    // the fees, the USD price (docs/money.md) and the quantity (decisions.md, "ERC-1155").
    const one = ((await get("/v1/asset/sales", q)).body.data as object[])[0]!;
    expect(Object.keys(one).slice(-8)).toEqual(["blockHash", "finality", "washFlags", "washScore", "marketplaceFee", "royaltyFee", "priceUsd", "quantity"]);
  });
  it("finality=final reads and streams settled sales and transfers only: a stream holds a sale until final and never sends one taken back meanwhile", async () => {
    // Finalized at 5006 (above): sales 1 (5000) and 2 (5005) are final.
    const finalSales = async () => ((await get("/v1/asset/sales", { ...q, finality: "final" })).body.data as { price: string; finality: string }[]).map((x) => [x.price, x.finality]);
    const asset = createClient(AssetService, transportFor("connect", s.server.baseUrl));
    const abort = new AbortController();
    const stream = asset.watchSales({ ...q, finality: "final" }, { headers: { "x-api-key": s.read }, signal: abort.signal })[Symbol.asyncIterator]();
    await stream.next();
    const collection = createClient(CollectionService, transportFor("connect", s.server.baseUrl));
    const events = collection.watchCollectionActivity({ ...q, types: ["sale"], finality: "final" }, { headers: { "x-api-key": s.read }, signal: abort.signal })[Symbol.asyncIterator]();
    await events.next();
    expect((await post("sales", [at(3, 5010), at(4, 5011)])).status).toBe(200);
    expect(await finalSales()).toEqual([["2", "final"], ["1", "final"]]);
    const activity = async () => ((await get("/v1/collection/activity", { ...q, finality: "final" })).body.data as { type: string }[]).map((e) => e.type);
    expect(await activity()).toEqual(["transfer", "transfer", "sale", "sale"]);
    // Sale 4 is taken back while held; then the chain is final past both.
    expect((await post("sales", [{ ...at(4, 5011), removed: true }])).body).toMatchObject({ accepted: 1 });
    expect((await post("finality", [{ chain: "arbitrum", block: 5011 }])).status).toBe(200);
    const sent = (await stream.next()).value!;
    expect([sent.sale?.price, sent.sale?.finality, sent.removed]).toEqual(["3", "final", undefined]);
    expect(await finalSales()).toEqual([["3", "final"], ["2", "final"], ["1", "final"]]);
    // The next sale is sent once final, nothing of sale 4 before it.
    expect((await post("sales", [at(5, 5012)])).status).toBe(200);
    expect((await post("finality", [{ chain: "arbitrum", block: 5012 }])).status).toBe(200);
    let next = (await stream.next()).value!;
    while (next.sale === undefined && next.removed === undefined) next = (await stream.next()).value!;
    expect(next.sale?.price).toBe("5");
    // The activity stream alike: sale 3 then sale 5, final, nothing of sale 4.
    const shown = [];
    while (shown.length < 2) {
      const e = (await events.next()).value!.event;
      if (e !== undefined) shown.push([e.type, e.sale?.price, e.sale?.finality]);
    }
    expect(shown).toEqual([["sale", "3", "final"], ["sale", "5", "final"]]);
    abort.abort();
    for (const it of [stream, events]) await it.return?.().catch(() => undefined);
    // On a chain without a finalized block nothing is final; a finality other than "final" is refused.
    expect((await get("/v1/asset/sales", { contractAddress: SAME, chain: "base", finality: "final" })).body.data).toEqual([]);
    const bad = await get("/v1/asset/sales", { ...q, finality: "pending" });
    expect([bad.status, bad.body.message]).toEqual([400, 'finality must be "final" or "" (every record), got "pending"']);
  });
});

describe("removals in the live feeds", () => {
  const C5 = "0x00000000000000000000000000000000000000c5";
  const at = (n: number, extra: object = {}) => ({ ...sale(300 + n, String(n)), contractAddress: C5, block: 3000 + n, ...extra });
  const transfer = { hash: hash(399), logIndex: 0, from: BOB, to: ALICE, contractAddress: C5, assetId: "303", timestamp: NOW + 399, block: 3003 };

  it("sends a record taken back as a typed removal at its position, naming the event it was sent under; a cursor from before the reorganisation resumes exactly", async () => {
    const asset = createClient(AssetService, transportFor("connect", s.server.baseUrl));
    const collection = createClient(CollectionService, transportFor("connect", s.server.baseUrl));
    const abort = new AbortController();
    const opts = { headers: { "x-api-key": s.read }, signal: abort.signal };
    expect((await post("sales", [at(1)])).status).toBe(200);
    const sales = asset.watchSales({ contractAddress: C5 }, opts)[Symbol.asyncIterator]();
    const activity = collection.watchCollectionActivity({ contractAddress: C5, types: ["sale", "transfer"] }, opts)[Symbol.asyncIterator]();
    // Where both streams stand: after sale 1, before anything below.
    const before = (await sales.next()).value!.resumeToken;
    await activity.next();
    expect((await post("sales", [at(2), at(3)])).status).toBe(200);
    expect((await post("transfers", [transfer])).status).toBe(200);
    expect([(await sales.next()).value!.sale?.price, (await sales.next()).value!.sale?.price]).toEqual(["2", "3"]);

    // Block 3003 on is orphaned (sale 3, the transfer); then sale 2 is sent again as removed.
    expect((await post("reorgs", [{ fromBlock: 3003 }])).body).toMatchObject({ accepted: 1 });
    expect((await post("sales", [at(2, { removed: true })])).body).toMatchObject({ accepted: 1 });
    const removals = [(await sales.next()).value!, (await sales.next()).value!];
    expect(removals.map((m) => [m.sale, m.removed?.type, m.removed?.sale?.price])).toEqual([[undefined, "sale", "3"], [undefined, "sale", "2"]]);
    for (const m of removals) expect(m.removed!.originalId).toBe(m.removed!.originalId.replace(/_\d+$/, `_${m.removed!.originalPosition}`));
    // Each names the position it was sent at: sale 2's before sale 3's.
    expect(removals[1]!.removed!.originalPosition).toBeLessThan(removals[0]!.removed!.originalPosition);
    expect(removals[0]!.removed!.sale).toMatchObject({ hash: hash(303), blockHash: "" });

    // The activity stream: sale 2, sale 3 and the transfer, then the three removals, each with its record.
    const events = [];
    for (let i = 0; i < 6; i++) events.push((await activity.next()).value!.event!);
    const removed = events.filter((e) => e.type === "removed").map((e) => [e.removed?.type, e.removed?.sale?.price ?? e.removed?.transfer?.hash]);
    expect(removed.sort()).toEqual([["sale", "2"], ["sale", "3"], ["transfer", hash(399)]]);
    expect(events.filter((e) => e.type !== "removed").map((e) => e.type).sort()).toEqual(["sale", "sale", "transfer"]);

    // Resumed from before the reorganisation: the two removals (the sales themselves are gone), then what comes next; nothing twice.
    const resumed = asset.watchSales({ contractAddress: C5, cursor: before }, opts)[Symbol.asyncIterator]();
    await resumed.next();
    const again = [(await resumed.next()).value!, (await resumed.next()).value!];
    expect(again.map((m) => [m.removed?.sale?.price, m.removed?.originalId])).toEqual(removals.map((m) => [m.removed?.sale?.price, m.removed?.originalId]));
    expect((await post("sales", [at(4)])).status).toBe(200);
    expect((await resumed.next()).value!.sale?.price).toBe("4");

    // The activity list reads them back with includeRemoved=true, at their records' times; paged one by one, each once.
    const list = async (query: Record<string, string>) => {
      const out: { type: string; removed: { type: string; originalId: string; sale: { price: string } | null; transfer: { hash: string } | null } | null }[] = [];
      let cursor = "";
      do {
        const page = (await get("/v1/collection/activity", { contractAddress: C5, limit: "1", ...query, ...(cursor === "" ? {} : { cursor }) })).body;
        out.push(...(page.data as typeof out));
        cursor = String(page.nextPage);
      } while (cursor !== "");
      return out;
    };
    expect((await list({})).map((e) => e.type)).toEqual(["sale", "sale"]);
    const withRemoved = await list({ includeRemoved: "true" });
    // Newest first: the transfer taken back (the latest time), sale 4, sales 3 and 2 taken back, sale 1.
    expect(withRemoved.map((e) => [e.type, e.removed?.type ?? null, e.removed?.sale?.price ?? e.removed?.transfer?.hash ?? null])).toEqual([
      ["removed", "transfer", hash(399)], ["sale", null, null], ["removed", "sale", "3"], ["removed", "sale", "2"], ["sale", null, null],
    ]);
    expect(withRemoved[2]!.removed!.originalId).toBe(removals[0]!.removed!.originalId);
    expect((await list({ includeRemoved: "true", types: "transfer" })).map((e) => e.removed?.type)).toEqual(["transfer"]);

    // Server-Sent Events: a removal is an event named "removed" (an EventSource's onmessage does not fire for it), its data the Removal.
    const url = new URL("/v1/asset/sales/stream", s.server.baseUrl);
    url.searchParams.set("contractAddress", C5);
    const sse = await openSse(url.toString(), { "x-api-key": s.read, "last-event-id": before });
    const first = await sse.next();
    expect([first?.event, JSON.parse(first!.data)]).toEqual(["removed", {
      type: "sale", originalId: removals[0]!.removed!.originalId, originalPosition: Number(removals[0]!.removed!.originalPosition),
      sale: expect.objectContaining({ price: "3" }), transfer: null, listing: null, offer: null,
    }]);
    expect([(await sse.next())?.event, (await sse.next())?.event]).toEqual(["removed", "message"]);
    sse.close();

    // @marketdata/client's watch() yields a removal as a record with `removed` set.
    const client = createMarketDataClient({ baseUrl: s.server.baseUrl, apiKey: s.read });
    const seen = [];
    for await (const e of client.watch("sales", { contractAddress: C5, cursor: before }, { signal: abort.signal })) {
      seen.push([e.record.price, e.removed?.originalId ?? null]);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([["3", removals[0]!.removed!.originalId], ["2", removals[1]!.removed!.originalId], ["4", null]]);
    abort.abort();
    for (const it of [sales, activity, resumed]) await it.return?.().catch(() => undefined);
  });
});

describe("orders taken back", () => {
  const C7 = "0x00000000000000000000000000000000000000c7";
  const listing = (id: string, price: string, block: number, extra: object = {}) => ({
    marketplaceId: id, marketplace: "CRYPTOPUNKS", contractAddress: C7, assetId: id, createdAt: NOW, lastUpdatedAt: NOW + block % 100,
    price, currency: "ETH", status: "CREATED", block, ...(block === 0 ? {} : { blockHash: hash(block) }), ...extra,
  });
  const offer = (id: string, price: string, block: number) => ({
    marketplaceId: id, marketplace: "CRYPTOPUNKS", contractAddress: C7, assetId: "1", maker: ALICE, price, currency: "ETH",
    createdAt: NOW, lastUpdatedAt: NOW, status: "CREATED", block, blockHash: hash(block),
  });
  const listings = async () => Object.fromEntries(((await get("/v1/asset/listings", { contractAddress: C7 })).body.data as { marketplaceId: string; price: string; block: number }[])
    .map((l) => [l.marketplaceId, [l.price, l.block]]));
  const floor = async () => ((await get("/v1/collection/floor", { contractAddress: C7 })).body.data as { floor: { price: string } | null }).floor?.price;

  it("gives an order back its record before the blocks taken back, deletes one none of whose records is left, and sends it as a removal", async () => {
    const collection = createClient(CollectionService, transportFor("connect", s.server.baseUrl));
    const abort = new AbortController();
    // Listing 71 made off-chain; then repriced on-chain in block 5001; listing 72 made on-chain in block 5002; an offer made in block 5002.
    expect((await post("listings", [listing("71", "30", 0)])).status).toBe(200);
    const activity = collection.watchCollectionActivity({ contractAddress: C7, types: ["listing", "offer"] }, { headers: { "x-api-key": s.read }, signal: abort.signal })[Symbol.asyncIterator]();
    await activity.next();
    expect((await post("listings", [listing("71", "20", 5001), listing("72", "10", 5002)])).status).toBe(200);
    expect((await post("offers", [offer("73", "4", 5002)])).status).toBe(200);
    expect(await listings()).toEqual({ 71: ["20", 5001], 72: ["10", 5002] });
    expect(await floor()).toBe("10");

    // Block 5002 is orphaned: listing 72 and the offer never were; listing 71 is as it was.
    expect((await post("reorgs", [{ fromBlock: 5002 }])).body).toMatchObject({ accepted: 1 });
    expect(await listings()).toEqual({ 71: ["20", 5001] });
    expect((await get("/v1/asset/offers", { contractAddress: C7 })).body.data).toEqual([]);
    expect(await floor()).toBe("20");
    // Listing 71's record of block 5001 sent again as removed: it is its off-chain record again.
    expect((await post("listings", [listing("71", "20", 5001, { removed: true })])).body).toMatchObject({ accepted: 1, duplicates: 0 });
    expect(await listings()).toEqual({ 71: ["30", 0] });
    expect(await floor()).toBe("30");
    // Nothing more of that block to take back; an off-chain record is not taken back (the order's next record replaces it).
    expect((await post("listings", [listing("71", "20", 5001, { removed: true })])).body).toMatchObject({ accepted: 0, duplicates: 1 });
    const offChain = await post("listings", [listing("71", "30", 0, { removed: true })]);
    expect(offChain.status).toBe(400);
    expect(JSON.stringify(offChain.body)).toContain("a removal names the block of the on-chain event it takes back");

    // Through the RPC's removed batch: an offer made in block 5003, taken back.
    const ingest = createClient(IngestService, transportFor("connect", s.server.baseUrl));
    const rpcOffer = { ...offer("74", "6", 5003), createdAt: BigInt(NOW), lastUpdatedAt: BigInt(NOW), block: 5003n, status: ListingStatus.CREATED };
    const headers = { headers: { "x-api-key": s.ingest } };
    expect((await ingest.ingestOffers({ records: [rpcOffer] }, headers)).accepted).toBe(1);
    expect((await ingest.ingestOffers({ records: [rpcOffer], removed: true }, headers)).accepted).toBe(1);
    expect((await get("/v1/asset/offers", { contractAddress: C7 })).body.data).toEqual([]);

    // The activity stream: each record as it came, listing 71 again as its record left, and a removal for each order gone whole.
    const events = [];
    for (let i = 0; i < 8; i++) events.push((await activity.next()).value!.event!);
    const told = events.map((e) => (e.type === "removed"
      ? ["removed", e.removed?.type, (e.removed?.listing ?? e.removed?.offer)?.marketplaceId]
      : [e.type, (e.listing ?? e.offer)?.marketplaceId, (e.listing ?? e.offer)?.price]));
    // Each kind in its commit order; between kinds, in the order their feeds are read (decisions.md, "Activity").
    const feedOf = (t: string[]) => (t[0] === "removed" ? t[1] : t[0]);
    expect(told.filter((t) => feedOf(t) === "listing")).toEqual([["listing", "71", "20"], ["listing", "72", "10"], ["removed", "listing", "72"], ["listing", "71", "30"]]);
    expect(told.filter((t) => feedOf(t) === "offer")).toEqual([["offer", "73", "4"], ["removed", "offer", "73"], ["offer", "74", "6"], ["removed", "offer", "74"]]);
    // An order gone whole is sent as it was answered (listing 72 was open).
    expect(events.find((e) => e.removed?.listing !== undefined)?.removed?.listing?.status).toBe(ListingStatus.CREATED);
    // The activity list reads the orders taken back with includeRemoved=true.
    const list = (await get("/v1/collection/activity", { contractAddress: C7, types: "listing,offer", includeRemoved: "true", limit: "50" })).body.data as
      { type: string; removed: { type: string; listing: { marketplaceId: string } | null; offer: { marketplaceId: string } | null } | null }[];
    expect(list.filter((e) => e.type === "removed").map((e) => [e.removed!.type, (e.removed!.listing ?? e.removed!.offer)!.marketplaceId]).sort())
      .toEqual([["listing", "72"], ["offer", "73"], ["offer", "74"]]);
    abort.abort();
    await activity.return?.().catch(() => undefined);
  });
});
