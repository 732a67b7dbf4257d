import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectionRef } from "../../src/domain/chains.js";
import { FeedHub, type Subscription } from "../../src/service/feed-hub.js";
import { BatchReader } from "../../src/service/webhooks/batches.js";
import type { Held } from "../../src/service/webhooks/held.js";
import type { FeedKind } from "../../src/store/ports/feed.js";
import type { ReadRepositories } from "../../src/store/ports/reads.js";
import { skipPg } from "../support/pg.js";
import { batchesByKind, type Harness, harness, importBatch } from "../support/property-store.js";
import { CHAINS, type Chain, fixedRecords, historyOf, keyOf, writeArb } from "../support/reorg-history.js";

// Reorganisations through the live paths (docs/chains.md, "Removals in the
// feeds"), on both engines: while a random history on two chains is written
// (records taken back, blocks taken back, records sent again), a live
// subscriber of each chain's sales, transfers, listings and offers
// (feed-hub.ts), dropped and
// resumed from its last position at random, and a webhook's batches
// (webhooks/batches.ts) receive every record and every removal once, in
// position order, with nothing skipped; applied in order (a record sets
// its key, a removal deletes it) they give exactly the surviving records
// (an order: its last record left; one with none left, removed).
// A final-only webhook of each chain (finality=final) reads along: nothing
// while no block is final; once the history is written and its chain's
// finalized block is set at random, each kind's records up to its first
// one not yet final, in position order; once every block is final, the
// rest (in position order within each kind: a kind's record held back does
// not hold back another's): exactly the surviving records, each once, and
// no removal. (Its
// finalized block is the reader's alone, so that the history's removals
// stay legal for the store.)

type Record_ = Record<string, unknown>;
/**
 * What the comparison looks at of a record, from a feed row, a webhook
 * event's message or a sent line (an order's status aside: a sale or
 * transfer may end a listing, which its feed sends again).
 */
const essence = (r: Record_) => ({
  hash: r.hash, assetId: r.assetId, logIndex: r.logIndex === undefined ? undefined : Number(r.logIndex), to: r.to,
  block: Number(r.block ?? 0), blockHash: r.blockHash ?? "", price: r.price, marketplaceId: r.marketplaceId, createdAt: r.createdAt === undefined ? undefined : Number(r.createdAt),
});

const KINDS = ["sales", "transfers", "listings", "offers"] as const;
type Kind = (typeof KINDS)[number];
/** A webhook event's type (or a removal's) as its kind. */
const KIND_OF_TYPE: Record<string, Kind> = { sale: "sales", transfer: "transfers", listing: "listings", offer: "offers" };

/** A record's natural key: an order's by marketplace and id, others' as the history keys them. */
const keyIn = (kind: Kind, r: Record_, chain: Chain) =>
  kind === "listings" || kind === "offers" ? `${kind}/${String(r.marketplace)}/${String(r.marketplaceId)}` : keyOf({ ...r, chain }, kind);

/** Events applied in order: a record sets its natural key, a removal deletes it. */
function fold(events: readonly { key: string; removed: boolean; record: Record_ }[]): Map<string, unknown> {
  const state = new Map<string, unknown>();
  for (const e of events) {
    if (e.removed) state.delete(e.key);
    else state.set(e.key, essence(e.record));
  }
  return state;
}

interface Live {
  chain: Chain;
  kind: Kind;
  id: number;
  ref: string;
  sub: Subscription<unknown>;
  got: { seq: number; key: string; removed: boolean; record: Record_ }[];
}

const lastSeq = (l: Live) => l.got.at(-1)?.seq ?? 0;

for (const engine of ["sqlite", "postgres"] as const) {
  describe.skipIf(engine === "postgres" && skipPg)(`reorganisations through the live feeds and webhooks on ${engine} (property)`, () => {
    let h: Harness;
    let hub: FeedHub;
    let run = 0;

    beforeAll(async () => {
      h = await harness(engine);
      // Small pages: a replay and a channel read several, so the seams between pages are crossed.
      hub = new FeedHub(h.read, { perKey: 0, total: 0 }, { pollMs: 5, pageRows: 2 });
    });
    afterAll(async () => {
      hub?.close();
      await h?.cleanup();
    });

    /** Takes the subscriber's events until it has every position its collection holds. */
    async function drain(l: Live): Promise<void> {
      const head = await h.read.feed.head(l.kind, l.id);
      while (lastSeq(l) < head) {
        const item = await hub.next(l.sub, AbortSignal.timeout(10_000));
        if (item === undefined || item.kind === "end") throw new Error(`the ${l.chain} ${l.kind} stream ended at ${lastSeq(l)} of ${head}`);
        if (item.kind !== "row") continue;
        const row = item.entry.row as Record_;
        l.got.push({ seq: item.entry.seq, key: keyIn(l.kind, row, l.chain), removed: item.entry.removed !== undefined, record: row });
      }
    }

    it("every record and every removal is delivered once, in position order, across resumes; applied in order they give the surviving records", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(writeArb, { minLength: 1, maxLength: 30 }), fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), fc.integer({ min: 0, max: 7 }), async (writes, drops, settled) => {
          const address = `0x${(0xe1000 + ++run).toString(16).padStart(40, "0")}`;
          const { tokens, listings } = fixedRecords(address);
          await importBatch(h.store, "tokens", tokens);
          await importBatch(h.store, "listings", listings);
          const { lines, held, orders } = historyOf(address, writes);
          /** What survives of a chain's records of `kinds`, by key: sales and transfers held, each order as its last record left (the fixed listings first). */
          const survivorsOf = (chain: Chain, kinds: readonly Kind[]) => {
            const out = new Map<string, unknown>();
            for (const [k, v] of held) if (v.record.chain === chain && kinds.includes(v.kind)) out.set(k, essence(v.record));
            const fixed = (listings as Record_[]).map((record) => ({ kind: "listings" as const, record }));
            for (const o of [...fixed, ...orders]) if (o.record.chain === chain && kinds.includes(o.kind)) out.set(keyIn(o.kind, o.record, chain), essence(o.record));
            return out;
          };
          const lives: Live[] = [];
          type Hook = { chain: Chain; held: Held; events: { id: string; position: number; key: string; removed: boolean; record: Record_ }[] };
          const hooks: Hook[] = [];
          const finalHooks: Hook[] = [];
          const reader = new BatchReader(h.read, 3);
          // The final-only webhooks' chain finality, set by the test.
          let finalized = -1;
          const collections = new Proxy(h.read.collections, {
            get: (target, name) => (name === "finalized" ? async () => finalized : Reflect.get(target, name, target)),
          });
          const finalReader = new BatchReader({ ...h.read, collections } as ReadRepositories, 3);
          for (const chain of CHAINS) {
            const ref = collectionRef(chain, address);
            const id = (await h.read.collections.collectionId(ref))!;
            for (const kind of KINDS) {
              lives.push({ chain, kind, id, ref, sub: await hub.subscribe<unknown>(kind, { id, ref }, () => true, undefined, 0), got: [] });
            }
            for (const finalOnly of [false, true]) {
              // A final-only webhook of sales and transfers (orders come as committed: webhooks.md).
              const kinds: FeedKind[] = finalOnly ? ["sales", "transfers"] : [...KINDS];
              const rec = { id: `wh_p${run}${chain}${finalOnly ? "f" : ""}`, generation: 1, kinds, collections: [ref], finalOnly };
              (finalOnly ? finalHooks : hooks).push({ chain, held: { rec, ids: new Map([[ref, id]]), positions: { sales: 0, listings: 0, offers: 0, transfers: 0 } } as unknown as Held, events: [] });
            }
          }
          /** The webhooks' batches until they have nothing more, as the dispatcher reads them. */
          const deliver = async (which = hooks, reader_ = reader) => {
            for (const hook of which) {
              const reader = reader_;
              reader.forget();
              for (let batch = await reader.read(hook.held, "e"); batch !== undefined; batch = await reader.read(hook.held, "e")) {
                const body = JSON.parse(batch.body) as { data: { events: Record_[] } };
                for (const e of body.data.events) {
                  const removal = e.removed as Record_ | null;
                  const type = String(removal?.type ?? e.type);
                  const kind = KIND_OF_TYPE[type]!;
                  const record = (removal === null ? e[type] : removal[type]) as Record_;
                  expect(e.chain).toBe(hook.chain);
                  hook.events.push({ id: String(e.id), position: Number(e.position), key: keyIn(kind, record, hook.chain), removed: removal !== null, record });
                }
                hook.held.positions = batch.positions;
              }
            }
          };
          let step = 0;
          for (const batch of batchesByKind(lines.map((l) => ({ ...l })), 5)) {
            await importBatch(h.store, batch[0]!.kind, batch.map((b) => b.record));
            for (const l of lives) {
              await drain(l);
              // A subscriber that drops resumes from the last position it got.
              if (drops[step++ % drops.length]) {
                hub.unsubscribe(l.sub);
                l.sub = await hub.subscribe<unknown>(l.kind, { id: l.id, ref: l.ref }, () => true, undefined, lastSeq(l));
              }
            }
            await deliver();
            await deliver(finalHooks, finalReader);
          }
          for (const l of lives) {
            // (A history of no line leaves the fixed listings to take.)
            await drain(l);
            // Positions in order, none twice, and every one the store's feed holds at the end (a row deleted since
            // was sent while it lived): nothing skipped across a resume.
            const seqs = l.got.map((e) => e.seq);
            expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
            const all = await h.read.feed.merged(l.kind, [l.id], 0, 10_000);
            expect(all.map((e) => e.seq).filter((q) => !seqs.includes(q))).toEqual([]);
            expect(fold(l.got)).toEqual(survivorsOf(l.chain, [l.kind]));
          }
          await deliver();
          for (const hook of hooks) {
            const positions = hook.events.map((e) => e.position);
            expect(positions).toEqual([...new Set(positions)].sort((a, b) => a - b));
            expect(new Set(hook.events.map((e) => e.id)).size).toBe(hook.events.length);
            expect(fold(hook.events)).toEqual(survivorsOf(hook.chain, KINDS));
          }
          // Final-only: nothing while no block is final; then each kind up to its first record not final.
          for (const hook of finalHooks) expect(hook.events).toEqual([]);
          finalized = settled;
          await deliver(finalHooks, finalReader);
          for (const hook of finalHooks) {
            const id = (await h.read.collections.collectionId(collectionRef(hook.chain, address)))!;
            for (const kind of ["sales", "transfers"] as const) {
              const rows = (await h.read.feed.merged(kind, [id], 0, 10_000)).filter((e) => e.removed === undefined);
              const cut = rows.findIndex((e) => (e.row as Record_).block as number > settled);
              const expected = (cut < 0 ? rows : rows.slice(0, cut)).map((e) => keyOf({ ...(e.row as Record_), chain: hook.chain }, kind));
              expect(hook.events.filter((e) => e.key.startsWith(`${kind}/`)).map((e) => e.key)).toEqual(expected);
            }
          }
          // Every block final: the rest, each surviving record once, each answering final, and no removal.
          finalized = 1_000;
          await deliver(finalHooks, finalReader);
          for (const hook of finalHooks) {
            // In position order within each kind: a kind's record held back does not hold back another kind's.
            for (const kind of ["sales", "transfers"]) {
              const positions = hook.events.filter((e) => e.key.startsWith(`${kind}/`)).map((e) => e.position);
              expect(positions).toEqual([...new Set(positions)].sort((a, b) => a - b));
            }
            expect(hook.events.filter((e) => e.removed || e.record.finality !== "final")).toEqual([]);
            const survivors = survivorsOf(hook.chain, ["sales", "transfers"]);
            expect(hook.events.length).toBe(survivors.size);
            expect(fold(hook.events)).toEqual(survivors);
          }
          for (const l of lives) hub.unsubscribe(l.sub);
        }),
        { numRuns: engine === "postgres" ? 25 : 60 },
      );
    });
  });
}
