import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { clientFor, ingestOk, restGet, transportFor, useEmptyStoreServer } from "../support/server.js";

// An ERC-1155 collection through the served API (decisions.md, "ERC-1155";
// against an oracle on both engines: test/store/balances.property.test.ts):
// transfers with amounts, each token's owners with their balances
// (GET /v1/asset/owners), holders counted by units, the collections list's
// standard, a transfer's amount answered; what ingest writes shows at once
// (cached answers forgotten); a caller's mistakes are 400s.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0xe1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1";
const ZERO = `0x${"0".repeat(40)}`;
const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const T = Math.floor(Date.now() / 1000) - 3600;
const transfer = (n: number, assetId: string, from: string, to: string, amount?: string) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, logIndex: 0, from, to, contractAddress: C, assetId, timestamp: T + n, block: 100 + n,
  ...(amount === undefined ? {} : { amount }),
});

const sale = (n: number, assetId: string, price: string, quantity?: string) => ({
  hash: `0x${n.toString(16).padStart(64, "0")}`, from: wallet(1), to: wallet(2), contractAddress: C, assetId, timestamp: T + n, block: 100 + n,
  price, amountReceived: price, currency: "ETH", marketplace: "OPENSEA", ...(quantity === undefined ? {} : { quantity }),
});

const listing = (n: number, assetId: string, price: string, quantity?: string) => ({
  marketplaceId: String(n), marketplace: "OPENSEA", contractAddress: C, assetId, createdAt: T + n, lastUpdatedAt: T + n, price, currency: "ETH",
  status: "CREATED", ...(quantity === undefined ? {} : { quantity }),
});

async function get(path: string, query: Record<string, string | number>) {
  const r = await restGet(ctx.server.baseUrl, path, { contractAddress: C, ...query }, ctx.read);
  return r as { status: number; body: Record<string, unknown> & { data: unknown; nextPage: string; message?: string } };
}

describe("ERC-1155 over REST", () => {
  it("answers a token's owners by balance and holders by units, following each transfer", async () => {
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: C, name: "Editions", tokenStandard: "ERC1155" }]);
    // Token 7: 10 minted to wallet 1, 3 and 2 passed on to wallets 2 and 3; token 8: 1 (amount left out) minted to wallet 2.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [
      transfer(1, "7", ZERO, wallet(1), "10"), transfer(2, "7", wallet(1), wallet(2), "3"), transfer(3, "7", wallet(1), wallet(3), "2"), transfer(4, "8", ZERO, wallet(2)),
    ]);
    const first = await get("/v1/asset/owners", { assetId: "7", limit: 2 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.successful).toBe(1);
    expect(first.body.data).toEqual([{ address: wallet(1), balance: "5" }, { address: wallet(2), balance: "3" }]);
    const second = await get("/v1/asset/owners", { assetId: "7", limit: 2, cursor: first.body.nextPage });
    expect(second.body).toMatchObject({ nextPage: "", data: [{ address: wallet(3), balance: "2" }] });

    // Units held: wallet 1 five, wallet 2 four (3 + 1), wallet 3 two; eleven in all.
    const holders = await get("/v1/collection/holders", {});
    expect(holders.body.data).toMatchObject({
      totalTokens: 11, numHolders: 3,
      holders: [{ address: wallet(1), tokenCount: 5 }, { address: wallet(2), tokenCount: 4 }, { address: wallet(3), tokenCount: 2 }],
      distribution: [{ minTokens: 1, maxTokens: 1, wallets: 0, tokens: 0 }, { minTokens: 2, maxTokens: 5, wallets: 3, tokens: 11 }, expect.anything(), expect.anything()],
    });
    // The transfers list answers each amount; the tokens list no single owner.
    const activity = await get("/v1/collection/activity", { types: "transfer", limit: 10 });
    expect((activity.body.data as { transfer: { amount: string } }[]).map((e) => e.transfer.amount)).toEqual(["1", "2", "3", "10"]);
    const tokens = await get("/v1/asset/tokens", {});
    expect((tokens.body.data as { assetId: string; owner: string }[]).map((t) => [t.assetId, t.owner])).toEqual([["7", ""], ["8", ""]]);
    const list = await restGet(ctx.server.baseUrl, "/v1/collections", { query: C }, ctx.read);
    expect(list.body.data).toMatchObject([{ contractAddress: C, tokenStandard: "ERC1155", totalTokens: 11, numHolders: 3 }]);

    // Wallet 3 burns both of its units: it holds none, and the answers cached above are not served again.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [transfer(5, "7", wallet(3), ZERO, "2")]);
    expect((await get("/v1/asset/owners", { assetId: "7" })).body.data).toEqual([{ address: wallet(1), balance: "5" }, { address: wallet(2), balance: "3" }]);
    expect((await get("/v1/collection/holders", {})).body.data).toMatchObject({ totalTokens: 9, numHolders: 2 });
  });

  it("answers each sale's quantity, its price for them all, on every read of a sale and every protocol", async () => {
    // Sale 11: 4 units of token 7 for 0.8 ETH in all; sale 12: one of token 8, its quantity left out.
    await ingestOk(ctx.server, ctx.ingest, "sales", [sale(11, "7", "800000000000000000", "4"), sale(12, "8", "100000000000000000")]);
    const rest = await get("/v1/asset/sales", { limit: 10 });
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    const sales = rest.body.data as Record<string, unknown>[];
    expect(sales.map((s) => [s.assetId, s.price, s.quantity])).toEqual([["8", "100000000000000000", "1"], ["7", "800000000000000000", "4"]]);
    // The field comes last, where the JSON writer puts it (the read puts it in after the kept JSON).
    expect(Object.keys(sales[1]!).at(-1)).toBe("quantity");
    const binary = clientFor(AssetService, transportFor("connect-binary-get", ctx.server.baseUrl));
    const res = await binary.listSales({ contractAddress: C, assetId: "7" }, { headers: { "x-api-key": ctx.read } });
    expect(res.data.map((s) => s.quantity)).toEqual(["4"]);
    const activity = await get("/v1/collection/activity", { types: "sale", limit: 10 });
    expect((activity.body.data as { sale: { quantity: string } }[]).map((e) => e.sale.quantity)).toEqual(["1", "4"]);
    const tokens = await get("/v1/asset/tokens", { assetId: "7" });
    expect((tokens.body.data as { lastSale: { quantity: string } }[])[0]!.lastSale.quantity).toBe("4");
    // Sent again with another quantity: the answer follows.
    await ingestOk(ctx.server, ctx.ingest, "sales", [sale(11, "7", "800000000000000000", "5")]);
    expect(((await get("/v1/asset/sales", { assetId: "7" })).body.data as { quantity: string }[]).map((s) => s.quantity)).toEqual(["5"]);
  });

  it("answers each listing's quantity, its price each unit's, on every read of a listing and every protocol; the floor is the cheapest unit", async () => {
    // Listing 21: 6 units of token 7 at 0.2 ETH each; listing 22: one of token 8 at 0.3 ETH, its quantity left out.
    await ingestOk(ctx.server, ctx.ingest, "listings", [listing(21, "7", "200000000000000000", "6"), listing(22, "8", "300000000000000000")]);
    const rest = await get("/v1/asset/listings", { limit: 10 });
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    const listings = rest.body.data as Record<string, unknown>[];
    expect(listings.map((l) => [l.marketplaceId, l.price, l.quantity])).toEqual([["22", "300000000000000000", "1"], ["21", "200000000000000000", "6"]]);
    // Where the JSON writer puts it: after expiresAt, before status.
    const keys = Object.keys(listings[1]!);
    expect(keys.slice(keys.indexOf("expiresAt"), keys.indexOf("status") + 1)).toEqual(["expiresAt", "quantity", "status"]);
    const binary = clientFor(AssetService, transportFor("connect-binary-get", ctx.server.baseUrl));
    const res = await binary.listListings({ contractAddress: C, assetId: "7" }, { headers: { "x-api-key": ctx.read } });
    expect(res.data.map((l) => l.quantity)).toEqual(["6"]);
    const activity = await get("/v1/collection/activity", { types: "listing", limit: 10 });
    expect((activity.body.data as { listing: { quantity: string } }[]).map((e) => e.listing.quantity)).toEqual(["1", "6"]);
    const tokens = await get("/v1/asset/tokens", { assetId: "7" });
    expect((tokens.body.data as { listing: { quantity: string } }[])[0]!.listing.quantity).toBe("6");
    const floor = await get("/v1/collection/floor", {});
    expect(floor.body.data).toMatchObject({ floor: { price: "200000000000000000", marketplaceId: "21" } });
    // Sent again with another quantity: the answer follows.
    await ingestOk(ctx.server, ctx.ingest, "listings", [{ ...listing(21, "7", "200000000000000000", "4"), lastUpdatedAt: T + 30 }]);
    expect(((await get("/v1/asset/listings", { assetId: "7" })).body.data as { quantity: string }[]).map((l) => l.quantity)).toEqual(["4"]);
  });

  it("judges an ERC-1155 listing by its maker's balance, and a collection's listings again when its record says ERC1155 after them", async () => {
    const E = "0xe2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2";
    const at = (q: Record<string, string | number>) => restGet(ctx.server.baseUrl, "/v1/asset/listings", { contractAddress: E, ...q }, ctx.read);
    const answer = async () => ((await at({})).body.data as { status: string; lastUpdatedAt: number }[]).map((l) => [l.status, l.lastUpdatedAt]);
    const floor = async () => (await restGet(ctx.server.baseUrl, "/v1/collection/floor", { contractAddress: E }, ctx.read)).body.data as { floor: unknown };
    const units = (n: number, from: string, to: string, amount: string) => ({ ...transfer(n, "1", from, to, amount), contractAddress: E });
    // Token 1: 5 units minted to wallet 1, then 3 to wallet 2; wallet 1 lists 2 of them; wallet 2 passes one to wallet 3.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [units(31, ZERO, wallet(1), "5"), units(32, ZERO, wallet(2), "3")]);
    await ingestOk(ctx.server, ctx.ingest, "listings", [{ ...listing(41, "1", "100", "2"), contractAddress: E, maker: wallet(1), createdAt: T + 33, lastUpdatedAt: T + 33 }]);
    await ingestOk(ctx.server, ctx.ingest, "transfers", [units(34, wallet(2), wallet(3), "1")]);
    // No record says the standard yet: ERC-721's rule, by which wallet 2 (the latest recipient) owned the token at the listing's creation.
    expect(await answer()).toEqual([["CANCELLED", T + 33]]);
    expect((await floor()).floor).toBeNull();
    // Told ERC-1155: wallet 1 holds 5 units, 2 listed, and wallet 2's transfer moves none of them.
    await ingestOk(ctx.server, ctx.ingest, "collections", [{ contractAddress: E, name: "More editions", tokenStandard: "ERC1155" }]);
    expect(await answer()).toEqual([["CREATED", T + 33]]);
    expect((await floor()).floor).toMatchObject({ marketplaceId: "41", price: "100" });
    // Wallet 1 sends 4 on: 1 left, below the 2 listed.
    await ingestOk(ctx.server, ctx.ingest, "transfers", [units(35, wallet(1), wallet(3), "4")]);
    expect(await answer()).toEqual([["CANCELLED", T + 35]]);
    expect((await floor()).floor).toBeNull();
  });

  it.each([
    [{ assetId: "" }, /assetId must be a decimal token id/],
    [{ assetId: "07" }, /assetId must be a decimal token id/],
    [{ assetId: "7", limit: 51 }, /limit/],
    [{ assetId: "7", cursor: "nonsense" }, /cursor/],
  ])("refuses %j with a 400 that says why", async (query, message) => {
    const r = await get("/v1/asset/owners", query);
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(message);
  });

  it.each([
    ["transfers", "amount", ["0", "-1", "1.5", "01", "9007199254740992", 3], (v: unknown) => transfer(9, "7", ZERO, wallet(4), v as string)],
    ["sales", "quantity", ["0", "-1", "2.5", "007", "9007199254740992", 3], (v: unknown) => sale(13, "7", "1000", v as string)],
  ] as const)("refuses a %s %s that is not a count of units, naming the line and the field", async (kind, field, values, record) => {
    for (const value of values) {
      const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/${kind}`, {
        method: "POST",
        headers: { "content-type": "application/x-ndjson", "x-api-key": ctx.ingest },
        body: `${JSON.stringify(record(value))}\n`,
      });
      const body = (await r.json()) as { rejected?: { line: number; message: string }[] };
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(body.rejected).toEqual([{ line: 1, message: expect.stringMatching(new RegExp(`^${field}: must be a canonical decimal string from 1 to 9007199254740991`)) }]);
    }
  });
});
