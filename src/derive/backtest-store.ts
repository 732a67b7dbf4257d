import { createReadStream, existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Kind } from "../domain/kinds/index.js";
import { importLines } from "../ingest/importer.js";
import { openWritableStore } from "../store/open.js";
import type { DeriveRepository } from "../store/ports/derive.js";
import type { WritableStore } from "../store/ports/writes.js";
import { deriveAll } from "./derive.js";
import { backtestCollection, type Prediction } from "./backtest.js";
import { featureSpace } from "./features.js";

// The stores the backtest runs on, built through the service's own import
// and derive code: the real CryptoPunks files of ../shared/data (beside the
// checkout; absent from a fresh clone) and the demo store.

export const PUNKS_DIR = fileURLToPath(new URL("../../../shared/data/cryptopunks", import.meta.url));
const PUNKS_FILES: [Kind, string][] = [
  ["collections", "collections.ndjson"],
  ["tokens", "tokens.ndjson"],
  ["sales", "sales-2017-06-to-2021-01.ndjson"],
];

export const havePunks = (dir = PUNKS_DIR) => PUNKS_FILES.every(([, f]) => existsSync(join(dir, f)));

/**
 * Imports the CryptoPunks files into a new store at `path` (the nine sales
 * without a price are rejected, as the data's README says), derives it, and
 * returns the open store.
 */
export async function buildPunksStore(path: string, dir = PUNKS_DIR): Promise<{ store: WritableStore; rejected: number }> {
  const store = await openWritableStore(path, { migrateEmpty: true });
  let rejected = 0;
  for (const [kind, file] of PUNKS_FILES) {
    const lines = createInterface({ input: createReadStream(join(dir, file)), crlfDelay: Infinity });
    const stats = await importLines(store.records, lines, { kind, skipInvalid: true });
    rejected += stats.rejected;
  }
  await deriveAll(store.derive);
  return { store, rejected };
}

/** Every collection of the store with sales, backtested. */
export async function backtestStore(repo: DeriveRepository): Promise<{ address: string; sales: number; predictions: Prediction[] }[]> {
  const out = [];
  for (const address of await repo.collectionsToDerive()) {
    const id = (await repo.collectionId(address))!;
    // Every sale the store holds, however dated: a backtest replays history as imported.
    const sales = await repo.sales(id, -1, Number.MAX_SAFE_INTEGER);
    if (sales.length === 0) continue;
    out.push({ address, sales: sales.length, predictions: backtestCollection(sales, featureSpace(await repo.tokens(id))) });
  }
  return out;
}
