import { closeSync, openSync, readSync, statSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import { Ingest, type IngestLine, rejectionsOf } from "../service/ingest-service.js";
import { MAX_BATCH_RECORDS } from "../domain/ingest-limits.js";
import { openIngestWriter, openWritableStore } from "../store/open.js";
import { CliError } from "./errors.js";
import { importInput } from "./import.js";
import { NOT_UTF8, parseLine } from "../domain/kinds/fields.js";
import { type Line, lineBatches, NotUtf8, splitLines } from "../ingest/line-batches.js";

// `marketdata import KIND FILE --follow`: for feeds that are files. Reads
// FILE from its start and then every line appended to it (or stdin, to its
// end), and commits as lines arrive: whatever has come in within FLUSH_MS
// of the first pending line (at most MAX_BATCH_RECORDS) is one batch, written
// through the same path as the ingest API (service/ingest-service.ts, the
// store's IngestWriter: a CLI follower and running servers take turns at
// the store's write lock). Each batch is all or nothing: an invalid line
// stops the follower (exit 1, naming it; the batches before it stay),
// unless --skip-invalid, which reports and skips it. SIGINT or SIGTERM
// commits what is pending, then exits 0.

/** How long a line waits for others to share its commit. */
const FLUSH_MS = 200;
/** How often a followed file is checked for new bytes. */
const POLL_MS = 100;
const CHUNK = 1 << 20;

export interface FollowCommand {
  db: string;
  kind: string;
  file: string;
  skipInvalid: boolean;
  maxClockSkewSeconds?: number;
}

export async function runFollow(cmd: FollowCommand): Promise<void> {
  const { kind, name } = importInput(cmd.kind, cmd.file);
  // As import does: a store created (or an empty PostgreSQL database migrated) if need be.
  await (await openWritableStore(cmd.db, { migrateEmpty: true })).close();
  const writer = openIngestWriter(cmd.db);
  const ingest = new Ingest(writer, cmd.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: cmd.maxClockSkewSeconds });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  let pending: IngestLine[] = [];
  let firstPendingAt = 0;
  const totals = { lines: 0, accepted: 0, duplicates: 0, rejected: 0 };
  const flush = async () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    try {
      const r = await ingest.batch(kind, batch, cmd.skipInvalid);
      totals.lines += batch.length;
      totals.accepted += r.accepted;
      totals.duplicates += r.duplicates;
      totals.rejected += r.rejected.length;
      for (const x of r.rejected) process.stderr.write(`${name}:${x.line}: ${x.message} (skipped)\n`);
      process.stderr.write(`${name}: committed ${batch.length} lines: ${r.accepted} accepted, ${r.duplicates} duplicates, ${r.rejected.length} rejected\n`);
    } catch (err) {
      const detail = err instanceof ConnectError ? rejectionsOf(err) : undefined;
      if (detail !== undefined) {
        for (const x of detail.rejected) process.stderr.write(`${name}:${x.line}: ${x.message}\n`);
        throw new CliError(`${name}: invalid line(s) in a batch; that batch was not written, the ones before it were (use --skip-invalid to skip such lines)`);
      }
      if (err instanceof ConnectError && err.code === Code.Unavailable) throw new CliError(`${name}: ${err.rawMessage}`);
      throw err;
    }
  };

  try {
    let line = 0;
    const lines = cmd.file === "-" ? stdinLines(stop.signal) : appendedLines(cmd.file, stop.signal);
    for await (const text of withTicks(lines, FLUSH_MS / 4)) {
      if (text !== undefined) {
        line += 1;
        const trimmed = text instanceof NotUtf8 ? text : text.trim();
        if (trimmed !== "") {
          if (pending.length === 0) firstPendingAt = performance.now();
          pending.push({ line, ...(trimmed instanceof NotUtf8 ? { invalid: { field: "record", reason: NOT_UTF8 } } : parseLine(trimmed)) });
        }
      }
      if (pending.length >= MAX_BATCH_RECORDS || (pending.length > 0 && performance.now() - firstPendingAt >= FLUSH_MS)) await flush();
    }
    await flush();
    process.stderr.write(
      `${name}: done: ${totals.lines} lines, ${totals.accepted} accepted, ${totals.duplicates} duplicates, ${totals.rejected} rejected\n`,
    );
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await writer.close();
  }
}

/** The lines of stdin, to its end (or until `signal`). */
async function* stdinLines(signal: AbortSignal): AsyncGenerator<Line> {
  signal.addEventListener("abort", () => process.stdin.destroy(), { once: true });
  try {
    for await (const batch of lineBatches(process.stdin)) yield* batch;
  } catch (err) {
    // Destroyed by the signal: what was read is all there is.
    if (!signal.aborted) throw err;
  }
}

/**
 * The lines of `path`, then every complete line appended to it, until
 * `signal` (and the end of what was written before it). A file cut shorter
 * than what was read (rotated or truncated) is read again from its start.
 */
async function* appendedLines(path: string, signal: AbortSignal): AsyncGenerator<Line> {
  const fd = openSync(path, "r");
  const buffer = Buffer.alloc(CHUNK);
  let position = 0;
  // The bytes after the last newline read (a character may be split across reads).
  let rest = Buffer.alloc(0);
  try {
    for (;;) {
      const n = readSync(fd, buffer, 0, CHUNK, position);
      if (n === 0) {
        // Stopped: what was appended before the signal has just been read.
        if (signal.aborted) return;
        if (statSync(path).size < position) {
          position = 0;
          rest = Buffer.alloc(0);
          continue;
        }
        await sleep(POLL_MS, undefined, { signal }).catch(() => {});
        continue;
      }
      position += n;
      const bytes = Buffer.concat([rest, buffer.subarray(0, n)]);
      const last = bytes.lastIndexOf(0x0a);
      if (last < 0) {
        rest = bytes;
        continue;
      }
      rest = bytes.subarray(last + 1);
      yield* splitLines(bytes.subarray(0, last));
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * The items of `source`, and `undefined` every `ms` while it is quiet (so
 * pending lines are flushed on time). One timer at a time, however many
 * items come between two ticks.
 */
async function* withTicks<T>(source: AsyncIterable<T>, ms: number): AsyncGenerator<T | undefined> {
  const it = source[Symbol.asyncIterator]();
  let next = it.next();
  let tick: Promise<"tick"> | undefined;
  for (;;) {
    tick ??= sleep(ms).then(() => "tick" as const);
    const r = await Promise.race([next, tick]);
    if (r === "tick") {
      tick = undefined;
      yield undefined;
      continue;
    }
    if (r.done) return;
    yield r.value;
    next = it.next();
  }
}

