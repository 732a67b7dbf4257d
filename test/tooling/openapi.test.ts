import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { procedures, SERVICES } from "../../src/service/services.js";
import { WebhookService } from "../../gen/marketdata/v1/webhook_service_pb.js";
import { batchBody, eventJson } from "../../src/service/webhooks/payload.js";
import { ndjsonRoutes, sseRoutes, restRoutes } from "../../src/transport/rest/http-rules.js";
import { fixtureRecords, withKeys } from "../support/engine.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { restGet, useFixtureServer } from "../support/server.js";

// gen/openapi.json (tools/protoc-gen-openapi.ts, run by buf generate) is a
// valid OpenAPI 3.1 document, covers every /v1 route, and real answers of
// the server (data and errors) validate against its schemas.

const FILE = fileURLToPath(new URL("../../gen/openapi.json", import.meta.url));
interface Operation {
  parameters: { name: string }[];
  requestBody?: { content: Record<string, { schema: object }> };
  responses: Record<string, { content?: { "application/json": { schema: object } } }>;
}
const spec = JSON.parse(readFileSync(FILE, "utf8")) as {
  paths: Record<string, { get: Operation; post: Operation }>;
  components: { schemas: Record<string, object> };
};

const t = useFixtureServer(buildFixture);

/** A validator against one of the document's schemas (its references resolved in the document). */
function compile(schema: object) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: "openapi", components: spec.components });
  return ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll("#/components", "openapi#/components")) as object);
}

/** A validator of one response body against the document's schema for (path, status). */
function validatorFor(path: string, status: string, verb: "get" | "post" = "get") {
  return compile(spec.paths[path]![verb].responses[status]!.content!["application/json"].schema);
}

const QUERIES: Record<string, Record<string, string | number>> = {
  "/v1/asset/appraisals": { contractAddress: COLLECTION, limit: 3 },
  "/v1/asset/rarity": { contractAddress: COLLECTION, limit: 3 },
  "/v1/asset/sales": { contractAddress: COLLECTION, limit: 3 },
  "/v1/asset/listings": { contractAddress: COLLECTION, limit: 3 },
  "/v1/collection/stats": { contractAddress: COLLECTION },
  "/v1/collection/influencers": { contractAddress: COLLECTION, limit: 3 },
  "/v1/collection/tweets": { contractAddress: COLLECTION, limit: 3 },
  "/v1/collection/scores": { contractAddress: COLLECTION },
};

describe("gen/openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(structuredClone(spec));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("has every /v1 route with every query parameter the server accepts, and the x-api-key scheme", () => {
    const routes = restRoutes(SERVICES);
    const writes = ndjsonRoutes(SERVICES);
    const feeds = sseRoutes(SERVICES);
    const admin = procedures([WebhookService]);
    expect(Object.keys(spec.paths).sort()).toEqual([...[...routes, ...writes, ...feeds].map((r) => r.path), ...admin].sort());
    for (const r of feeds) {
      const op = spec.paths[r.path]!.get;
      expect(op.parameters.map((p) => p.name).sort()).toEqual([...r.method.input.fields.map((f) => f.jsonName), "Last-Event-ID"].sort());
      expect(Object.keys((op as unknown as { responses: Record<string, { content?: object }> }).responses["200"]!.content!)).toEqual(["text/event-stream"]);
    }
    for (const r of writes) {
      // Every field of the request but the records (the body) is a query parameter: skipInvalid, chain, removed.
      expect(spec.paths[r.path]!.post.parameters.map((p) => p.name)).toEqual(r.method.input.fields.filter((f) => f !== r.body).map((f) => f.jsonName));
      expect(Object.keys(spec.paths[r.path]!.post.requestBody!.content)).toEqual(["application/x-ndjson"]);
    }
    for (const r of routes) {
      expect(spec.paths[r.path]!.get.parameters.map((p) => p.name).sort()).toEqual(r.method.input.fields.map((f) => f.jsonName).sort());
    }
    expect(JSON.stringify(spec)).toContain('"securitySchemes":{"apiKey":{"type":"apiKey","in":"header","name":"x-api-key"}');
    // The feeds also take the key in the URL (an EventSource cannot send headers); nothing else does.
    for (const [path, item] of Object.entries(spec.paths)) {
      const security = (item as { get?: { security?: object[] } }).get?.security;
      expect(security === undefined ? [] : security, path).toEqual(path.endsWith("/stream") ? [{ apiKey: [] }, { apiKeyQuery: [] }] : []);
    }
  });

  it.each(Object.keys(QUERIES))("real answers of %s validate against its schemas", async (path) => {
    const ok = await restGet(t.server.url, path, QUERIES[path]!, t.f.key);
    expect(ok.status).toBe(200);
    const data = validatorFor(path, "200");
    expect(data(ok.body), JSON.stringify(data.errors)).toBe(true);
    for (const [status, query, key] of [
      ["400", { contractAddress: "nope" }, t.f.key],
      ["401", QUERIES[path]!, undefined],
    ] as const) {
      const r = await restGet(t.server.url, path, query, key);
      expect(String(r.status)).toBe(status);
      const error = validatorFor(path, status);
      expect(error(r.body), JSON.stringify(error.errors)).toBe(true);
    }
  });

  it("describes a webhook delivery: a batch of real events validates against the webhooks section's schema", () => {
    const webhooks = (spec as unknown as { webhooks: Record<string, { post: Operation }> }).webhooks;
    const schema = webhooks.events!.post.requestBody!.content["application/json"]!.schema;
    const sale = t.f.sales[0]!;
    const listing = t.f.listings[0]!;
    const events = [
      eventJson("e", "sales", { seq: 1, row: { ...sale, contractAddress: COLLECTION } as never }, 0, "ethereum"),
      eventJson("e", "listings", { seq: 2, row: { ...listing, contractAddress: COLLECTION } as never }, 0, "base"),
      // A sale a reorganisation took back (docs/chains.md): a "removed" event.
      eventJson("e", "sales", { seq: 3, row: { ...sale, contractAddress: COLLECTION } as never, removed: { originalSeq: 1 } }, 0, "ethereum"),
    ];
    expect(JSON.parse(events[2]!)).toMatchObject({ type: "removed", sale: null, removed: { type: "sale", originalId: "evt_e_1", originalPosition: 1 } });
    const body = JSON.parse(batchBody("wh_x", events, new Date())) as unknown;
    const v = compile(schema);
    expect(v(body), JSON.stringify(v.errors)).toBe(true);
    expect(webhooks.events!.post.parameters.map((p) => p.name)).toEqual(["webhook-id", "webhook-timestamp", "webhook-signature"]);
  });

  it("every importable record of the fixture is a valid line of its ingest route; the answers validate", async () => {
    const records = fixtureRecords(t.f);
    for (const [kind, rows] of Object.entries(records)) {
      const path = `/v1/ingest/${kind}`;
      const line = compile(spec.paths[path]!.post.requestBody!.content["application/x-ndjson"]!.schema);
      for (const r of rows) expect(line(JSON.parse(JSON.stringify(r))), `${kind}: ${JSON.stringify(line.errors)}`).toBe(true);
    }
    const token = { contractAddress: COLLECTION, assetId: "1", currentOwner: "", attributes: [{ trait_type: "Fur", value: "Gold" }, { trait_type: "Level", value: 3, display_type: "number" }] };
    expect(compile(spec.paths["/v1/ingest/tokens"]!.post.requestBody!.content["application/x-ndjson"]!.schema)(token)).toBe(true);

    const key = await withKeys(t.f.dbPath, async (admin) => (await admin.create("openapi", { scope: "ingest" })).key);
    const post = async (body: string, k: string | undefined) => {
      const r = await fetch(`${t.server.url}/v1/ingest/scores`, { method: "POST", headers: { "content-type": "application/x-ndjson", ...(k ? { "x-api-key": k } : {}) }, body });
      return { status: String(r.status), body: (await r.json()) as unknown };
    };
    const line = JSON.stringify(records.scores![0]);
    for (const [status, body, k] of [
      ["200", line, key],
      ["400", `${line}\n{"nope":1}`, key],
      ["401", line, undefined],
      ["403", line, t.f.key],
    ] as const) {
      const r = await post(body, k);
      expect(r.status).toBe(status);
      const v = validatorFor("/v1/ingest/scores", status, "post");
      expect(v(r.body), JSON.stringify(v.errors)).toBe(true);
    }
  });
});
