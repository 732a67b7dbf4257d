import { Code, ConnectError } from "@connectrpc/connect";
import { AckPolicy, type Consumer, type JetStreamClient, type JsMsg, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { connect, headers, type NatsConnection, nanos } from "@nats-io/transport-node";
import { isKind, type Kind } from "../../domain/kinds/index.js";
import { NOT_UTF8, parseLine } from "../../domain/kinds/fields.js";
import { NotUtf8, splitLines } from "../../ingest/line-batches.js";
import type { Ingest, IngestLine } from "../../service/ingest-service.js";
import { MAX_BATCH_RECORDS } from "../../domain/ingest-limits.js";
import { StoreUnavailableError } from "../../store/ports/errors.js";

// Ingest from NATS JetStream (issue 37): indexers publish NDJSON records to
// SUBJECT_PREFIX.KIND (one or more lines per message, any of the six
// kinds); a durable pull consumer, shared by every process that runs
// `marketdata consume` with the same name, hands them out. Records go
// through the ingest API's own path (service/ingest-service.ts: the same
// checks, the store's IngestWriter and its group commit), gathered into
// commits of up to --batch records; a message is acknowledged only once
// everything in it is committed (or dead-lettered), so a consumer killed at
// any point loses nothing: what it had not acknowledged is delivered again,
// and the store's natural keys count what it had committed as duplicates.
// An invalid record is published to the dead-letter subject with the
// reason (headers) and never holds up the stream. Backpressure: at most
// --pending messages are pulled ahead, and no more are read while --inflight
// commits wait on the store; an unavailable store is retried, the messages
// held (their ack deadline extended), not dropped.

export interface JetStreamIngestOptions {
  /** nats://host:port[,nats://...] */
  servers: string;
  stream: string;
  subjectPrefix: string;
  durable: string;
  deadLetter: string;
  /** Records per commit at most (a message larger than this is a commit of its own). */
  batch: number;
  /** Messages pulled ahead of processing at most. */
  pending: number;
  /** Commits waiting on the store at once at most. */
  inflight: number;
  /** How long the first record of a commit waits for others (ms); FLUSH_MS when absent. */
  flushMs?: number;
  /** The consumer's ack wait (seconds): an unacknowledged message is delivered again after it. */
  ackWaitSeconds: number;
}


export interface ConsumeTotals {
  messages: number;
  /** Messages the server had delivered before (to this or another consumer) without an acknowledgement. */
  redelivered: number;
  records: number;
  accepted: number;
  /** Records the store already held as they are: a redelivery's, or a sender's repeat. */
  duplicates: number;
  deadLettered: number;
  commits: number;
  /** Commits tried again because the store was unavailable. */
  retries: number;
}

/** What the consumer reports as it goes. */
export interface ConsumeEvents {
  deadLettered?(subject: string, seq: number, line: number, reason: string): void;
  storeUnavailable?(err: unknown, retryInMs: number): void;
  /** A dead letter JetStream did not take (its message is held and the publish tried again). */
  deadLetterFailed?(err: unknown, retryInMs: number): void;
}

/** Bytes kept below the server's max_payload for a dead letter's headers and the protocol's own. */
const HEADER_ROOM = 4096;
/** NATS's default max_payload, when the server did not say its own. */
const DEFAULT_MAX_PAYLOAD = 1_048_576;
/** How long the first record of a commit waits for others (ms): a live feed's records share a commit without waiting for a full batch. */
const FLUSH_MS = 20;

/**
 * The copy of a record a dead letter carries: all of it when it fits under
 * `room` bytes, else its first `room` bytes (cut at a character boundary)
 * and how long it was. The whole stays in the stream at its sequence.
 */
export function deadLetterBody(text: string | Uint8Array, room: number): { data: Uint8Array; cutFrom?: number } {
  const bytes = typeof text === "string" ? Buffer.from(text) : Buffer.from(text.buffer, text.byteOffset, text.byteLength);
  if (bytes.length <= room) return { data: bytes };
  let end = Math.max(0, room);
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { data: bytes.subarray(0, end), cutFrom: bytes.length };
}

interface Entry {
  msg: JsMsg;
  kind: Kind;
  /** The message's records (parsed lines), numbered within it. */
  lines: IngestLine[];
  /** The raw text of each record, by its number within the message (for the dead-letter subject). */
  texts: Map<number, string>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A running consumer: stop() finishes what it took (commits and acknowledges), then closes. */
export interface RunningConsumer {
  readonly totals: ConsumeTotals;
  /** Resolves when the consumer stopped (stop(), or a failure: rejects). */
  readonly done: Promise<void>;
  stop(): Promise<void>;
}

/** Creates the stream, the dead-letter stream and the durable consumer when absent (an existing one is used as it is). */
export async function ensureJetStream(jsm: JetStreamManager, o: JetStreamIngestOptions): Promise<void> {
  const exists = async (f: () => Promise<unknown>) =>
    f().then(
      () => true,
      () => false,
    );
  if (!(await exists(() => jsm.streams.info(o.stream)))) {
    await jsm.streams.add({ name: o.stream, subjects: [`${o.subjectPrefix}.>`] });
  }
  const dead = `${o.stream}_DEAD`;
  if (!(await exists(() => jsm.streams.info(dead)))) {
    await jsm.streams.add({ name: dead, subjects: [o.deadLetter] });
  }
  if (!(await exists(() => jsm.consumers.info(o.stream, o.durable)))) {
    await jsm.consumers.add(o.stream, {
      durable_name: o.durable,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(o.ackWaitSeconds * 1000),
      filter_subject: `${o.subjectPrefix}.>`,
      // Several consumers may each hold --pending: the server's bound is theirs together.
      max_ack_pending: -1,
    });
  }
}

export async function startJetStreamIngest(ingest: Ingest, o: JetStreamIngestOptions, events: ConsumeEvents = {}): Promise<RunningConsumer> {
  const nc: NatsConnection = await connect({ servers: o.servers.split(","), name: `marketdata consume ${o.durable}`, maxReconnectAttempts: -1 });
  try {
    await ensureJetStream(await jetstreamManager(nc), o);
  } catch (err) {
    await nc.close();
    throw err;
  }
  const js: JetStreamClient = jetstream(nc);
  const consumer: Consumer = await js.consumers.get(o.stream, o.durable);
  const totals: ConsumeTotals = { messages: 0, redelivered: 0, records: 0, accepted: 0, duplicates: 0, deadLettered: 0, commits: 0, retries: 0 };
  const prefix = `${o.subjectPrefix}.`;
  let stopping = false;

  /**
   * Publishes one record (or a whole message) to the dead-letter subject,
   * with why and where it came from; resolves once JetStream stored it. A
   * dead letter always fits the server's max_payload (a copy cut short says
   * so; the stream and sequence find the original), and one JetStream does
   * not take is tried again, its message held: no message stops the consumer.
   */
  const deadLetter = async (msg: JsMsg, line: number, text: string | Uint8Array, reason: string) => {
    const h = headers();
    h.set("Marketdata-Reason", reason.replace(/[\r\n]+/g, " ").slice(0, 1000));
    h.set("Marketdata-Subject", msg.subject);
    h.set("Marketdata-Stream", o.stream);
    h.set("Marketdata-Stream-Sequence", String(msg.seq));
    h.set("Marketdata-Line", String(line));
    let { data, cutFrom } = deadLetterBody(text, (nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD) - HEADER_ROOM);
    for (let delay = 100; ; delay = Math.min(delay * 2, 5000)) {
      if (cutFrom !== undefined) h.set("Marketdata-Truncated", `the first ${data.length} of ${cutFrom} bytes`);
      try {
        // The message id makes a redelivered message's dead letters one each (JetStream's duplicate window).
        await js.publish(o.deadLetter, data, { headers: h, msgID: `${o.stream}:${msg.seq}:${line}` });
        break;
      } catch (err) {
        if (/max_payload|maximum payload/i.test(String(err)) && data.length > 0) {
          // Smaller than this server's bound after all: the headers alone name the original.
          cutFrom ??= data.length;
          data = new Uint8Array(0);
          continue;
        }
        if (stopping) throw err;
        events.deadLetterFailed?.(err, delay);
        msg.working();
        await sleep(delay);
      }
    }
    totals.deadLettered++;
    events.deadLettered?.(msg.subject, msg.seq, line, reason);
  };

  /** A message's records, or undefined after dead-lettering all of it (an unknown kind, too many records). */
  const read = async (msg: JsMsg): Promise<Entry | undefined> => {
    const kind = msg.subject.startsWith(prefix) ? msg.subject.slice(prefix.length) : "";
    const lines: IngestLine[] = [];
    const texts = new Map<number, string>();
    let n = 0;
    for (const l of splitLines(Buffer.from(msg.data))) {
      n++;
      if (l instanceof NotUtf8) {
        lines.push({ line: n, invalid: { field: "record", reason: NOT_UTF8 } });
        texts.set(n, "");
        continue;
      }
      const t = l.trim();
      if (t === "") continue;
      texts.set(n, t);
      lines.push({ line: n, ...parseLine(t) });
    }
    const whole = !isKind(kind)
      ? `the subject ${msg.subject} names no kind: publish to ${prefix}KIND (collections, tokens, sales, listings, offers, transfers)`
      : lines.length > MAX_BATCH_RECORDS
        ? `a message holds at most ${MAX_BATCH_RECORDS} records (the ingest API's batch bound), got ${lines.length}`
        : undefined;
    if (whole !== undefined) {
      await deadLetter(msg, 0, msg.data, whole);
      msg.ack();
      totals.messages++;
      return undefined;
    }
    return { msg, kind: kind as Kind, lines, texts };
  };

  /** Commits a group of messages of one kind; dead-letters invalid records; acknowledges every message once done. */
  const commit = async (kind: Kind, group: Entry[]): Promise<void> => {
    const lines: IngestLine[] = [];
    const origin: { entry: Entry; line: number }[] = [];
    for (const e of group) {
      for (const l of e.lines) {
        origin.push({ entry: e, line: l.line });
        lines.push({ ...l, line: origin.length });
      }
    }
    let result;
    for (let delay = 100; ; delay = Math.min(delay * 2, 5000)) {
      try {
        result = await ingest.batch(kind, lines, true);
        break;
      } catch (err) {
        const unavailable = err instanceof StoreUnavailableError || (err instanceof ConnectError && err.code === Code.Unavailable);
        if (unavailable) {
          // Held, not dropped: the messages' deadlines are extended while the store comes back.
          totals.retries++;
          events.storeUnavailable?.(err, delay);
          for (const e of group) e.msg.working();
          await sleep(delay);
          continue;
        }
        if (group.length > 1) {
          // One message's records conflict with another's (or the store refused them): each message alone.
          for (const e of group) await commit(kind, [e]);
          return;
        }
        const reason = err instanceof ConnectError ? err.rawMessage : err instanceof Error ? err.message : String(err);
        const e = group[0]!;
        await Promise.all(e.lines.map((l) => deadLetter(e.msg, l.line, e.texts.get(l.line) ?? "", reason)));
        e.msg.ack();
        totals.messages++;
        return;
      }
    }
    totals.commits++;
    totals.records += lines.length;
    totals.accepted += result.accepted;
    totals.duplicates += result.duplicates;
    await Promise.all(
      result.rejected.map((r) => {
        const { entry, line } = origin[r.line - 1]!;
        return deadLetter(entry.msg, line, entry.texts.get(line) ?? "", r.message);
      }),
    );
    for (const e of group) {
      e.msg.ack();
      totals.messages++;
    }
  };

  // One group at a time, of one kind: a message of another kind sends the
  // group to the store first. The writer commits in the order it is given
  // (a collection before its sales), as one process's API batches are.
  let pending: { kind: Kind; entries: Entry[]; records: number; since: number } | undefined;
  const inflight = new Map<Promise<void>, Entry[]>();
  let failure: unknown;
  const flush = () => {
    const p = pending;
    if (p === undefined) return;
    pending = undefined;
    const c = commit(p.kind, p.entries).catch((err: unknown) => {
      failure ??= err;
    });
    inflight.set(c, p.entries);
    void c.finally(() => inflight.delete(c));
  };
  // A commit slower than the ack wait (a busy store) must not have its messages delivered again meanwhile.
  const heartbeat = setInterval(() => {
    for (const entries of inflight.values()) for (const e of entries) e.msg.working();
    for (const e of pending?.entries ?? []) e.msg.working();
  }, (o.ackWaitSeconds * 1000) / 3);
  // The first record of a group waits at most flushMs for others.
  const flushMs = o.flushMs ?? FLUSH_MS;
  const timer = setInterval(() => {
    if (pending !== undefined && performance.now() - pending.since >= flushMs) flush();
  }, Math.max(1, Math.floor(flushMs / 2)));

  const messages = await consumer.consume({ max_messages: o.pending });
  const done = (async () => {
    try {
      for await (const msg of messages) {
        if (msg.redelivered) totals.redelivered++;
        const entry = await read(msg);
        if (entry !== undefined) {
          if (pending !== undefined && (pending.kind !== entry.kind || pending.records + entry.lines.length > o.batch)) flush();
          pending ??= { kind: entry.kind, entries: [], records: 0, since: performance.now() };
          pending.entries.push(entry);
          pending.records += entry.lines.length;
          if (pending.records >= o.batch) flush();
        }
        // Backpressure: no more messages are read while the store has enough to do.
        while (inflight.size >= o.inflight) await Promise.race(inflight.keys());
        if (failure !== undefined) throw failure;
        if (stopping) break;
      }
      flush();
      await Promise.all(inflight.keys());
      if (failure !== undefined) throw failure;
    } finally {
      clearInterval(timer);
      clearInterval(heartbeat);
      await nc.drain().catch(() => {});
    }
  })();
  return {
    totals,
    done,
    async stop() {
      stopping = true;
      // What was pulled but not yet read is given back at once, for another consumer.
      messages.stop();
      await done.catch(() => {});
    },
  };
}
