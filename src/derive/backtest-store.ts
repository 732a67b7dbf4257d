import { createReadStream, existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { importLines } from "../ingest/importer.js";
import type { Kind } from "../ingest/kinds.js";
import { type Db, openWritable } from "../store/database.js";
import { DeriveStore } from "../store/derive-store.js";
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
 * Imports the CryptoPunks files into a new SQLite store at `path` (the nine
 * sales without a price are rejected, as the data's README says), derives
 * it, and returns the open store.
 */
export async function buildPunksStore(path: string, dir = PUNKS_DIR): Promise<{ db: Db; rejected: number }> {
  const db = openWritable(path);
  let rejected = 0;
  for (const [kind, file] of PUNKS_FILES) {
    const lines = createInterface({ input: createReadStream(join(dir, file)), crlfDelay: Infinity });
    const stats = await importLines(db, lines, { kind, skipInvalid: true });
    rejected += stats.rejected;
  }
  await deriveAll(new DeriveStore(db));
  return { db, rejected };
}

/** Every collection of the store with sales, backtested. */
export function backtestStore(db: Db): { address: string; sales: number; predictions: Prediction[] }[] {
  const store = new DeriveStore(db);
  const out = [];
  for (const address of store.collectionsToDerive()) {
    const id = store.collectionId(address)!;
    const sales = store.sales(id);
    if (sales.length === 0) continue;
    out.push({ address, sales: sales.length, predictions: backtestCollection(sales, featureSpace(store.tokens(id))) });
  }
  return out;
}
