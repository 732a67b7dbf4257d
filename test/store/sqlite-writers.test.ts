import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerFor } from "../../src/domain/kinds/index.js";
import { migrateStore, openReadRepositories } from "../../src/store/open.js";
import { sqliteIngestWriter } from "../../src/store/sqlite/ingest-writer.js";

// Two servers' writers on one SQLite file (serve's two workers), each in its
// own thread and never waiting in SQLite's busy handler, under sustained
// batches (issue 49, item 5): lock contention never ends a writer's thread
// (its planner-statistics refresh, which needs the write lock, once threw
// SQLITE_BUSY out of it: "the store's writer stopped"), every batch is
// committed, and a thread that does stop says why.

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "marketdata-sqlite-writers-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
const sale = (i: number) =>
  check.check({
    hash: `0x${i.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
    contractAddress: `0x${((i % 3) + 1).toString(16).repeat(40)}`, assetId: String(i % 500), timestamp: 1_700_000_000 + i, block: 18_000_000 + i,
    price: "1000", amountReceived: "900", currency: "ETH", marketplace: "BLUR",
  }, []) as Record<string, unknown>;

describe("two SQLite writer threads on one file", () => {
  it("commit every batch under contention, their statistics refreshes waiting rather than ending a thread", async () => {
    const path = join(dir, "two.sqlite");
    await migrateStore(path);
    const stopped: string[] = [];
    // A refresh of the planner's statistics after every commit: the step that needs the lock when another writer may hold it.
    const writers = [0, 1].map(() => sqliteIngestWriter(path, { statsEveryRows: 1, onStopped: (why) => stopped.push(why) }));
    let n = 0;
    const errors: string[] = [];
    try {
      await Promise.all(
        Array.from({ length: 4 }, async (_, k) => {
          for (let b = 0; b < 30; b++) {
            const batch = Array.from({ length: 100 }, () => sale(++n));
            await writers[k % 2]!.write("sales", batch).catch((e: unknown) => errors.push(String(e)));
          }
        }),
      );
    } finally {
      for (const w of writers) await w.close();
    }
    expect(stopped).toEqual([]);
    expect(errors).toEqual([]);
    const repos = await openReadRepositories(path);
    try {
      let total = 0;
      for (const c of ["1", "2", "3"]) {
        const id = (await repos.collections.collectionId(`0x${c.repeat(40)}`))!;
        total += (await repos.feed.sales(id, 0, 100_000)).length;
      }
      expect(total).toBe(n);
    } finally {
      await repos.close();
    }
  }, 120_000);
});
