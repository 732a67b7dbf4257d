import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { importLines } from "../../src/ingest/importer.js";
import type { Kind } from "../../src/domain/kinds/index.js";
import type { DeliveryClient, DeliveryResult } from "../../src/service/webhooks/delivery.js";
import { WebhookDispatcher } from "../../src/service/webhooks/dispatcher.js";
import { openReadRepositories, openWebhookStore, openWritableStore } from "../../src/store/open.js";
import type { FeedKind } from "../../src/store/ports/feed.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import type { WebhookStore } from "../../src/store/ports/webhooks.js";
import type { WritableStore } from "../../src/store/ports/writes.js";
import { withKeys } from "../support/engine.js";
import { storeEngines } from "../support/store-engines.js";

// A webhook of several collections merges their feeds (issue 49, item 7):
// under commits from two writers (two workers' connections) landing between
// the dispatcher's reads, every event the webhook selects arrives, once, in
// position order per kind. The writes are run by the reads themselves (each
// feed read first commits the plan's next write), so the interleavings that
// lost events (a commit seen in one collection's read and not in the read
// of another before it) happen on every run, on both engines.


const engines = storeEngines("webhook-merge");

const KINDS: FeedKind[] = ["sales", "transfers"];
const address = (run: number, c: number) => `0x${(run * 16 + c + 1).toString(16).padStart(40, "0")}`;
const hash = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

/** One commit: from writer 0 or 1, records of either kind over some of the run's collections. */
interface Write {
  writer: 0 | 1;
  kind: "sales" | "transfers";
  collections: number[];
}
const writeArb: fc.Arbitrary<Write> = fc.record({
  writer: fc.constantFrom(0 as const, 1 as const),
  kind: fc.constantFrom("sales" as const, "transfers" as const),
  collections: fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }),
});

class RecordingClient {
  readonly events: { type: string; position: number; id: string }[] = [];
  post(_url: string, _id: string, _secrets: string[], body: string): Promise<DeliveryResult> {
    for (const e of (JSON.parse(body) as { data: { events: { type: string; position: string; id: string }[] } }).data.events) {
      this.events.push({ type: e.type, position: Number(e.position), id: e.id });
    }
    return Promise.resolve({ status: 200, latencyMs: 1, error: "" });
  }
  close(): void {}
}

for (const [name, open, skip] of engines) {
  describe.skipIf(skip)(`a webhook of several collections (${name})`, () => {
    let target: string;
    let drop: () => Promise<void>;
    let writers: WritableStore[];
    let repos: ReadRepositories;
    let hooks: WebhookStore;
    let keyId: number;
    let serial = 0;
    let run = 0;

    beforeAll(async () => {
      ({ target, drop } = await open());
      writers = [await openWritableStore(target, { migrateEmpty: true }), await openWritableStore(target)];
      keyId = await withKeys(target, async (admin) => (await admin.create("k")).id);
      repos = await openReadRepositories(target);
      hooks = await openWebhookStore(target);
    });
    afterAll(async () => {
      await hooks?.close();
      await repos?.close();
      for (const w of writers ?? []) await w.close();
      await drop?.();
    });

    async function write(w: Write, r: number): Promise<void> {
      const records = w.collections.map((c) => {
        const n = ++serial;
        const base = { hash: hash(n), contractAddress: address(r, c), assetId: String(n % 7), timestamp: 1_700_000_000 + n, block: 18_000_000 + n };
        return w.kind === "sales"
          ? { ...base, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`, price: "1000000000000000", amountReceived: "900000000000000", currency: "ETH", marketplace: "OPENSEA" }
          : { ...base, logIndex: 0, from: `0x${"2".repeat(40)}`, to: `0x${"3".repeat(40)}` };
      });
      await importLines(writers[w.writer]!.records, (async function* () {
        for (const rec of records) yield JSON.stringify(rec);
      })(), { kind: w.kind as Kind, skipInvalid: false });
    }

    it("receives every event of its collections once, in position order, whatever commits land between its reads", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 4, maxLength: 16 }), fc.integer({ min: 1, max: 4 }), async (plan, batchSize) => {
          const r = ++run;
          // Each collection has a first sale, so the webhook knows its ids from the start.
          for (const c of [0, 1, 2]) await write({ writer: 0, kind: "sales", collections: [c] }, r);
          const positions = { sales: await repos.feed.last(), listings: 0, offers: 0, transfers: await repos.feed.last(), tokens: 0 };
          const hook = await hooks.create({
            id: `wh_merge${String(r).padStart(14, "0")}`, url: "https://example.com/h", collections: [0, 1, 2].map((c) => address(r, c)),
            kinds: KINDS, keyId, secret: "whsec_x", epoch: await repos.feed.epoch(), positions,
          });
          // Every feed read first commits the plan's next write.
          const queue = [...plan];
          // Writes taken from the queue and not yet committed: none may be left when the expected events are read.
          let inFlight = 0;
          const feed = new Proxy(repos.feed, {
            get(t, p, recv) {
              const v = Reflect.get(t, p, recv) as unknown;
              if (typeof v !== "function" || !["sales", "listings", "offers", "transfers", "merged"].includes(String(p))) return typeof v === "function" ? v.bind(t) : v;
              return async (...args: unknown[]) => {
                const next = queue.shift();
                if (next !== undefined) {
                  inFlight++;
                  try {
                    await write(next, r);
                  } finally {
                    inFlight--;
                  }
                }
                return (v as (...a: unknown[]) => unknown).apply(t, args);
              };
            },
          });
          const store = new Proxy(repos, { get: (t, p, recv) => (p === "feed" ? feed : Reflect.get(t, p, recv)) });
          const client = new RecordingClient();
          const dispatcher = new WebhookDispatcher(store, hooks, {
            holder: `merge-${r}`, client: client as unknown as DeliveryClient, log: { warn: () => {}, info: () => {} },
            pollMs: 5, leaseEveryMs: 50, batchSize,
          });
          try {
            dispatcher.start();
            // Until every write is committed and the webhook caught up with its collections' heads.
            const ids = await Promise.all([0, 1, 2].map(async (c) => (await repos.collections.collectionId(address(r, c)))!));
            const expected = new Map<string, FeedKind>();
            for (let waited = 0; ; waited += 20) {
              // Settled before the read below: every write is committed, so what it reads is all there will be.
              const settled = queue.length === 0 && inFlight === 0;
              expected.clear();
              for (const kind of KINDS) {
                for (const id of ids) for (const e of await repos.feed[kind](id, positions[kind], 10_000)) expected.set(`${kind}:${e.seq}`, kind);
              }
              // Caught up: it delivered the newest position of each kind (an event it skipped is never sent later).
              const caughtUp = KINDS.every((kind) => {
                const want = Math.max(0, ...[...expected].filter(([, k]) => k === kind).map(([key]) => Number(key.split(":")[1])));
                return want === 0 || client.events.some((e) => e.position === want);
              });
              if ((settled && caughtUp) || waited > 10_000) break;
              await new Promise((res) => setTimeout(res, 20));
            }
            const got = client.events.map((e) => `${e.type === "sale" ? "sales" : "transfers"}:${e.position}`);
            expect(new Set(got).size).toBe(got.length);
            expect([...got].sort()).toEqual([...expected.keys()].sort());
            for (const kind of KINDS) {
              const seen = client.events.filter((e) => (e.type === "sale") === (kind === "sales")).map((e) => e.position);
              expect(seen).toEqual([...seen].sort((a, b) => a - b));
            }
          } finally {
            await dispatcher.close(1000);
            await hooks.delete(hook.id);
          }
        }),
        { numRuns: 16, endOnFailure: true },
      );
    }, 240_000);
  });
}
