import { isAddress } from "../domain/formats.js";
import { deriveAll, type DeriveResult } from "../derive/derive.js";
import { DeriveStore } from "../store/derive-store.js";
import { openWritable } from "../store/database.js";
import { CliError } from "./errors.js";

export function runDerive(dbPath: string, collection: string | undefined): DeriveResult[] {
  if (collection !== undefined && !isAddress(collection)) {
    throw new CliError(`--collection must be 0x followed by 40 hex characters, got ${JSON.stringify(collection)}`);
  }
  const only = collection?.toLowerCase();
  const db = openWritable(dbPath);
  try {
    if (only !== undefined && new DeriveStore(db).collectionId(only) === undefined) {
      throw new CliError(`collection ${only} not found in ${dbPath}`);
    }
    const results = deriveAll(db, only);
    for (const r of results) process.stderr.write(`${describe(r)}\n`);
    if (results.length === 0) process.stderr.write("nothing to derive: the store has no tokens or sales\n");
    return results;
  } finally {
    db.close();
  }
}

export function describe(r: DeriveResult): string {
  const rarity =
    r.tokens > 0
      ? `rarity of ${r.tokens} tokens (H = ${r.entropy.toFixed(5)} bits) in ${r.rarityMs.toFixed(0)} ms`
      : "no tokens, rarity kept as is";
  const appraisals =
    r.sales > 0 ? `${r.appraisals} appraisals from ${r.sales} sales in ${r.appraisalMs.toFixed(0)} ms` : "no sales, no appraisals";
  return `derived ${r.contractAddress}: ${rarity}; ${appraisals}`;
}
