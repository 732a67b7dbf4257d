import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { BIN } from "../src/cli/run-sync.js";
import { ensureJetStream, type JetStreamIngestOptions } from "../src/transport/jetstream/ingest-consumer.js";

// The JetStream side of bench:jetstream and of the consume tests: an
// indexer's publisher (records as NDJSON messages to PREFIX.KIND, many
// acknowledgements in flight at once), the consumer's backlog as the
// server counts it, the dead letters, and `marketdata consume` as a
// process that can be killed.

export interface Publisher {
  /** Publishes one message (NDJSON lines) and resolves once JetStream stored it; at most `window` wait at once. */
  publish(subject: string, lines: readonly string[]): Promise<void>;
  /** Waits for every publish still in flight. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export async function openPublisher(servers: string, window = 512): Promise<Publisher> {
  const nc: NatsConnection = await connect({ servers: servers.split(",") });
  const js = jetstream(nc);
  const inflight = new Set<Promise<unknown>>();
  let failure: unknown;
  return {
    async publish(subject, lines) {
      while (inflight.size >= window) await Promise.race(inflight);
      if (failure !== undefined) throw failure;
      const p = js.publish(subject, lines.join("\n")).catch((err: unknown) => {
        failure ??= err;
      });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    },
    async flush() {
      await Promise.all(inflight);
      if (failure !== undefined) throw failure;
    },
    async close() {
      await Promise.all(inflight);
      await nc.drain();
    },
  };
}

/** Creates the stream, the dead-letter stream and the durable consumer (as `consume` would), before anything is published. */
export async function prepareJetStream(o: JetStreamIngestOptions): Promise<void> {
  const nc = await connect({ servers: o.servers.split(",") });
  try {
    await ensureJetStream(await jetstreamManager(nc), o);
  } finally {
    await nc.close();
  }
}

/** Messages the durable consumer has not yet had acknowledged (waiting, or delivered and unacknowledged). */
export async function backlog(o: Pick<JetStreamIngestOptions, "servers" | "stream" | "durable">): Promise<number> {
  const nc = await connect({ servers: o.servers.split(",") });
  try {
    const info = await (await jetstreamManager(nc)).consumers.info(o.stream, o.durable);
    return info.num_pending + info.num_ack_pending;
  } finally {
    await nc.close();
  }
}

/** Every dead letter: its record and its headers. */
export async function deadLetters(o: Pick<JetStreamIngestOptions, "servers" | "stream">): Promise<{ text: string; headers: Record<string, string> }[]> {
  const nc = await connect({ servers: o.servers.split(",") });
  try {
    const jsm = await jetstreamManager(nc);
    const stream = `${o.stream}_DEAD`;
    const { state } = await jsm.streams.info(stream);
    const out: { text: string; headers: Record<string, string> }[] = [];
    for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m === null) continue;
      const headers: Record<string, string> = {};
      for (const k of m.header?.keys() ?? []) headers[k] = m.header!.get(k);
      out.push({ text: m.string(), headers });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Removes the streams (and so the consumer) of a run. */
export async function dropJetStream(o: Pick<JetStreamIngestOptions, "servers" | "stream">): Promise<void> {
  const nc = await connect({ servers: o.servers.split(",") });
  try {
    const jsm = await jetstreamManager(nc);
    for (const s of [o.stream, `${o.stream}_DEAD`]) await jsm.streams.delete(s).catch(() => false);
  } finally {
    await nc.close();
  }
}

export interface ConsumeProcess {
  child: ChildProcess;
  output(): string;
  /** Sends `signal` and resolves once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/** `marketdata consume ARGS` as a process of its own, its output in a file. */
export function startConsume(args: string[]): ConsumeProcess {
  const dir = mkdtempSync(join(tmpdir(), "marketdata-consume-"));
  const logFile = join(dir, "consume.log");
  const out = openSync(logFile, "w");
  const child = spawn(process.execPath, [BIN, "consume", ...args], { stdio: ["ignore", out, out] });
  closeSync(out);
  let final: string | undefined;
  const output = () => final ?? readFileSync(logFile, "utf8");
  child.once("exit", () => {
    final = readFileSync(logFile, "utf8");
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    child,
    output,
    stop: (signal = "SIGTERM") =>
      new Promise<void>((done) => {
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once("exit", () => done());
        child.kill(signal);
      }),
  };
}
