import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { dropJetStream, prepareJetStream } from "../../bench/jetstream.js";
import type { Ingest, IngestLine, IngestResult } from "../../src/service/ingest-service.js";
import { deadLetterBody, startJetStreamIngest } from "../../src/transport/jetstream/ingest-consumer.js";
import { NATS_URL, skipNats, testJetStream } from "../support/nats.js";

// A message near NATS's max_payload (1 MiB by default) on a subject of no
// kind, or one invalid record of about 1 MB (issue 49, item 1): its dead
// letter is a copy cut to fit, with the reason, stream and sequence of the
// original, so the publish succeeds, the message is acknowledged, and the
// records after it are written. Before, the dead letter was the whole
// message plus headers, over max_payload: the consumer exited, and so did
// every consumer it was redelivered to.

const o = testJetStream("dl", { batch: 50, pending: 100, inflight: 2, ackWaitSeconds: 5, flushMs: 5 });

describe("a dead letter's copy", () => {
  it("is the record when it fits, else its first bytes, cut at a character boundary", () => {
    expect(deadLetterBody("abc", 10)).toEqual({ data: Buffer.from("abc") });
    const cut = deadLetterBody("aé".repeat(4), 5);
    expect(Buffer.from(cut.data).toString()).toBe("aéa");
    expect(cut.cutFrom).toBe(12);
    // The 5th byte would be half of an é: the copy stops before it.
    expect(Buffer.from(deadLetterBody("aé".repeat(4), 2).data).toString()).toBe("a");
  });
});

describe.skipIf(skipNats("dead letters near max_payload"))("the JetStream consumer and a message near max_payload", () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    await dropJetStream(o);
    await prepareJetStream(o);
    nc = await connect({ servers: NATS_URL });
  });
  afterAll(async () => {
    await nc?.close();
    await dropJetStream(o);
  });

  it("dead-letters a cut copy, acknowledges it, and goes on to the records after it", async () => {
    const written: string[] = [];
    const store = {
      batch(_kind: string, lines: readonly IngestLine[]): Promise<IngestResult> {
        // A stand-in for the ingest path: a record whose "n" is not a number is refused.
        const n = (l: IngestLine) => (l.value as { n?: unknown } | undefined)?.n;
        const rejected = lines.flatMap((l) => (typeof n(l) === "number" ? [] : [{ line: l.line, message: "n must be a number" }]));
        for (const l of lines) if (typeof n(l) === "number") written.push(String(n(l)));
        return Promise.resolve({ accepted: lines.length - rejected.length, duplicates: 0, rejected } as IngestResult);
      },
    } as unknown as Ingest;
    const js = jetstream(nc);
    const max = nc.info!.max_payload;
    // The reproduction: a message of ~1 MiB on a subject of no kind.
    await js.publish(`${o.subjectPrefix}.bogus`, Buffer.alloc(max - 200, 120));
    // One invalid record of ~1 MB among valid ones.
    await js.publish(`${o.subjectPrefix}.sales`, `{"n":1}\n{"n":"${"x".repeat(max - 400)}"}\n{"n":2}`);
    await js.publish(`${o.subjectPrefix}.sales`, `{"n":3}`);
    const consumer = await startJetStreamIngest(store, o);
    let failed: unknown;
    consumer.done.catch((err: unknown) => (failed = err));
    try {
      for (let i = 0; i < 100 && (written.length < 3 || consumer.totals.deadLettered < 2); i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      await consumer.stop();
    }
    expect(failed).toBeUndefined();
    expect(written.sort()).toEqual(["1", "2", "3"]);
    expect(consumer.totals.deadLettered).toBe(2);
    const jsm = await jetstreamManager(nc);
    const dead = [];
    for (let seq = 1; seq <= 2; seq++) dead.push(await jsm.streams.getMessage(`${o.stream}_DEAD`, { seq }));
    for (const m of dead) {
      expect(m!.data.length).toBeLessThan(max);
      expect(m!.header.get("Marketdata-Truncated")).toMatch(/^the first \d+ of \d+ bytes$/);
      expect(m!.header.get("Marketdata-Stream")).toBe(o.stream);
      expect(Number(m!.header.get("Marketdata-Stream-Sequence"))).toBeGreaterThan(0);
    }
    expect(dead.map((m) => m!.header.get("Marketdata-Reason"))).toEqual([expect.stringMatching(/names no kind/), "n must be a number"]);
    // Nothing left unacknowledged.
    expect((await jsm.consumers.info(o.stream, o.durable)).num_ack_pending).toBe(0);
  }, 60_000);
});
