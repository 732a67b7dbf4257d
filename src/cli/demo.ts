import { existsSync } from "node:fs";
import { buildDemo, type DemoProgress, type DemoResult } from "../demo/build.js";
import { SCALES, type Scale } from "../demo/generate.js";
import { isPostgresUrl } from "../store/open.js";
import { openWritableStore } from "../store/open.js";
import { describe } from "./derive.js";
import { CliError } from "./errors.js";
import { summary } from "./import.js";
import { type Progress, progressBar } from "./progress.js";

export function parseSeed(text: string): number {
  if (!/^[0-9]{1,10}$/.test(text) || Number(text) > 0xffffffff) {
    throw new CliError(`--seed must be an integer from 0 to 4294967295, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

export function parseScale(text: string): Scale {
  if (!(text in SCALES)) throw new CliError(`--scale must be one of ${Object.keys(SCALES).join(", ")}, got ${JSON.stringify(text)}`);
  return text as Scale;
}

/** Progress on stderr: a bar per kind on a terminal, a summary line per kind always. */
function reporter(): DemoProgress {
  let bar: Progress | undefined;
  return {
    startKind(kind, rows) {
      bar = progressBar(`demo ${kind.padEnd(11)}`, rows);
    },
    progress(_kind, rows) {
      bar?.update(rows, rows);
    },
    endKind(kind, stats, seconds) {
      bar?.stop();
      process.stderr.write(`${summary(kind, "demo generator", stats, seconds)}\n`);
    },
    deriving() {
      process.stderr.write("deriving rarity and appraisals...\n");
    },
  };
}

export async function runDemo(dbPath: string, seedText: string, scaleText: string): Promise<DemoResult> {
  const seed = parseSeed(seedText);
  const scale = parseScale(scaleText);
  if (!isPostgresUrl(dbPath) && existsSync(dbPath)) process.stderr.write(`${dbPath} exists: demo records are upserted into it\n`);
  const store = await openWritableStore(dbPath, { migrateEmpty: true });
  try {
    const started = performance.now();
    const result = await buildDemo(store, seed, scale, reporter());
    for (const d of result.derived) process.stderr.write(`${describe(d)}\n`);
    process.stderr.write(`demo store ${store.description} ready in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return result;
  } finally {
    await store.close();
  }
}
