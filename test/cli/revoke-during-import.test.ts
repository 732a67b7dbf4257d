import { spawn } from "node:child_process";
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BIN } from "./run-cli.js";
import { buildFixture, COLLECTION, type Fixture } from "../support/fixture.js";
import { startTestServer, type TestServer } from "../support/server.js";
import pg from "pg";
import { importRecords, withKeys } from "../support/engine.js";
import { createTestDatabase, skipPg } from "../support/pg.js";
import { writeLocked } from "../support/sqlite-lock.js";

// A leaked key must be revocable within a second whatever else is running.
// The review saw `keys revoke` fail after 6.4 s with an uncaught SqliteError
// stack while an import held the SQLite store's write lock for its whole
// file. Keys now live in a file of their own beside the store, so key
// commands never wait for the store's writer; and any CLI error is one line.

let f: Fixture;
let server: TestServer;
beforeAll(async () => {
  f = buildFixture();
  server = await startTestServer(f.dbPath);
});
afterAll(async () => {
  await server?.close();
  f?.cleanup();
});

const sale = (i: number) =>
  JSON.stringify({
    hash: `0x${(0xabc000 + i).toString(16).padStart(64, "0")}`,
    from: `0x${"1".repeat(40)}`,
    to: `0x${"2".repeat(40)}`,
    contractAddress: COLLECTION,
    assetId: String(i % 40),
    timestamp: 1_710_000_000 + i,
    block: 19_000_000 + i,
    price: "1000000000000000000",
    amountReceived: "975000000000000000",
    currency: "ETH",
    marketplace: "OPENSEA",
  });

const scores = (key: string) =>
  fetch(`${server.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": key } }).then((r) => r.status);

describe("while an import holds the store's write lock", () => {
  it("keys revoke answers at once, the server refuses the key on its next request, and the import still commits", async () => {
    expect(await scores(f.key)).toBe(200);
    // An import from stdin: its transaction stays open while the input does.
    const importer = spawn(process.execPath, [BIN, "import", "--db", f.dbPath, "sales", "-"], { stdio: ["pipe", "ignore", "pipe"] });
    let importErr = "";
    importer.stderr.on("data", (c: Buffer) => (importErr += c.toString()));
    const exited = new Promise<number | null>((resolve) => importer.once("exit", resolve));
    importer.stdin.write(`${Array.from({ length: 500 }, (_, i) => sale(i)).join("\n")}\n`);
    const deadline = Date.now() + 30_000;
    while (!writeLocked(f.dbPath) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(writeLocked(f.dbPath)).toBe(true);

    // The key's id is 1 (the fixture's first). Node and the CLI take about a second to load: the write itself is milliseconds.
    const started = performance.now();
    const revoke = spawnSync(process.execPath, [BIN, "keys", "revoke", "--db", f.dbPath, "1"], { encoding: "utf8", timeout: 30_000 });
    const took = performance.now() - started;
    console.log(`keys revoke during an import: exit ${revoke.status} in ${took.toFixed(0)} ms (the review: failed after 6.4 s)`);
    expect(revoke.stderr).toBe("Revoked API key 1.\n");
    expect(revoke.status).toBe(0);
    expect(took).toBeLessThan(5000);
    expect(writeLocked(f.dbPath)).toBe(true);
    expect(await scores(f.key)).toBe(401);

    // A command that needs the store's own write lock fails after its wait with one clear line, no stack.
    const derive = spawnSync(process.execPath, [BIN, "derive", "--db", f.dbPath], { encoding: "utf8", timeout: 30_000 });
    expect(derive.status).toBe(1);
    expect(derive.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(derive.stderr).toMatch(/^marketdata: the store is busy: another process \(an import, derive or demo\) holds its write lock; retry when it has finished/);

    importer.stdin.end();
    const code = await exited;
    expect(importErr).toMatch(/500 rows read, 500 inserted/);
    expect(code).toBe(0);
  });
});

describe.skipIf(skipPg)("on PostgreSQL, while an import's transaction is open", () => {
  it("keys revoke answers at once and a server on the database refuses the key", async () => {
    const db = await createTestDatabase();
    const g = buildFixture();
    let s: TestServer | undefined;
    let importer: ReturnType<typeof spawn> | undefined;
    let probe: pg.Client | undefined;
    try {
      await importRecords(db.url, "scores", [g.score]);
      const { id, key } = await withKeys(db.url, (admin) => admin.create("leaked"));
      s = await startTestServer(db.url);
      const ask = () => fetch(`${s!.url}/v1/collection/scores?contractAddress=${COLLECTION}`, { headers: { "x-api-key": key } }).then((r) => r.status);
      expect(await ask()).toBe(200);
      importer = spawn(process.execPath, [BIN, "import", "--db", db.url, "sales", "-"], { stdio: ["pipe", "ignore", "ignore"] });
      const exited = new Promise<number | null>((resolve) => importer!.once("exit", resolve));
      importer.stdin!.write(`${Array.from({ length: 500 }, (_, i) => sale(i)).join("\n")}\n`);
      // Wait for the import's transaction: a backend on this database whose
      // transaction has been open for half a second (its COPY waits for more
      // input). Not any backend inside a transaction: the server's own pool
      // runs each query in one, for an instant, and counting those raced
      // (the wait saw one, the assertion after it none).
      const client = new pg.Client({ connectionString: db.url });
      probe = client;
      await client.connect();
      const dbName = new URL(db.url).pathname.slice(1);
      const openTransactions = async () =>
        Number(
          (await client.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND xact_start < now() - interval '500 milliseconds' AND pid <> pg_backend_pid()", [dbName])).rows[0]!.n,
        );
      for (let i = 0; i < 300 && (await openTransactions()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await openTransactions()).toBeGreaterThan(0);
      probe = undefined;
      await client.end();

      const started = performance.now();
      const revoke = spawnSync(process.execPath, [BIN, "keys", "revoke", "--db", db.url, String(id)], { encoding: "utf8", timeout: 30_000 });
      expect(revoke.stderr).toBe(`Revoked API key ${id}.\n`);
      expect(performance.now() - started).toBeLessThan(5000);
      expect(await ask()).toBe(401);
      importer.stdin!.end();
      expect(await exited).toBe(0);
    } finally {
      await probe?.end();
      importer?.kill("SIGKILL");
      await s?.close();
      g.cleanup();
      await db.drop();
    }
  });
});
