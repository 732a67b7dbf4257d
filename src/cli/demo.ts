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

/** `--end`: unix seconds or an ISO 8601 time with its zone; not past the clock (sales there would be refused as skew). */
export function parseEnd(text: string, now = Date.now()): number {
  const seconds = /^[0-9]{1,11}$/.test(text) ? Number(text) : /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2}))?$/.test(text) ? Date.parse(text) / 1000 : NaN;
  if (!Number.isFinite(seconds)) throw new CliError(`--end must be unix seconds or an ISO 8601 time such as 2026-11-01T00:00:00Z, got ${JSON.stringify(text)}`);
  const end = Math.floor(seconds);
  if (end > Math.floor(now / 1000)) throw new CliError(`--end must not be past this machine's clock (${new Date(now).toISOString()}), got ${JSON.stringify(text)}`);
  if (end < 1_500_000_000) throw new CliError(`--end must be after 2017-07-14 (the demo spans the two years before it), got ${JSON.stringify(text)}`);
  return end;
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

/** `end` is `--end`'s text: the market's last instant, the clock when absent. */
export async function runDemo(dbPath: string, seedText: string, scaleText: string, endText?: string): Promise<DemoResult> {
  const seed = parseSeed(seedText);
  const scale = parseScale(scaleText);
  const end = endText === undefined ? undefined : parseEnd(endText);
  if (!isPostgresUrl(dbPath) && existsSync(dbPath)) process.stderr.write(`${dbPath} exists: demo records are upserted into it\n`);
  const store = await openWritableStore(dbPath, { migrateEmpty: true });
  try {
    const started = performance.now();
    const result = await buildDemo(store, seed, scale, reporter(), end);
    for (const d of result.derived) process.stderr.write(`${describe(d)}\n`);
    process.stderr.write(`demo store ${store.description} ready in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return result;
  } finally {
    await store.close();
  }
}
