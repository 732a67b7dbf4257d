import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { backlog, type ConsumeProcess, dropJetStream, openPublisher, prepareJetStream, startConsume } from "../../bench/jetstream.js";
import { NATS_URL, skipNats, testJetStream } from "../support/nats.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { numberedSale } from "../support/sales.js";

// `consume` started while its store is down (issue 49, item 2) waits for it,
// as it does when the store goes down later (the same backoff and log
// line), instead of exiting: here PostgreSQL is reached through a local
// proxy that starts listening only after the consumer has said it waits.

const o = testJetStream("down", { ackWaitSeconds: 5 });
const C = `0x${"d0".repeat(20)}`;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

describe.skipIf(skipNats("consume with its store down at start") || skipPg)("marketdata consume with its store down at start", () => {
  let db: { url: string; drop(): Promise<void> };
  let proxy: net.Server | undefined;
  let consumer: ConsumeProcess | undefined;
  const sockets = new Set<net.Socket>();
  beforeAll(async () => {
    db = await createTestDatabase();
    await dropJetStream(o);
    await prepareJetStream(o);
  });
  afterAll(async () => {
    await consumer?.stop("SIGKILL");
    for (const s of sockets) s.destroy();
    await new Promise((r) => (proxy ? proxy.close(r) : r(undefined)));
    await dropJetStream(o).catch(() => {});
    await db?.drop();
  });

  it("waits for the store, then consumes", async () => {
    const port = await freePort();
    const target = new URL(db.url);
    const via = new URL(db.url);
    via.hostname = "127.0.0.1";
    via.port = String(port);
    const pub = await openPublisher(NATS_URL);
    await pub.publish(`${o.subjectPrefix}.sales`, [JSON.stringify(numberedSale(1, C))]);
    await pub.close();
    consumer = startConsume(["--db", via.toString(), "--from", NATS_URL, "--stream", o.stream, "--subject-prefix", o.subjectPrefix, "--durable", o.durable, "--dead-letter", o.deadLetter, "--progress", "0"]);
    await expect.poll(() => consumer!.output(), { timeout: 20_000, interval: 50 }).toMatch(/consume: the store is unavailable \(.*ECONNREFUSED.*\); retrying, nothing consumed yet/);
    await new Promise((r) => setTimeout(r, 500));
    expect(consumer.child.exitCode, consumer.output()).toBeNull();
    // The store comes up.
    proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on("error", () => {});
        s.on("close", () => sockets.delete(s));
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((r) => proxy!.listen(port, "127.0.0.1", r));
    await expect.poll(() => consumer!.output(), { timeout: 30_000, interval: 100 }).toMatch(/consume: consuming /);
    await expect.poll(() => backlog(o), { timeout: 30_000, interval: 100 }).toBe(0);
    const client = new pg.Client(db.url);
    await client.connect();
    try {
      expect((await client.query("SELECT count(*)::int AS n FROM sales")).rows[0].n).toBe(1);
    } finally {
      await client.end();
    }
    await consumer.stop();
    expect(consumer.child.exitCode).toBe(0);
  }, 90_000);
});
