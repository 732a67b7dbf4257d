import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { oneSqliteWriter, writerSocketOf } from "../../src/store/sqlite/one-writer.js";
import { StoreUnavailableError } from "../../src/store/ports/errors.js";

// One writer per SQLite file (issue 50, item 3): of the processes writing a
// file, the first to write holds the lock beside it and commits everyone's
// batches; the others hand theirs over its socket. When it goes, the batches
// it held are answered unavailable (never half-written) and the next write
// elects another.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-one-writer-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
const sale = (i: number, collection = "b") =>
  check.check({
    hash: `0x${i.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
    contractAddress: `0x${collection.repeat(40)}`, assetId: String(i % 500), timestamp: 1_700_000_000 + i, block: 18_000_000 + i,
    price: "1000", amountReceived: "900", currency: "ETH", marketplace: "BLUR",
  }, []) as Record<string, unknown>;
const batch = (from: number, n: number, collection?: string) => Array.from({ length: n }, (_, k) => sale(from + k, collection));

async function salesIn(path: string, collection: string): Promise<number> {
  const repos = await openReadRepositories(path);
  try {
    const id = await repos.collections.collectionId(`0x${collection.repeat(40)}`);
    return id === undefined ? 0 : (await repos.feed.sales(id, 0, 1_000_000)).length;
  } finally {
    await repos.close();
  }
}

/** A process (test/support/one-writer-child.ts) that writes 50 sales from `from` through the elected writer, then waits. */
async function childWriter(path: string, from: number) {
  const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "../support/one-writer-child.ts"), path, String(from)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const [line] = (await once(child.stdout, "data")) as [Buffer];
  return { child, counts: JSON.parse(line.toString()) as { inserted: number } };
}

describe("one writer per SQLite file", () => {
  it("writers of one file elect one: the others' batches are committed by it, with their own counts", async () => {
    const path = join(dir, "elect.sqlite");
    await migrateStore(path);
    const writers = [oneSqliteWriter(path), oneSqliteWriter(path), oneSqliteWriter(path)];
    try {
      // The first write elects; every later one, from any writer, goes to it.
      expect(await writers[1]!.write("sales", batch(0, 10))).toMatchObject({ inserted: 10, updated: 0 });
      expect(existsSync(writerSocketOf(path))).toBe(true);
      const counts = await Promise.all(Array.from({ length: 30 }, (_, k) => writers[k % 3]!.write("sales", batch(100 + k * 20, 20))));
      expect(counts.every((c) => c.inserted === 20)).toBe(true);
      // The same records again, through another writer: counted unchanged.
      expect(await writers[2]!.write("sales", batch(0, 10))).toMatchObject({ inserted: 0, unchanged: 10 });
    } finally {
      for (const w of writers) await w.close();
    }
    expect(await salesIn(path, "b")).toBe(610);
  });

  it("when the writer closes, the others elect again and go on writing", async () => {
    const path = join(dir, "again.sqlite");
    await migrateStore(path);
    const first = oneSqliteWriter(path);
    const second = oneSqliteWriter(path);
    try {
      await first.write("sales", batch(0, 10));
      await second.write("sales", batch(10, 10));
      await first.close();
      // Its connection gone, the next write elects this one.
      let counts;
      for (let tries = 0; counts === undefined; tries++) {
        counts = await second.write("sales", batch(20, 10)).catch((err: unknown) => {
          expect(err).toBeInstanceOf(StoreUnavailableError);
          expect(tries).toBeLessThan(1);
          return undefined;
        });
      }
      expect(counts).toMatchObject({ inserted: 10 });
    } finally {
      await second.close();
    }
    expect(await salesIn(path, "b")).toBe(30);
  });

  it("a writer process killed outright: the lock is freed with it, and another process takes over", async () => {
    const path = join(dir, "killed.sqlite");
    await migrateStore(path);
    const { child, counts } = await childWriter(path, 0);
    expect(counts.inserted).toBe(50);
    const mine = oneSqliteWriter(path);
    try {
      // Handed to the child, which writes it.
      expect(await mine.write("sales", batch(1000, 5, "a"))).toMatchObject({ inserted: 5 });
      const exited = once(child, "exit");
      child.kill("SIGKILL");
      await exited;
      // The connection's end is seen, or the write finds it closed: unavailable (never another error, nothing
      // half written) until this process is elected, which a busy machine may take a moment to see.
      let written;
      for (const deadline = Date.now() + 15_000; written === undefined && Date.now() < deadline; ) {
        written = await mine.write("sales", batch(2000, 5, "a")).catch(async (err: unknown) => {
          expect(err).toBeInstanceOf(StoreUnavailableError);
          await new Promise((r) => setTimeout(r, 50));
          return undefined;
        });
      }
      expect(written).toMatchObject({ inserted: 5 });
      // A second process now hands its batch to this one.
      const second = await childWriter(path, 3000);
      expect(second.counts.inserted).toBe(50);
      second.child.kill("SIGKILL");
    } finally {
      await mine.close();
    }
    expect(await salesIn(path, "a")).toBe(110);
  });
});
