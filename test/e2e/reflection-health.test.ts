import { execFile } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { createClient } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/health/v1/health_pb.js";
import { MIGRATIONS } from "../../src/store/sqlite/migrations.js";
import { READINESS_TTL_MS } from "../../src/transport/ops/health.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { startTestServer, transportFor, useFixtureServer } from "../support/server.js";
import { PG_MIGRATIONS } from "../../src/store/postgres/migrations.js";
import { ENGINE, setSchemaVersion, withKeys } from "../support/engine.js";

// What a new user's tools find with nothing but the server's address:
// buf curl (the npm @bufbuild/buf binary) lists the services through server
// reflection and calls every RPC over gRPC, gRPC-Web and Connect without
// --schema; health for load balancers and orchestrators, without a key.

const BUF = fileURLToPath(new URL("../../node_modules/.bin/buf", import.meta.url));

const t = useFixtureServer(buildFixture);

/** buf curl as a child process, asynchronously: the server runs in this process's event loop. */
function bufCurl(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(BUF, ["curl", "--http2-prior-knowledge", ...args], { encoding: "utf8", timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const REQUESTS: Record<string, object> = {
  "marketdata.v1.AssetService/ListAppraisals": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.AssetService/ListRarity": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.AssetService/ListSales": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.AssetService/ListListings": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.CollectionService/GetCollectionStats": { contractAddress: COLLECTION },
  "marketdata.v1.CollectionService/ListInfluencers": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.CollectionService/ListTweets": { contractAddress: COLLECTION, limit: 2 },
  "marketdata.v1.CollectionService/ListScores": { contractAddress: [COLLECTION] },
};

describe("server reflection with buf curl, no --schema", () => {
  it.each([["grpc-v1"], ["grpc-v1alpha"]])("lists every service (%s)", async (reflectProtocol) => {
    const r = await bufCurl(["--reflect-protocol", reflectProtocol, "--list-services", t.server.url]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim().split("\n")).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "marketdata.v1.AssetService",
      "marketdata.v1.CollectionService",
      "marketdata.v1.IngestService",
      "marketdata.v1.WebhookService",
    ]);
  });

  it("lists every method", async () => {
    const methods = (await bufCurl(["--list-methods", t.server.url])).stdout;
    for (const m of Object.keys(REQUESTS)) expect(methods).toContain(m);
    expect(methods).toContain("grpc.health.v1.Health/Watch");
  });

  it.each(["grpc", "grpcweb", "connect"])("calls every RPC over %s", async (protocol) => {
    for (const [method, body] of Object.entries(REQUESTS)) {
      const r = await bufCurl(["--protocol", protocol, "-H", `x-api-key: ${t.f.key}`, "-d", JSON.stringify(body), `${t.server.url}/${method}`]);
      expect(r.stderr, `${protocol} ${method}`).toBe("");
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as Record<string, unknown>;
      expect(out.successful ?? out.success, `${protocol} ${method}`).toBe(1);
    }
  });

  it.each(["grpc", "grpcweb", "connect"])("writes through IngestService over %s with a key that may", async (protocol) => {
    const key = await withKeys(t.f.dbPath, async (admin) => (await admin.create("indexer", { scope: "ingest" })).key);
    const score = t.f.score;
    const r = await bufCurl(["--protocol", protocol, "-H", `x-api-key: ${key}`, "-d", JSON.stringify({ records: [score], skipInvalid: true }), `${t.server.url}/marketdata.v1.IngestService/IngestScores`]);
    expect(r.stderr).toBe("");
    // The fixture's own score: already held, so a duplicate (proto JSON leaves out zero fields).
    expect(JSON.parse(r.stdout)).toEqual({ duplicates: 1 });
    const refused = await bufCurl(["--protocol", protocol, "-H", `x-api-key: ${t.f.key}`, "-d", JSON.stringify({ records: [score] }), `${t.server.url}/marketdata.v1.IngestService/IngestScores`]);
    expect(refused.stderr).toMatch(/permission_denied/);
  });

  it("without a key the data RPCs are still refused, reflection is not", async () => {
    const r = await bufCurl(["--protocol", "grpc", "-d", JSON.stringify(REQUESTS["marketdata.v1.CollectionService/ListScores"]), `${t.server.url}/marketdata.v1.CollectionService/ListScores`]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unauthenticated/);
  });
});

describe("health", () => {
  const get = async (path: string) => {
    const r = await fetch(`${t.server.url}${path}`);
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  };

  it("GET /healthz and /readyz answer without a key", async () => {
    expect(await get("/healthz")).toEqual({ status: 200, body: { status: "ok" } });
    expect(await get("/readyz")).toEqual({ status: 200, body: { status: "ready" } });
  });

  it("grpc.health.v1 Check and List per service, on every protocol", async () => {
    for (const protocol of ["connect", "grpc-web", "grpc"] as const) {
      const health = createClient(Health, transportFor(protocol, t.server.url));
      expect((await health.check({ service: "" })).status, protocol).toBe(Status.SERVING);
      expect((await health.check({ service: "marketdata.v1.AssetService" })).status).toBe(Status.SERVING);
      await expect(health.check({ service: "nope.Service" })).rejects.toThrow(/not_found|unknown service/i);
      const list = await health.list({});
      expect(Object.keys(list.statuses).sort()).toEqual(["", "marketdata.v1.AssetService", "marketdata.v1.CollectionService", "marketdata.v1.IngestService", "marketdata.v1.WebhookService"]);
    }
  });

  it("/readyz turns 503 when the store's schema is not this build's", async () => {
    const current = ENGINE === "postgres" ? PG_MIGRATIONS.length : MIGRATIONS.length;
    await setSchemaVersion(t.f.dbPath, current + 1);
    // Readiness is checked against the store at most once a second (READINESS_TTL_MS).
    await new Promise((r) => setTimeout(r, READINESS_TTL_MS + 50));
    try {
      expect(await get("/readyz")).toEqual({
        status: 503,
        body: { status: "not ready", reason: `store schema version ${current + 1}, this build needs ${current}` },
      });
      const health = createClient(Health, transportFor("grpc", t.server.url));
      expect((await health.check({ service: "" })).status).toBe(Status.NOT_SERVING);
    } finally {
      await setSchemaVersion(t.f.dbPath, current);
    }
    await new Promise((r) => setTimeout(r, READINESS_TTL_MS + 50));
    expect((await get("/readyz")).status).toBe(200);
  });

  it("on shutdown: /readyz is 503 at once, and Watch sends NOT_SERVING", async () => {
    const s = await startTestServer(t.f.dbPath, { drainMs: 2000 });
    const watch = createClient(Health, transportFor("grpc", s.url)).watch({ service: "" });
    const statuses: Status[] = [];
    const first = await watch[Symbol.asyncIterator]().next();
    statuses.push((first.value as { status: Status }).status);
    // A kept-alive connection opened before the shutdown still reaches the server during the drain.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const readyz = () =>
      new Promise<number>((resolve, reject) => {
        http.get(`${s.url}/readyz`, { agent }, (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        }).on("error", reject);
      });
    expect(await readyz()).toBe(200);
    const closing = s.close();
    expect(await readyz()).toBe(503);
    for await (const m of watch) statuses.push(m.status);
    expect(statuses).toEqual([Status.SERVING, Status.NOT_SERVING]);
    await closing;
    agent.destroy();
  });
});
