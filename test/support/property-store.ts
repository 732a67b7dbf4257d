import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { afterAll, beforeAll, expect } from "vitest";
import { AssetService } from "../../gen/marketdata/v1/asset_service_pb.js";
import { CollectionService } from "../../gen/marketdata/v1/collection_service_pb.js";
import { ImportRejected, importLines } from "../../src/ingest/importer.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import { createServices } from "../../src/service/services.js";
import { openReadRepositories, openWritableStore } from "../../src/store/open.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import type { WritableStore } from "../../src/store/ports/writes.js";
import { createTestDatabase } from "./pg.js";

// Property tests of the store through the service in process: one store per
// engine, written by imports (the commands' own path), read by the
// CollectionService and AssetService clients.

async function* linesOf(records: readonly object[]) {
  for (const r of records) yield JSON.stringify(r);
}

/**
 * Imports records; false when the file was rejected whole (a bad line
 * without skipInvalid). `bulk`: SQLite's bulk path from the first row (its
 * set-based recompute) or never (its triggers, row by row).
 */
export async function importBatch(store: WritableStore, kind: Kind, records: object[], badLine = false, skipInvalid = false, bulk?: boolean): Promise<boolean> {
  const lines: object[] = [...records];
  if (badLine) lines.splice(lines.length >> 1, 0, { nonsense: true });
  try {
    await importLines(store.records, linesOf(lines), { kind, skipInvalid, bulk });
    return true;
  } catch (err) {
    if (!(err instanceof ImportRejected)) throw err;
    expect(badLine && !skipInvalid, (err as Error).message).toBe(true);
    return false;
  }
}

/** Consecutive writes of one kind go as one import (a batch of at most `size`); the kinds interleave. */
export function batchesByKind<W extends { kind: Kind }>(writes: readonly W[], size: number): W[][] {
  const out: W[][] = [];
  for (const w of writes) {
    const last = out.at(-1);
    if (last !== undefined && last[0]!.kind === w.kind && last.length < size) last.push(w);
    else out.push([w]);
  }
  return out;
}

/**
 * Imports a history in batches of a kind (at most 6 each), the last one
 * refused whole with `badLast` (a bad line in it; `bulk` as importBatch's),
 * and after each calls `check` with the writes taken so far.
 */
export async function importChecked<W extends { kind: Kind }>(
  store: WritableStore,
  writes: readonly W[],
  recordOf: (w: W) => object,
  badLast: boolean,
  bulk: boolean,
  check: (taken: readonly W[]) => Promise<void>,
): Promise<void> {
  const taken: W[] = [];
  const all = batchesByKind(writes, 6);
  for (const [i, batch] of all.entries()) {
    if (await importBatch(store, batch[0]!.kind, batch.map(recordOf), badLast && i === all.length - 1, false, bulk)) taken.push(...batch);
    await check(taken);
  }
}

/**
 * Imports a property test's history of writes (consecutive ones of a kind as
 * one import of at most 4: batchesByKind), each as `recordOf` makes it; the
 * writes taken, in order. `bulk`: SQLite's set-based recompute after a bulk
 * import, or its triggers row by row (importBatch).
 */
export async function importHistory<W extends { kind: Kind }>(store: WritableStore, writes: readonly W[], recordOf: (w: W) => object, bulk?: boolean): Promise<W[]> {
  const taken: W[] = [];
  for (const batch of batchesByKind(writes, 4)) {
    await importBatch(store, batch[0]!.kind, batch.map(recordOf), false, false, bulk);
    taken.push(...batch);
  }
  return taken;
}

export interface Harness {
  store: WritableStore;
  read: ReadRepositories;
  client: Client<typeof CollectionService>;
  assets: Client<typeof AssetService>;
  cleanup(): Promise<void>;
}

/** An empty store on `engine`, written by imports and read through the service. */
export async function harness(engine: "sqlite" | "postgres"): Promise<Harness> {
  let target: string;
  let drop: () => Promise<void>;
  if (engine === "postgres") {
    const db = await createTestDatabase();
    target = db.url;
    drop = db.drop;
  } else {
    const dir = mkdtempSync(join(tmpdir(), "marketdata-property-"));
    target = join(dir, "store.sqlite");
    drop = async () => rmSync(dir, { recursive: true, force: true });
  }
  const store = await openWritableStore(target, { migrateEmpty: true });
  const read = await openReadRepositories(target);
  const transport = createRouterTransport((router) => createServices(read).routes(router));
  return {
    store,
    read,
    client: createClient(CollectionService, transport),
    assets: createClient(AssetService, transport),
    cleanup: async () => {
      await read.close();
      await store.close();
      await drop();
    },
  };
}

/** A sale or transfer of a property test's history: event `hash` of token `asset` at step `at` (second `time`, block 100 + at). */
export interface EventWrite {
  kind: "sales" | "transfers";
  hash: number;
  asset: number;
  at: number;
}

/** The import record of an event: a sale from 0x11… to 0x22…, or a transfer from 0x22… to 0x33…, at second `time`. */
export function eventRecord(address: string, w: EventWrite, time: number): object {
  const hash = `0x${w.hash.toString(16).padStart(64, "0")}`;
  const base = { hash, contractAddress: address, assetId: String(w.asset), timestamp: time, block: 100 + w.at };
  return w.kind === "sales"
    ? { ...base, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, price: "7", amountReceived: "7", currency: "ETH", marketplace: "BLUR" }
    : { ...base, logIndex: 0, from: `0x${"2".repeat(40)}`, to: `0x${"3".repeat(40)}` };
}

/** A harness on `engine` for the describe block it is called in: made before its tests, cleaned up after them. */
export function useHarness(engine: "sqlite" | "postgres"): () => Harness {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await harness(engine);
  });
  afterAll(async () => {
    await h?.cleanup();
  });
  return () => h!;
}
