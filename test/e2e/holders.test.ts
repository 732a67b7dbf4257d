import { describe, expect, it } from "vitest";
import { ingestOk, restGet, useEmptyStoreServer } from "../support/server.js";

// A collection's holders through the served API (REST; against an oracle
// on both engines: test/store/ownership.property.test.ts): the top holders
// first, and the distribution of wallets holding 1, 2-5, 6-20 and 21 or
// more tokens, the same on every page and following a transfer.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0xd1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1";
const wallet = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
// Wallet 1 holds 25, wallet 2 holds 7, wallet 3 holds 3, wallets 4 to 8 one each: 40 tokens.
const OWNERS = [...Array(25).fill(1), ...Array(7).fill(2), ...Array(3).fill(3), 4, 5, 6, 7, 8] as number[];

async function holders(query: Record<string, string | number> = {}) {
  const r = await restGet(ctx.server.baseUrl, "/v1/collection/holders", { contractAddress: C, ...query }, ctx.read);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { nextPage: string; data: { totalTokens: number; numHolders: number; holders: { address: string; tokenCount: number }[]; distribution: unknown[] } };
}

describe("GET /v1/collection/holders", () => {
  it("answers the top holders and the distribution by holding size, on every page, following transfers", async () => {
    await ingestOk(ctx.server, ctx.ingest, "tokens", OWNERS.map((o, i) => ({ contractAddress: C, assetId: String(i), currentOwner: wallet(o), attributes: [] })));
    const first = await holders({ limit: 2 });
    expect(first.data).toMatchObject({ totalTokens: 40, numHolders: 8 });
    expect(first.data.holders).toEqual([{ address: wallet(1), tokenCount: 25 }, { address: wallet(2), tokenCount: 7 }]);
    const distribution = [
      { minTokens: 1, maxTokens: 1, wallets: 5, tokens: 5 },
      { minTokens: 2, maxTokens: 5, wallets: 1, tokens: 3 },
      { minTokens: 6, maxTokens: 20, wallets: 1, tokens: 7 },
      { minTokens: 21, maxTokens: 0, wallets: 1, tokens: 25 },
    ];
    expect(first.data.distribution).toEqual(distribution);
    expect((await holders({ limit: 2, cursor: first.nextPage })).data.distribution).toEqual(distribution);

    // Wallet 1 sends five tokens to wallet 3 (now 20 and 8): both in the 6-20 bucket.
    const T = Math.floor(Date.now() / 1000) - 60;
    await ingestOk(ctx.server, ctx.ingest, "transfers", [0, 1, 2, 3, 4].map((i) => ({
      hash: `0x${(i + 1).toString(16).padStart(64, "0")}`, logIndex: 0, from: wallet(1), to: wallet(3), contractAddress: C, assetId: String(i), timestamp: T, block: 100,
    })));
    expect((await holders()).data.distribution).toEqual([
      { minTokens: 1, maxTokens: 1, wallets: 5, tokens: 5 },
      { minTokens: 2, maxTokens: 5, wallets: 0, tokens: 0 },
      { minTokens: 6, maxTokens: 20, wallets: 3, tokens: 35 },
      { minTokens: 21, maxTokens: 0, wallets: 0, tokens: 0 },
    ]);
  });
});
