import { collectionRef, DEFAULT_CHAIN, describeRef, isChain, unknownChain } from "../domain/chains.js";
import { isAddress } from "../domain/formats.js";
import { deriveAll, type DeriveResult } from "../derive/derive.js";
import type { DerivedWrite } from "../store/ports/derive.js";
import { openWritableStore } from "../store/open.js";
import { CliError } from "./errors.js";

export async function runDerive(
  dbPath: string,
  collection: string | undefined,
  replaceImported = false,
  maxClockSkewSeconds?: number,
  chain: string = DEFAULT_CHAIN,
): Promise<DeriveResult[]> {
  if (collection !== undefined && !isAddress(collection)) {
    throw new CliError(`--collection must be 0x followed by 40 hex characters, got ${JSON.stringify(collection)}`);
  }
  if (!isChain(chain)) throw new CliError(`--chain ${unknownChain(chain)}`);
  const only = collection === undefined ? undefined : collectionRef(chain, collection.toLowerCase());
  const store = await openWritableStore(dbPath);
  try {
    const repo = store.derive;
    if (only !== undefined && (await repo.collectionId(only)) === undefined) {
      throw new CliError(`collection ${describeRef(only)} not found in ${store.description}`);
    }
    const results = await deriveAll(repo, only, { replaceImported, ...(maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds }) });
    for (const r of results) process.stderr.write(`${describe(r)}\n`);
    if (results.length === 0) process.stderr.write("nothing to derive: the store has no tokens or sales\n");
    return results;
  } finally {
    await store.close();
  }
}

export function describe(r: DeriveResult): string {
  const rarity =
    r.tokens > 0
      ? `rarity of ${r.tokens} tokens (H = ${r.entropy.toFixed(5)} bits) in ${r.rarityMs.toFixed(0)} ms`
      : "no tokens, rarity kept as is";
  const appraisals =
    r.sales > 0 ? `${r.appraisals} appraisals from ${r.sales} sales in ${r.appraisalMs.toFixed(0)} ms` : "no sales, no appraisals";
  const imported = [provenance("rarity", r.rarityWrite), provenance("appraisals", r.appraisalWrite)].filter((x) => x !== "");
  return `derived ${r.contractAddress}: ${rarity}; ${appraisals}; written in one transaction in ${r.writeMs.toFixed(0)} ms${imported.map((x) => `\n  ${x}`).join("")}`;
}

/** What happened to an operator's imported rows: the line derive prints when there are any. */
function provenance(what: string, w: DerivedWrite | undefined): string {
  if (w === undefined || (w.imported === 0 && w.replacedImported === 0)) return "";
  if (w.replacedImported > 0) {
    return `${what}: replaced ${w.replacedImported} imported rows with computed ones (--replace-imported); ${w.imported} imported rows without a computed value kept`;
  }
  return `${what}: kept ${w.imported} imported rows (${w.keptImported} of them instead of a computed value); derive --replace-imported overwrites them`;
}
