import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { SERVICES } from "../../src/service/services.js";
import { restRoutes } from "../../src/transport/rest/http-rules.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { restGet, useFixtureServer } from "../support/server.js";

// gen/openapi.json (tools/protoc-gen-openapi.ts, run by buf generate) is a
// valid OpenAPI 3.1 document, covers every /v1 route, and real answers of
// the server (data and errors) validate against its schemas.

const FILE = fileURLToPath(new URL("../../gen/openapi.json", import.meta.url));
const spec = JSON.parse(readFileSync(FILE, "utf8")) as {
  paths: Record<string, { get: { parameters: { name: string }[]; responses: Record<string, { content?: { "application/json": { schema: object } } }> } }>;
  components: { schemas: Record<string, object> };
};

const t = useFixtureServer(buildFixture);

/** A validator of one response body against the document's schema for (path, status). */
function validatorFor(path: string, status: string) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ $id: "openapi", components: spec.components });
  const schema = JSON.parse(JSON.stringify(spec.paths[path]!.get.responses[status]!.content!["application/json"].schema).replaceAll("#/components", "openapi#/components"));
  return ajv.compile(schema);
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
    expect(Object.keys(spec.paths).sort()).toEqual(routes.map((r) => r.path).sort());
    for (const r of routes) {
      expect(spec.paths[r.path]!.get.parameters.map((p) => p.name).sort()).toEqual(r.method.input.fields.map((f) => f.jsonName).sort());
    }
    expect(JSON.stringify(spec)).toContain('"securitySchemes":{"apiKey":{"type":"apiKey","in":"header","name":"x-api-key"}}'.replace(/"/g, '"'));
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
});
