import net from "node:net";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unavailable } from "../../src/store/postgres/statements.js";
import { importRecords, withKeys } from "../support/engine.js";
import { buildFixture, COLLECTION } from "../support/fixture.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A network partition between a server and PostgreSQL: the review read in
// the code that queries sent before it would wait forever and hold pool
// connections, and that a statement_timeout cancel (57014) surfaced as
// `internal`. A TCP proxy of the test's own stands between them and stops
// forwarding (connections stay open, nothing arrives: a partition, not a
// refusal). Every request must be answered `unavailable` within the store
// timeout, and the server must recover once the network does.

const STORE_TIMEOUT_MS = 1000;

class PartitionProxy {
  readonly server: net.Server;
  partitioned = false;
  readonly #pairs = new Set<[net.Socket, net.Socket]>();

  constructor(target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      client.on("error", () => {});
      // During the partition a new connection is accepted and then hears nothing.
      if (this.partitioned) return;
      const upstream = net.connect(target);
      upstream.on("error", () => client.destroy());
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
      const pair: [net.Socket, net.Socket] = [client, upstream];
      this.#pairs.add(pair);
      client.on("data", (d) => this.partitioned || upstream.write(d));
      upstream.on("data", (d) => this.partitioned || client.write(d));
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", () => r()));
    return (this.server.address() as net.AddressInfo).port;
  }

  close(): void {
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
    this.server.close();
  }
}

describe.skipIf(skipPg)("PostgreSQL behind a partition", () => {
  let db: { url: string; drop(): Promise<void> };
  let proxy: PartitionProxy;
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const f = buildFixture();
    try {
      await importRecords(db.url, "scores", [f.score]);
    } finally {
      f.cleanup();
    }
    key = await withKeys(db.url, async (admin) => (await admin.create("partition")).key);
    const u = new URL(db.url);
    proxy = new PartitionProxy({ host: u.hostname, port: Number(u.port || 5432) });
    u.port = String(await proxy.listen());
    server = await startTestServer(u.toString(), {
      poolSize: 2,
      timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 5000, idleMs: 60_000, shutdownMs: 2000, storeMs: STORE_TIMEOUT_MS },
    });
  });
  afterAll(async () => {
    proxy?.close();
    await server?.close();
    await db?.drop();
  });

  const ask = async () => {
    const started = performance.now();
    const r = await fetch(`${server.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": key } });
    const body = (await r.json()) as { code?: string };
    return { status: r.status, code: body.code, ms: performance.now() - started };
  };

  it("answers unavailable within the store timeout while partitioned, and serves again once healed", async () => {
    expect((await ask()).status).toBe(200);
    proxy.partitioned = true;
    // Two at once hold both pool connections; a third waits for one (the pool's connection timeout bounds it).
    const during = await Promise.all([ask(), ask(), ask()]);
    console.log(`partitioned: ${during.map((r) => `${r.status} ${r.code} in ${r.ms.toFixed(0)} ms`).join("; ")}`);
    for (const r of during) {
      expect([r.status, r.code]).toEqual([503, "unavailable"]);
      expect(r.ms).toBeLessThan(STORE_TIMEOUT_MS + 6000);
    }
    proxy.partitioned = false;
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await ask()).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  });

  it("a statement_timeout cancel (57014) counts as the store unavailable, not an internal error", async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query("SET statement_timeout = 10");
      const err = await c.query("SELECT pg_sleep(1)").then(() => undefined, (e: unknown) => e);
      expect((err as { code?: string }).code).toBe("57014");
      expect(unavailable(err)).toBe(true);
    } finally {
      await c.end();
    }
  });
});
