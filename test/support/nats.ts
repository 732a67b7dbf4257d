import net from "node:net";
import { CONSUME_DEFAULTS } from "../../src/config/settings.js";
import type { JetStreamIngestOptions } from "../../src/transport/jetstream/ingest-consumer.js";

// NATS with JetStream for tests: a real server at 127.0.0.1:4222 (or
// MARKETDATA_TEST_NATS); each test uses streams and subjects of its own.
// Without one the tests that need it skip with a visible message, unless
// MARKETDATA_TEST_NATS is set (CI).

export const NATS_URL = process.env.MARKETDATA_TEST_NATS || "nats://127.0.0.1:4222";

export const natsUp = await new Promise<boolean>((resolve) => {
  const u = new URL(NATS_URL);
  const socket = net.connect({ host: u.hostname, port: Number(u.port || 4222) });
  const done = (ok: boolean) => {
    socket.destroy();
    resolve(ok);
  };
  socket.setTimeout(1000, () => done(false));
  // The server speaks first (INFO): a listener that is not NATS says nothing.
  socket.once("data", (b) => done(b.toString().startsWith("INFO")));
  socket.once("error", () => done(false));
});

/** True when the tests needing NATS must skip; says so once per caller. */
export function skipNats(what: string): boolean {
  const skip = !natsUp && !process.env.MARKETDATA_TEST_NATS;
  if (skip) console.warn(`SKIPPED: ${what}: no NATS at ${NATS_URL} (set MARKETDATA_TEST_NATS to require it)`);
  return skip;
}

/** A test's own stream, subjects, consumer and dead-letter subject (named after `tag` and the process), on the test server. */
export function testJetStream(tag: string, overrides: Partial<JetStreamIngestOptions>): JetStreamIngestOptions {
  const t = `${tag}${process.pid}`;
  return { ...CONSUME_DEFAULTS, ackWaitSeconds: CONSUME_DEFAULTS.ackWait / 1000, servers: NATS_URL, stream: `TEST_${t}`, subjectPrefix: `${t}.ingest`, durable: `d_${t}`, deadLetter: `${t}.dead`, ...overrides };
}
