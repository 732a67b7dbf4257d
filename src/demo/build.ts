import { deriveAll, type DeriveResult } from "../derive/derive.js";
import { importLines } from "../ingest/importer.js";
import type { ImportStats } from "../ingest/importer.js";
import type { WritableStore } from "../store/ports/writes.js";
import type { Kind } from "../domain/kinds/index.js";
import { DEMO_KINDS, generateDemo, type Scale } from "./generate.js";

// The demo store is built the way an operator builds a real one: generated
// records go through the NDJSON importer (as text lines) and then derive.


export interface DemoProgress {
  startKind(kind: Kind, rows: number): void;
  progress(kind: Kind, rows: number): void;
  endKind(kind: Kind, stats: ImportStats, seconds: number): void;
  deriving(): void;
}

export interface DemoResult {
  imported: Record<string, ImportStats>;
  derived: DeriveResult[];
}

/** `end`: the market's last instant (unix seconds), the clock when absent. */
export async function buildDemo(store: WritableStore, seed: number, scale: Scale, progress?: DemoProgress, end?: number): Promise<DemoResult> {
  const data = generateDemo(seed, scale, end);
  const imported: Record<string, ImportStats> = {};
  for (const kind of DEMO_KINDS) {
    const records = data[kind];
    progress?.startKind(kind, records.length);
    const started = performance.now();
    imported[kind] = await importLines(store.records, asLines(records), {
      kind,
      skipInvalid: false,
      onProgress: (s) => progress?.progress(kind, s.lines),
    });
    progress?.endKind(kind, imported[kind]!, (performance.now() - started) / 1000);
  }
  progress?.deriving();
  return { imported, derived: await deriveAll(store.derive) };
}

async function* asLines(records: readonly object[]): AsyncIterable<string> {
  for (const r of records) yield JSON.stringify(r);
}
