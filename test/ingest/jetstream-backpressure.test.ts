import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { dropJetStream, openPublisher, prepareJetStream } from "../../bench/jetstream.js";
import type { Ingest, IngestLine, IngestResult } from "../../src/service/ingest-service.js";
import { StoreUnavailableError } from "../../src/store/ports/errors.js";
import { startJetStreamIngest } from "../../src/transport/jetstream/ingest-consumer.js";
import { NATS_URL, skipNats, testJetStream } from "../support/nats.js";

// The consumer's backpressure against a slow (then unavailable) store, with
// a stand-in for the ingest path: what it has taken from JetStream without
// acknowledging stays within --pending plus the commits in flight, however
// large the backlog; an unavailable store holds messages (retried), never
// drops or dead-letters them.

const o = testJetStream("bp", { batch: 50, pending: 100, inflight: 2, ackWaitSeconds: 5 });
const MESSAGES = 3000;

describe.skipIf(skipNats("the JetStream consumer's backpressure"))("the JetStream consumer against a slow store", () => {
  beforeAll(async () => {
    await dropJetStream(o);
    await prepareJetStream(o);
    const pub = await openPublisher(NATS_URL);
    for (let i = 0; i < MESSAGES; i++) await pub.publish(`${o.subjectPrefix}.sales`, [JSON.stringify({ n: i })]);
    await pub.close();
  });
  afterAll(() => dropJetStream(o));

  it("holds at most --pending plus the commits in flight unacknowledged, and retries an unavailable store", async () => {
    let calls = 0;
    let written = 0;
    const slow = {
      async batch(_kind: string, lines: readonly IngestLine[]): Promise<IngestResult> {
        calls++;
        // Unavailable for the 5th to 8th attempts: held and retried, not dropped.
        if (calls >= 5 && calls <= 8) throw new StoreUnavailableError("down for a moment");
        await new Promise((r) => setTimeout(r, 100));
        written += lines.length;
        return { accepted: lines.length, duplicates: 0, rejected: [] };
      },
    } as unknown as Ingest;
    const consumer = await startJetStreamIngest(slow, o);
    const nc = await connect({ servers: NATS_URL });
    const jsm = await jetstreamManager(nc);
    const held: number[] = [];
    try {
      for (let i = 0; i < 25; i++) {
        await new Promise((r) => setTimeout(r, 100));
        held.push((await jsm.consumers.info(o.stream, o.durable)).num_ack_pending);
      }
    } finally {
      await consumer.stop();
      await nc.close();
    }
    // Taken but not acknowledged: the pull buffer, what is gathered, the commits in flight (the library refills its buffer at half).
    const bound = o.pending * 2 + (o.inflight + 1) * o.batch;
    expect(Math.max(...held)).toBeLessThanOrEqual(bound);
    // The slow store sets the pace: about inflight × batch per 100 ms, far from the whole backlog.
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThan(MESSAGES);
    expect(consumer.totals.retries).toBeGreaterThanOrEqual(4);
    expect(consumer.totals.deadLettered).toBe(0);
    expect(consumer.totals.records).toBe(written);
  }, 60_000);
});
