import { create } from "@bufbuild/protobuf";
import { type DescService, setExtension } from "@bufbuild/protobuf";
import { MethodOptionsSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { IngestService } from "../../gen/marketdata/v1/ingest_service_pb.js";
import { KINDS } from "../../src/domain/kinds/index.js";
import { ndjsonRoutes, restRoutes } from "../../src/transport/rest/http-rules.js";

/** AssetService with its first method's rule replaced. */
function withRule(rule: Parameters<typeof create<typeof HttpRuleSchema>>[1]): DescService {
  const method = AssetService.methods[0]!;
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, rule));
  return { ...AssetService, methods: [{ ...method, proto: { ...method.proto, options } }] } as unknown as DescService;
}

describe("REST routes from google.api.http rules", () => {
  it("serves the contract's GET rules", () => {
    expect(restRoutes([AssetService]).map((r) => r.path)).toEqual([
      "/v1/asset/appraisals",
      "/v1/asset/rarity",
      "/v1/asset/sales",
      "/v1/asset/listings",
      "/v1/asset/tokens",
      "/v1/asset/owners",
      "/v1/asset/offers",
    ]);
  });

  it("serves the ingest RPCs' POST rules as NDJSON into their records, one route per importable kind", () => {
    const routes = ndjsonRoutes([IngestService]);
    expect(routes.map((r) => r.path).sort()).toEqual(KINDS.map((k) => `/v1/ingest/${k}`).sort());
    for (const r of routes) expect(r.body.name).toBe("records");
    // The streaming RPCs have no REST route, and the POST rules are not GET routes.
    expect(restRoutes([IngestService])).toEqual([]);
  });

  it("maps simple path variables", () => {
    expect(restRoutes([withRule({ pattern: { case: "get", value: "/v1/x/{contract_address}" } })])[0]!.path).toBe("/v1/x/:contract_address");
  });

  it.each([
    [{ pattern: { case: "put" as const, value: "/v1/x" } }, /only GET rules, and POST rules taking NDJSON/],
    [{ pattern: { case: "post" as const, value: "/v1/x" } }, /a POST rule's body must name a repeated message field/],
    [{ pattern: { case: "get" as const, value: "/v1/x" }, body: "*" }, /cannot map a body/],
    [{ pattern: { case: "get" as const, value: "/v1/x" }, additionalBindings: [{ pattern: { case: "get" as const, value: "/v2/x" } }] }, /additional_bindings/],
    [{ pattern: { case: "get" as const, value: "/v1/{name=collections/*}" } }, /path variable \{name=collections\/\*\} is not served/],
    [{ pattern: { case: "get" as const, value: "/v1/x/**" } }, /wildcards/],
    [{ pattern: { case: "get" as const, value: "/v1/x:list" } }, /verbs/],
  ])("refuses at startup what it does not serve: %j", (rule, message) => {
    expect(() => restRoutes([withRule(rule)])).toThrow(message);
  });
});
