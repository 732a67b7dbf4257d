import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeSales } from "../../bench/sales-file.js";
import { startServe } from "../../src/cli/run-sync.js";
import { openReadOnly } from "../../src/store/sqlite/database.js";
import { openWritableStore } from "../../src/store/open.js";
import { runCli, spawnCli } from "./run-cli.js";
import { untilWriteLocked } from "../support/sqlite-lock.js";
import { numberedSale } from "../support/sales.js";

// Writes through `marketdata serve` on a SQLite file, as an indexer makes
// them: acknowledged batches survive the server's SIGKILL, whole; many
// writers at once, an import from the CLI beside them and two worker
// processes never show a caller SQLITE_BUSY; the stats aggregates stay
// true through all of it. The address limit is off: one address sends every
// batch, and a burst of first requests before the key's first lookup would
// be counted against it (policy/admission.ts).

const COLLECTION = `0x${"ab".repeat(20)}`;
let dir: string;
let db: string;
let key: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-ingest-"));
  db = join(dir, "store.sqlite");
  const created = runCli(["keys", "create", "--db", db, "--name", "indexer", "--scope", "ingest"]);
  expect(created.status).toBe(0);
  key = created.stdout.trim().split("\n").pop()!;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Sale `i` of batch `b`: a hash of its own, so every batch is new. */
const sale = (b: number, i: number) => numberedSale(b * 1000 + i, COLLECTION);

const batchBody = (b: number, size: number) => Array.from({ length: size }, (_, i) => JSON.stringify(sale(b, i))).join("\n");

async function send(url: string, b: number, size: number): Promise<number> {
  const r = await fetch(`${url}/v1/ingest/sales`, {
    method: "POST",
    headers: { "content-type": "application/x-ndjson", "x-api-key": key },
    body: batchBody(b, size),
  });
  await r.arrayBuffer();
  return r.status;
}

/** The hashes of the batches in the store, counted per batch. */
function storedPerBatch(): Map<number, number> {
  const conn = openReadOnly(db);
  try {
    const hashes = conn.prepare("SELECT hex(hash) FROM sales").pluck().all() as string[];
    const per = new Map<number, number>();
    for (const h of hashes) {
      const b = Math.floor(Number.parseInt(h, 16) / 1000);
      per.set(b, (per.get(b) ?? 0) + 1);
    }
    return per;
  } finally {
    conn.close();
  }
}

async function statsAreTrue(): Promise<void> {
  const store = await openWritableStore(db);
  try {
    expect((await store.rebuildStats(undefined, true)).changed).toBe(0);
  } finally {
    await store.close();
  }
}

describe("ingest into SQLite through serve", () => {
  it("a batch acknowledged before a SIGKILL is in the store, whole; one not acknowledged is whole or absent", async () => {
    const serve = await startServe(["--db", db, "--port", "0", "--workers", "1", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"]);
    const size = 200;
    const acked: number[] = [];
    let killed = false;
    // 40 batches from 8 writers; the server is killed once 10 were acknowledged, others in flight.
    const writer = async (w: number) => {
      for (let b = w; b < 40; b += 8) {
        const status = await send(serve.url, 100 + b, size).catch(() => 0);
        if (status === 200) acked.push(100 + b);
        if (acked.length >= 10 && !killed) {
          killed = true;
          serve.child.kill("SIGKILL");
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
    await serve.stop();
    expect(killed).toBe(true);
    const stored = storedPerBatch();
    for (const b of acked) expect(stored.get(b), `acknowledged batch ${b}`).toBe(size);
    for (const [b, n] of stored) if (b >= 100) expect(n, `batch ${b}`).toBe(size);
    await statsAreTrue();
  });

  it("50 writers at once, an import from the CLI beside them: every batch answered 200, every row once", async () => {
    const serve = await startServe(["--db", db, "--port", "0", "--workers", "1", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"], { env: { LOG_LEVEL: "info" } });
    try {
      const file = join(dir, "import.ndjson");
      // Small enough that the import holds the lock well within a batch's wait (LOCK_WAIT_MS, 10 s) on a loaded 2-core CI
      // machine too (60,000 rows held it 8.5 s alone, past 10 s beside the rest of the suite: two 503s).
      await writeSales(file, 20_000, 7, `0x${"cd".repeat(20)}`);
      const importer = spawnCli(["import", "sales", file, "--db", db]);
      const imported = new Promise<number | null>((resolve) => importer.once("exit", resolve));
      // The writers start while the import holds the store's write lock: they wait for it, on a timer.
      await untilWriteLocked(db);
      const statuses = await Promise.all(
        Array.from({ length: 50 }, async (_, w) => {
          const out: number[] = [];
          for (let k = 0; k < 4; k++) out.push(await send(serve.url, 1000 + w * 4 + k, 25));
          return out;
        }),
      );
      expect(await imported).toBe(0);
      expect(statuses.flat().filter((s) => s !== 200)).toEqual([]);
      const stored = storedPerBatch();
      for (let b = 1000; b < 1200; b++) expect(stored.get(b), `batch ${b}`).toBe(25);
      // The background derive waited for the import's lock too, saying nothing (issue 50, item 3).
      expect(serve.output()).not.toMatch(/database is locked|background derive failed/);
      await statsAreTrue();
    } finally {
      await serve.stop();
    }
  }, 90_000);

  it("two worker processes write the same file: each batch answered 200, every row once", async () => {
    const serve = await startServe(["--db", db, "--port", "0", "--workers", "2", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"]);
    try {
      const statuses = await Promise.all(Array.from({ length: 40 }, (_, w) => send(serve.url, 2000 + w, 50)));
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      // Sent again: every record a duplicate.
      const again = await fetch(`${serve.url}/v1/ingest/sales`, {
        method: "POST",
        headers: { "content-type": "application/x-ndjson", "x-api-key": key },
        body: batchBody(2000, 50),
      });
      expect(await again.json()).toEqual({ accepted: 0, duplicates: 50, rejected: [] });
      const stored = storedPerBatch();
      for (let b = 2000; b < 2040; b++) expect(stored.get(b), `batch ${b}`).toBe(50);
      await statsAreTrue();
    } finally {
      await serve.stop();
    }
  });

  it("two workers under an indexer's load (4 writers, batches of 1,000): one process writes the file and derives, never 'database is locked' (issue 50, item 3)", async () => {
    const serve = await startServe(["--db", db, "--port", "0", "--workers", "2", "--ingest-rate-limit", "0", "--anonymous-rate-limit", "0"], {
      env: { LOG_LEVEL: "info" },
    });
    try {
      const statuses = await Promise.all(
        Array.from({ length: 4 }, async (_, w) => {
          const mine: number[] = [];
          for (let b = 0; b < 4; b++) mine.push(await send(serve.url, 1500 + w * 10 + b, 1000));
          return mine;
        }),
      );
      expect(statuses.flat().filter((s) => s !== 200)).toEqual([]);
      const stored = storedPerBatch();
      for (let w = 0; w < 4; w++) for (let b = 0; b < 4; b++) expect(stored.get(1500 + w * 10 + b)).toBe(1000);
      // The background derive of what was written: in the one process that writes.
      const lines = () => serve.output().split("\n").filter((l) => l.startsWith("{"));
      for (let waited = 0; !lines().some((l) => l.includes('"msg":"derived"')) && waited < 20_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      const derived = lines().filter((l) => l.includes('"msg":"derived"')).map((l) => (JSON.parse(l) as { pid: number }).pid);
      expect(derived.length).toBeGreaterThan(0);
      expect(new Set(derived).size).toBe(1);
      expect(serve.output()).not.toMatch(/database is locked|SQLITE_BUSY|writer thread stopped|background derive failed/);
      await statsAreTrue();
    } finally {
      await serve.stop();
    }
  }, 90_000);
});
