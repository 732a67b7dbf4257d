import type { ConsumeConfig } from "../config/consume.js";
import { Ingest } from "../service/ingest-service.js";
import { setTimeout as sleep } from "node:timers/promises";
import { openIngestWriter, openWritableStore } from "../store/open.js";
import { StoreUnavailableError } from "../store/ports/errors.js";
import { startJetStreamIngest } from "../transport/jetstream/ingest-consumer.js";
import { CliError } from "./errors.js";

// `marketdata consume --from nats://...`: ingest from NATS JetStream
// (transport/jetstream/ingest-consumer.ts) into the store, until SIGINT or
// SIGTERM, which commit and acknowledge what was taken, then exit 0. Any
// number of these processes (on any machines) share one durable consumer.

export interface ConsumeCommand {
  db: string;
  maxClockSkewSeconds?: number;
  /** consume's own settings, validated (config/consume.ts). */
  options: ConsumeConfig;
}

export async function runConsume(cmd: ConsumeCommand): Promise<void> {
  const { options } = cmd;
  const say = (line: string) => process.stderr.write(`consume: ${line}\n`);
  let unavailableSaid = 0;
  const storeUnavailable = (err: unknown, ms: number, held = "messages held") => {
    // Once every 10 s at most: an outage would otherwise fill the log.
    if (Date.now() - unavailableSaid < 10_000) return;
    unavailableSaid = Date.now();
    say(`the store is unavailable (${err instanceof Error ? err.message : String(err)}); retrying, ${held} (next try in ${ms} ms)`);
  };
  // As import does: a store created (or an empty PostgreSQL database migrated) if need be.
  // A store that is down at start is waited for, as one that goes down later is.
  let stopped = false;
  const stopWaiting = () => (stopped = true);
  process.once("SIGINT", stopWaiting);
  process.once("SIGTERM", stopWaiting);
  try {
    for (let delay = 100; ; delay = Math.min(delay * 2, 5000)) {
      try {
        await (await openWritableStore(cmd.db, { migrateEmpty: true })).close();
        break;
      } catch (err) {
        if (!(err instanceof StoreUnavailableError)) throw err;
        storeUnavailable(err, delay, "nothing consumed yet");
        await sleep(delay);
        if (stopped) return;
      }
    }
  } finally {
    process.off("SIGINT", stopWaiting);
    process.off("SIGTERM", stopWaiting);
  }
  const writer = openIngestWriter(cmd.db);
  const ingest = new Ingest(writer, cmd.maxClockSkewSeconds === undefined ? {} : { maxClockSkewSeconds: cmd.maxClockSkewSeconds });
  const consumer = await startJetStreamIngest(ingest, options, {
    deadLettered: (subject, seq, line, reason) => say(`${subject} #${seq} record ${line}: ${reason} (to ${options.deadLetter})`),
    storeUnavailable,
    deadLetterFailed: (err, ms) => say(`a dead letter could not be published (${err instanceof Error ? err.message : String(err)}); its message is held, next try in ${ms} ms`),
  }).catch(async (err: unknown) => {
    await writer.close();
    // NATS unreachable, JetStream not enabled, a stream or consumer refused: the operator's to fix.
    throw new CliError(`NATS at ${options.servers}: ${err instanceof Error ? err.message : String(err)}`);
  });
  say(`consuming ${options.subjectPrefix}.KIND from stream ${options.stream} as ${options.durable} (${options.servers}); dead letters to ${options.deadLetter}`);
  const started = performance.now();
  const line = () => {
    const t = consumer.totals;
    const s = (performance.now() - started) / 1000;
    return `${t.messages} messages (${t.redelivered} redelivered), ${t.records} records: ${t.accepted} accepted, ${t.duplicates} duplicates, ${t.deadLettered} dead-lettered; ${t.commits} commits, ${Math.round(t.records / Math.max(s, 0.001))} records/s`;
  };
  const progress = options.progressMs > 0 ? setInterval(() => say(line()), options.progressMs) : undefined;
  const stop = () => void consumer.stop();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    await consumer.done;
    say(`stopped: ${line()}`);
  } finally {
    if (progress !== undefined) clearInterval(progress);
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await writer.close();
  }
}
