import { createReadStream, createWriteStream, rmSync, statSync, type WriteStream } from "node:fs";
import { openWritableStore } from "../store/open.js";
import { importLines } from "../ingest/importer.js";
import { lineBatches } from "../ingest/line-batches.js";
import { ImportCancelled, ImportRejected, type ImportStats, type LineError } from "../ingest/importer.js";
import { isKind, type Kind, KINDS } from "../domain/kinds/index.js";
import { CliError } from "./errors.js";
import { describeProblems, MAX_PROBLEMS } from "../domain/kinds/fields.js";
import { progressBar } from "./progress.js";

const MAX_PRINTED_ERRORS = 50;
/** Bytes read from the file at once (the stream default is 64 KiB). */
const READ_CHUNK_BYTES = 1 << 20;

export interface ImportCommand {
  db: string;
  kind: string;
  file: string;
  skipInvalid: boolean;
  /** How far past the clock a sale's or listing's time may be; the default when absent. */
  maxClockSkewSeconds?: number;
}

/** An import's KIND and FILE checked (also by import --follow): the kind, the input's name for messages, its size (0 for stdin). */
export function importInput(kind: string, file: string): { kind: Kind; name: string; size: number } {
  if (!isKind(kind)) throw new CliError(`KIND must be one of ${KINDS.join(", ")}, got ${JSON.stringify(kind)}`);
  if (file === "-") return { kind, name: "stdin", size: 0 };
  try {
    return { kind, name: file, size: statSync(file).size };
  } catch {
    throw new CliError(`cannot read ${file}: no such file`);
  }
}

export async function runImport(cmd: ImportCommand): Promise<ImportStats> {
  const { kind, name, size } = importInput(cmd.kind, cmd.file);
  const fromStdin = cmd.file === "-";
  // Read a chunk at a time, and only once the store is open: a stream is
  // paused until its first read.
  const input = fromStdin ? process.stdin : createReadStream(cmd.file, { highWaterMark: READ_CHUNK_BYTES });
  const lines = lineBatches(input);

  const rejectsPath = `${fromStdin ? "stdin" : cmd.file}.rejects.ndjson`;
  const rejects = cmd.skipInvalid ? createWriteStream(rejectsPath) : undefined;
  let printed = 0;
  const onReject = (e: LineError) => {
    for (const p of e.problems.slice(0, MAX_PROBLEMS)) {
      if (printed++ < MAX_PRINTED_ERRORS) process.stderr.write(`${name}:${e.line}: ${describeProblems([p])}\n`);
    }
    rejects?.write(`${JSON.stringify({ line: e.line, errors: e.problems.slice(0, MAX_PROBLEMS).map((p) => describeProblems([p])), input: e.input })}\n`);
  };

  let interrupted = false;
  const onSignal = () => {
    // A second signal ends the process at once (the rollback is the server's).
    if (interrupted) process.exit(130);
    interrupted = true;
    // Stops the wait for more input (stdin); the import then rolls back.
    input.destroy();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let store;
  try {
    store = await openWritableStore(cmd.db, { migrateEmpty: true });
  } catch (err) {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    rejects?.end();
    throw err;
  }
  const bar = progressBar(`import ${kind}`, size);
  const started = process.hrtime.bigint();
  try {
    const stats = await importLines(store.records, lines, {
      kind: kind,
      skipInvalid: cmd.skipInvalid,
      onReject,
      onProgress: (s, bytes) => bar.update(s.lines, bytes),
      cancelled: () => interrupted,
      ...(cmd.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: cmd.maxClockSkewSeconds }),
    });
    bar.stop();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    process.stderr.write(`${summary(kind, name, stats, seconds)}\n`);
    if (stats.rejected > 0) process.stderr.write(`rejected lines and reasons: ${rejectsPath}\n`);
    else if (rejects) await closeAndRemove(rejects, rejectsPath);
    return stats;
  } catch (err) {
    bar.stop();
    if (err instanceof ImportRejected) {
      if (printed > MAX_PRINTED_ERRORS) process.stderr.write(`... and ${printed - MAX_PRINTED_ERRORS} more problems\n`);
      throw new CliError(
        `${name}: ${err.stats.rejected} of ${err.stats.lines} lines invalid; nothing was written (use --skip-invalid to import the valid ones)`,
      );
    }
    // A destroyed input can also end the read with its own error.
    if (err instanceof ImportCancelled || interrupted) throw new CliError(`${name}: interrupted; nothing was written`);
    throw err;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    rejects?.end();
    await store.close();
  }
}

async function closeAndRemove(stream: WriteStream, path: string): Promise<void> {
  await new Promise<void>((resolve) => stream.end(resolve));
  rmSync(path, { force: true });
}

export function summary(kind: string, name: string, s: ImportStats, seconds: number): string {
  const rate = seconds > 0 ? Math.round(s.lines / seconds) : s.lines;
  return (
    `imported ${kind} from ${name}: ${s.lines} rows read, ${s.inserted} inserted, ${s.updated} updated, ` +
    `${s.unchanged} unchanged, ${s.rejected} rejected in ${seconds.toFixed(2)} s (${rate} rows/s)`
  );
}
