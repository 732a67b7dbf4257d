import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll } from "vitest";
import { createTestDatabase, skipPg } from "./pg.js";

// The two engines a store test runs on, each giving a new empty store: a
// SQLite file in a directory of the test file's own (removed after it), or a
// PostgreSQL database of its own (skipped, visibly, without a server).

export type StoreEngine = [name: string, open: () => Promise<{ target: string; drop(): Promise<void> }>, skip: boolean];

/** Call at the top of a test file: registers the hooks that make and remove its directory. */
export function storeEngines(tag: string): StoreEngine[] {
  let dir: string | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), `marketdata-${tag}-`));
  });
  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });
  return [
    ["SQLite", async () => ({ target: join(dir!, `store-${Math.random()}.sqlite`), drop: async () => {} }), false],
    ["PostgreSQL", async () => { const d = await createTestDatabase(); return { target: d.url, drop: d.drop }; }, skipPg],
  ];
}
