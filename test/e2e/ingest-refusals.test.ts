import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { ImportRejected } from "../../src/ingest/importer.js";
import { importRecords } from "../support/engine.js";
import { numberedSale } from "../support/sales.js";
import { restListAll, startTestServer, useEmptyStoreServer } from "../support/server.js";

// What the ingest API and import refuse, and how: each refusal a clear 400
// (REST) / invalid_argument (RPC) naming the record and field, or a counted
// rejection of import, with nothing of the batch written. On the test engine.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0x7171717171717171717171717171717171717171";

async function post(kind: string, body: string, server = ctx.server): Promise<{ status: number; body: Record<string, unknown>; bytes: number }> {
  const r = await fetch(`${server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
    body,
  });
  const text = await r.text();
  return { status: r.status, body: JSON.parse(text) as Record<string, unknown>, bytes: Buffer.byteLength(text) };
}

const now = () => Math.floor(Date.now() / 1000);
const DAY = 86_400;

const listing = (createdAt: number, lastUpdatedAt = createdAt) => ({
  marketplaceId: String(createdAt),
  marketplace: "OPENSEA",
  contractAddress: C,
  assetId: "1",
  createdAt,
  lastUpdatedAt,
  price: "1000",
  currency: "ETH",
  status: "CREATED",
});

describe("sale and listing times past the server's clock", () => {
  it("are refused beyond the allowed skew (a day by default), on REST and RPC; within it they are taken", async () => {
    const far = { ...numberedSale(1, C), timestamp: 99_999_999_999 };
    const tomorrowAndABit = { ...numberedSale(2, C), timestamp: now() + DAY + 3600 };
    const soon = { ...numberedSale(3, C), timestamp: now() + 3600 };
    for (const sale of [far, tomorrowAndABit]) {
      const r = await post("sales", `${JSON.stringify(soon)}\n${JSON.stringify(sale)}\n`);
      expect(r.status).toBe(400);
      expect(r.body.rejected).toEqual([{ line: 2, message: expect.stringMatching(/^timestamp: must not be later than this server's clock allows/) }]);
    }
    const rpc = createClient(IngestService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    await expect(
      rpc.ingestSales({ records: [{ ...far, timestamp: BigInt(far.timestamp), block: BigInt(far.block as number) } as never] }, { headers: { "x-api-key": ctx.ingest } }),
    ).rejects.toMatchObject({ code: 3, rawMessage: expect.stringMatching(/record 1: timestamp: must not be later/) });
    for (const l of [listing(now() + 2 * DAY), listing(now() - DAY, now() + 2 * DAY)]) {
      const r = await post("listings", JSON.stringify(l));
      expect(r.status).toBe(400);
      expect(String((r.body.rejected as { message: string }[])[0]!.message)).toMatch(/(createdAt|lastUpdatedAt): must not be later/);
    }
    expect(await restListAll(ctx.server.baseUrl, "/v1/asset/sales", { contractAddress: C }, ctx.read).catch(() => [])).toEqual([]);
    expect((await post("sales", JSON.stringify(soon))).status).toBe(200);
  });

  it("--max-clock-skew sets the bound: a server allowing a week takes a sale dated tomorrow and a bit", async () => {
    const server = await startTestServer(ctx.target, { rateLimit: 0, ingestRateLimit: 0, maxClockSkewSeconds: 7 * DAY });
    try {
      expect((await post("sales", JSON.stringify({ ...numberedSale(4, C), timestamp: now() + DAY + 3600 }), server)).status).toBe(200);
      expect((await post("sales", JSON.stringify({ ...numberedSale(5, C), timestamp: now() + 8 * DAY }), server)).status).toBe(400);
    } finally {
      await server.close();
    }
  });

  it("are counted rejections of import, which then writes nothing", async () => {
    const err = await importRecords(ctx.target, "sales", [numberedSale(6, C), { ...numberedSale(7, C), timestamp: now() + 3 * DAY }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImportRejected);
    expect((err as ImportRejected).stats).toMatchObject({ lines: 2, rejected: 1 });
  });
});
