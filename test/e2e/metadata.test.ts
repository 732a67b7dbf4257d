import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { restGet, useEmptyStoreServer } from "../support/server.js";

// Token and collection metadata (docs/data.md, "Metadata"), on the test
// engine (the e2e suite runs again on PostgreSQL): a token record takes
// OpenSea metadata (name, description, image, animation_url, external_url,
// attributes with display_type) over REST lines and the RPC alike, and the
// tokens list answers it on REST and Connect; a collection record takes its
// description, image and links, which the collections list answers; an
// update is counted as one and replaces the record whole; a score's name
// leaves the metadata as it is; what is not a metadata value is refused by
// field, with nothing written.

const ctx = useEmptyStoreServer({ ingestRateLimit: 0, rateLimit: 0 });
const C = "0x4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d";
const C2 = "0x4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e4e";
const OWNER = `0x${"a".repeat(40)}`;
const SVG = `data:image/svg+xml;base64,${Buffer.from("<svg xmlns='http://www.w3.org/2000/svg'/>").toString("base64")}`;

const ape = {
  contractAddress: C,
  assetId: "7",
  currentOwner: OWNER,
  name: "Ape #7",
  description: "A **bored** ape.\n\nSecond paragraph.",
  image: "ipfs://QmeSjSinHpPnmXmspMjwiXyN6zS4E9zccariGR3jxcaWtq/7",
  animation_url: "ar://abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  external_url: "https://example.com/apes/7",
  attributes: [
    { trait_type: "Hat", value: "Beanie" },
    { trait_type: "Level", value: 5, display_type: "number" },
    { trait_type: "Stamina", value: 1.4, display_type: "boost_percentage" },
    { trait_type: "Birthday", value: 1546360800, display_type: "date" },
  ],
};
const onChain = { contractAddress: C, assetId: "8", name: "On-chain #8", image: SVG, attributes: [] };
const collection = {
  contractAddress: C,
  name: "Metadata Apes",
  description: "Ten thousand apes.",
  image: "https://example.com/apes.png",
  externalUrl: "https://example.com",
  twitter: "https://x.com/example",
  discord: "https://discord.gg/example",
};

async function post(kind: string, records: readonly object[]): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${ctx.server.baseUrl}/v1/ingest/${kind}`, {
    method: "POST",
    headers: { "x-api-key": ctx.ingest, "content-type": "application/x-ndjson" },
    body: records.map((x) => JSON.stringify(x)).join("\n") + "\n",
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

async function tokenJson(contractAddress: string, assetId: string): Promise<Record<string, unknown>> {
  const r = await restGet(ctx.server.baseUrl, "/v1/asset/tokens", { contractAddress, assetId }, ctx.read);
  expect(r.status).toBe(200);
  return (r.body.data as Record<string, unknown>[])[0]!;
}

async function listed(address: string): Promise<Record<string, unknown> | undefined> {
  const r = await restGet(ctx.server.baseUrl, "/v1/collections", { query: address, limit: 50 }, ctx.read);
  expect(r.status).toBe(200);
  return (r.body.data as Record<string, unknown>[]).find((c) => c.contractAddress === address);
}

const headers = () => ({ "x-api-key": ctx.ingest });

describe("token metadata", () => {
  it("is taken over REST and answered with display types, on REST and Connect", async () => {
    const written = await post("tokens", [ape, onChain]);
    expect(written.status, JSON.stringify(written.body)).toBe(200);
    expect(written.body).toMatchObject({ accepted: 2 });
    const t = await tokenJson(C, "7");
    expect(t).toMatchObject({
      name: ape.name, description: ape.description, image: ape.image, animationUrl: ape.animation_url, externalUrl: ape.external_url,
      attributes: [
        { traitType: "Hat", value: "Beanie", displayType: "" },
        { traitType: "Level", value: "5", displayType: "number" },
        { traitType: "Stamina", value: "1.4", displayType: "boost_percentage" },
        { traitType: "Birthday", value: "1546360800", displayType: "date" },
      ],
    });
    expect(await tokenJson(C, "8")).toMatchObject({ name: "On-chain #8", image: SVG, description: "", animationUrl: "", externalUrl: "" });
    const rpc = createClient(AssetService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    const page = await rpc.listTokens({ contractAddress: C, assetId: "7" }, { headers: { "x-api-key": ctx.read } });
    expect(page.data[0]).toMatchObject({ name: ape.name, image: ape.image, animationUrl: ape.animation_url, externalUrl: ape.external_url });
    expect(page.data[0]!.attributes.map((a) => a.displayType)).toEqual(["", "number", "boost_percentage", "date"]);
  });

  it("is an update like any other: counted, replacing the record whole, and unchanged when sent again", async () => {
    const renamed = { ...ape, name: "Ape #7 (renamed)", image: "https://example.com/7.png", animation_url: undefined };
    expect((await post("tokens", [renamed])).body).toMatchObject({ accepted: 1, duplicates: 0 });
    expect((await post("tokens", [renamed])).body).toMatchObject({ accepted: 0, duplicates: 1 });
    // The field the update left out is untold now, as every field of a replaced record.
    expect(await tokenJson(C, "7")).toMatchObject({ name: "Ape #7 (renamed)", image: "https://example.com/7.png", animationUrl: "", owner: OWNER });
    await post("tokens", [ape]);
  });

  it("is taken over the ingest RPC as the REST line is", async () => {
    const rpc = createClient(IngestService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    const r = await rpc.ingestTokens({
      records: [{
        contractAddress: C2, assetId: "1", currentOwner: OWNER, name: "RPC #1", description: "by RPC", image: "https://example.com/1.png",
        animationUrl: "https://example.com/1.mp4", externalUrl: "https://example.com/1",
        attributes: [{ traitType: "Level", value: { case: "numberValue", value: 3 }, displayType: "number" }],
      }],
    }, { headers: headers() });
    expect(r.accepted).toBe(1);
    expect(await tokenJson(C2, "1")).toMatchObject({
      name: "RPC #1", description: "by RPC", image: "https://example.com/1.png", animationUrl: "https://example.com/1.mp4", externalUrl: "https://example.com/1",
      attributes: [{ traitType: "Level", value: "3", displayType: "number" }],
    });
  });

  it("refuses what is not a metadata value, by field, writing nothing of the batch", async () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ image: "javascript:alert(1)" }, /^image: must be an http\(s\), ipfs:\/\/ or ar:\/\/ URI, a data: URI or ""/],
      [{ animation_url: "file:///etc/passwd" }, /^animation_url: must be an http\(s\)/],
      [{ image: `data:image/svg+xml;base64,${"A".repeat(40_000)}` }, /^image: a data: URI must be at most 32768 characters/],
      [{ image: "data:,no media type" }, /^image: must be a data: URI with a media type/],
      [{ external_url: "ipfs://Qm" }, /^external_url: must be an http\(s\) URL/],
      [{ name: "x".repeat(257) }, /^name: must be at most 256 characters/],
      [{ description: "x".repeat(10_001) }, /^description: must be at most 10000 characters/],
      [{ background_color: "ffffff" }, /background_color/],
      [{ attributes: [{ trait_type: "Level", value: 1, display_type: 7 }] }, /display_type: must be a string/],
    ];
    for (const [fields, reason] of bad) {
      const r = await post("tokens", [{ ...ape, assetId: "99" }, { ...ape, assetId: "100", ...fields }]);
      expect(r.status, JSON.stringify(fields)).toBe(400);
      expect((r.body.rejected as { line: number; message: string }[])[0]).toMatchObject({ line: 2, message: expect.stringMatching(reason) });
    }
    const none = await restGet(ctx.server.baseUrl, "/v1/asset/tokens", { contractAddress: C, assetId: "99" }, ctx.read);
    expect(none.body.data).toEqual([]);
  });
});

describe("collection metadata", () => {
  it("is taken over REST and the RPC and answered by the collections list", async () => {
    expect((await post("collections", [collection])).status).toBe(200);
    // The list holds a collection once it has a summary: a token of it is enough (written above).
    expect(await listed(C)).toMatchObject({ name: collection.name, description: collection.description, image: collection.image,
      externalUrl: collection.externalUrl, twitter: collection.twitter, discord: collection.discord });
    const rpc = createClient(IngestService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    await rpc.ingestCollections({ records: [{ contractAddress: C2, name: "RPC", description: "by RPC", image: SVG, externalUrl: "", twitter: "https://x.com/rpc", discord: "" }] },
      { headers: headers() });
    expect(await listed(C2)).toMatchObject({ name: "RPC", description: "by RPC", image: SVG, externalUrl: "", twitter: "https://x.com/rpc", discord: "" });
    const list = createClient(CollectionService, createConnectTransport({ baseUrl: ctx.server.baseUrl, httpVersion: "1.1" }));
    const page = await list.listCollections({ query: C }, { headers: { "x-api-key": ctx.read } });
    expect(page.data[0]).toMatchObject({ description: collection.description, twitter: collection.twitter, discord: collection.discord });
  });

  it("is left as it is by a score naming the collection, and replaced whole by the next collection record", async () => {
    const score = { contractAddress: C, name: "Metadata Apes (scored)", hype: 1, gains: 2, community: 3, total: 6 };
    expect((await post("scores", [score])).status).toBe(200);
    expect(await listed(C)).toMatchObject({ name: "Metadata Apes (scored)", description: collection.description, image: collection.image, discord: collection.discord });
    expect((await post("collections", [{ contractAddress: C, name: "Plain" }])).body).toMatchObject({ accepted: 1, duplicates: 0 });
    expect(await listed(C)).toMatchObject({ name: "Plain", description: "", image: "", externalUrl: "", twitter: "", discord: "" });
    expect((await post("collections", [{ contractAddress: C, name: "Plain" }])).body).toMatchObject({ accepted: 0, duplicates: 1 });
  });

  it("refuses a link that is not an http(s) URL, by field", async () => {
    for (const field of ["externalUrl", "twitter", "discord"]) {
      const r = await post("collections", [{ contractAddress: C, name: "x", [field]: "ipfs://Qm" }]);
      expect(r.status).toBe(400);
      expect((r.body.rejected as { message: string }[])[0]!.message).toMatch(new RegExp(`^${field}: must be an http\\(s\\) URL`));
    }
    expect(await listed(C)).toMatchObject({ name: "Plain" });
  });
});
