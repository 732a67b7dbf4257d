import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Health } from "../../gen/health/v1/health_pb.js";
import { ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { buildServer } from "../../src/server.js";
import { openReadRepositories } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import { fixtureOnEngine } from "../support/engine.js";
import { buildFixture, type Fixture } from "../support/fixture.js";
import { freePort, startOfSecond, startTestServer, type TestServer } from "../support/server.js";

// Surfaces served without a key (health, readiness, reflection, metrics,
// docs) are within the caller's address limit: the review found every one of
// them answering 200 thirty times in a row at --anonymous-rate-limit 1, and a
// 33-byte reflection request returning 18.7 KB. Readiness costs the store at
// most one check a second however often it is asked.

let f: Fixture;
beforeAll(async () => {
  f = await fixtureOnEngine(buildFixture());
});
afterAll(() => f?.cleanup());

describe("at --anonymous-rate-limit 1", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(f.dbPath, { anonymousRateLimit: 1 });
  });
  afterAll(() => server?.close());

  it.each(["/healthz", "/readyz", "/metrics", "/docs", "/docs/swagger-ui.css", "/openapi.json"])("GET %s: the first of a second answers, the second is 429", async (path) => {
    await startOfSecond();
    const first = await fetch(`${server.url}${path}`);
    await first.arrayBuffer();
    const second = await fetch(`${server.url}${path}`);
    expect([first.status, second.status]).toEqual([200, 429]);
    expect(second.headers.get("retry-after")).toBe("1");
    expect(await second.json()).toEqual({ code: "resource_exhausted", message: "rate limit exceeded: 1 requests per second; retry after 1 s" });
  });

  it("health Check (Connect) and reflection (gRPC): the second call of a second is resource_exhausted", async () => {
    const health = createClient(Health, createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" }));
    await startOfSecond();
    const codes: string[] = [];
    for (let i = 0; i < 2; i++) codes.push(await health.check({ service: "" }).then(() => "ok", (e: { code: number }) => String(e.code)));
    const reflection = createClient(ServerReflection, createGrpcTransport({ baseUrl: server.url }));
    await startOfSecond();
    const ask = async () => {
      try {
        for await (const r of reflection.serverReflectionInfo((async function* () {
          yield { messageRequest: { case: "listServices" as const, value: "" } };
        })())) {
          return r.messageResponse.case === "listServicesResponse" ? "ok" : "unexpected";
        }
        return "empty";
      } catch (e) {
        return String((e as { code: number }).code);
      }
    };
    codes.push(await ask(), await ask());
    // 8: resource_exhausted.
    expect(codes).toEqual(["ok", "8", "ok", "8"]);
  });
});

describe("readiness", () => {
  let store: ReadRepositories;
  let checks = 0;
  let close: () => Promise<void>;
  let url: string;
  beforeAll(async () => {
    store = await openReadRepositories(f.dbPath);
    const schemaVersion = store.info.schemaVersion.bind(store.info);
    store.info.schemaVersion = () => {
      checks++;
      return schemaVersion();
    };
    const { app } = await buildServer({ store, logger: pino({ level: "silent" }) });
    url = await app.listen({ port: 0, host: "127.0.0.1" });
    close = async () => {
      await app.close();
      await store.close();
    };
  });
  afterAll(() => close?.());

  it("30 /readyz and 10 Health List calls within a second check the store at most twice (the review: 2 queries each on PostgreSQL)", async () => {
    await startOfSecond();
    checks = 0;
    const health = createClient(Health, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
    const answers = await Promise.all([
      ...Array.from({ length: 30 }, () => fetch(`${url}/readyz`).then((r) => r.status)),
      ...Array.from({ length: 10 }, () => health.list({}).then(() => 200)),
    ]);
    expect(new Set(answers)).toEqual(new Set([200]));
    expect(checks).toBeLessThanOrEqual(2);
    expect(checks).toBeGreaterThanOrEqual(1);
  });
});

describe("metrics on a host and port of their own", () => {
  it("--metrics-port serves /metrics there (127.0.0.1 unless --metrics-host), and the API port has none", async () => {
    const port = await freePort();
    const server = await startTestServer(f.dbPath, { metrics: { enabled: true, port } });
    try {
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
      expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
