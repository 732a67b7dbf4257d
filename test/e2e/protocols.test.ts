import type { DescMethodUnary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { SERVICES } from "../../src/service/services.js";
import { restRoutes } from "../../src/transport/rest/http-rules.js";
import { toRestJson } from "../support/rest-json-oracle.js";
import { buildFixture, COLLECTION, EDITION, EDITIONS_COLLECTION } from "../support/fixture.js";
import { PROTOCOLS, restGet, transportFor, useFixtureServer } from "../support/server.js";

// The same records over REST, Connect (JSON POST and binary GET), gRPC-Web and
// gRPC: every RPC's response, written in the REST dialect, equals the /v1 body.

const t = useFixtureServer(buildFixture);


const REQUESTS: Record<string, Record<string, string | number>> = {
  ListAppraisals: { contractAddress: COLLECTION, limit: 30 },
  ListRarity: { contractAddress: COLLECTION, limit: 30 },
  ListSales: { contractAddress: COLLECTION, limit: 50, marketplace: "BLUR" },
  ListListings: { contractAddress: COLLECTION, limit: 50 },
  GetCollectionStats: { contractAddress: COLLECTION, since: 1_700_010_000 },
  ListInfluencers: { contractAddress: COLLECTION, limit: 50 },
  ListTweets: { contractAddress: COLLECTION, limit: 50 },
  ListScores: { contractAddress: COLLECTION },
  GetCollectionFloor: { contractAddress: COLLECTION },
  ListCollectionHolders: { contractAddress: COLLECTION, limit: 30 },
  ListTokens: { contractAddress: COLLECTION, sort: "price", limit: 50 },
  ListTokenOwners: { contractAddress: EDITIONS_COLLECTION, assetId: EDITION, limit: 50 },
  ListCollectionTraits: { contractAddress: COLLECTION },
  ListOffers: { contractAddress: COLLECTION, limit: 50 },
  GetCollectionMarket: { contractAddress: COLLECTION },
  ListCollections: { sort: "volume7d", limit: 2 },
  ListCollectionActivity: { contractAddress: COLLECTION, types: "sale,listing", limit: 30 },
  GetCollectionStatsSeries: { contractAddress: COLLECTION, interval: "day", since: 1_700_010_000, limit: 50 },
  GetCollectionCandles: { contractAddress: COLLECTION, interval: "1h", since: 1_700_010_000, limit: 50 },
};

const routes = restRoutes(SERVICES);

describe("every protocol serves the same records", () => {
  it("has a REST route for every RPC", () => {
    expect(routes.map((r) => r.method.name).sort()).toEqual(Object.keys(REQUESTS).sort());
  });

  it.each(routes.map((r) => [r.method.name, r] as const))("%s", async (name, route) => {
    const query = REQUESTS[name]!;
    const rest = await restGet(t.server.baseUrl, route.path, query, t.f.key);
    expect(rest.status).toBe(200);
    for (const protocol of PROTOCOLS) {
      const transport = transportFor(protocol, t.server.baseUrl);
      const method = route.method as DescMethodUnary;
      const client = createClient(method.parent, transport) as unknown as Record<
        string,
        (req: object, opts: object) => Promise<Parameters<typeof toRestJson>[1]>
      >;
      const request = name === "ListScores" ? { contractAddress: [COLLECTION] } : toRequest(query);
      const message = await client[method.localName]!(request, { headers: { "x-api-key": t.f.key } });
      expect(toRestJson(method.output, message), protocol).toEqual(rest.body);
    }
  });
});

function toRequest(query: Record<string, string | number>): object {
  return Object.fromEntries(
    // A repeated field's values are comma-separated on REST.
    Object.entries(query).map(([k, v]) => [k, k === "since" || k === "until" ? BigInt(v) : k === "types" ? String(v).split(",") : v]),
  );
}
