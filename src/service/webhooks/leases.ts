import type { ReadRepositories } from "../../store/ports/reads.js";
import type { WebhookProgress, WebhookStore } from "../../store/ports/webhooks.js";
import { type Held, heldFrom, type WebhookLog, type WebhookStats } from "./held.js";
import { collectionHeads } from "./positions.js";

// The dispatcher's lease part: each round takes or renews this process's
// leases on webhooks (judged by the store's clock), re-reads their records
// (a pause, a replay, a rotated secret, a revoked key), and hands back what
// it now holds. A webhook held by another process from now on is dropped
// here; its delivered positions still go to the commit (commits.ts).

/** New webhooks taken per round at most: a fresh process picks up a large store's webhooks over a few rounds. */
const NEW_LEASES_PER_ROUND = 1000;

/** What a lease round tells the dispatcher. */
export interface LeaseEvents {
  /** Stop delivering `h` here and write `state` with the next commit. */
  drop(h: Held, state: NonNullable<WebhookProgress["state"]>): void;
  /** `h` is no longer held here (paused, deleted, leased elsewhere): what it delivered is still written. */
  released(h: Held): void;
}

export class Leases {
  /** Until when this process's leases hold, as of its last round (its own clock, taken before asking: never late). */
  leasedUntil = 0;
  /** The store's feed identity: a webhook's positions name events of this feed only. */
  epoch: string | undefined;
  /** Every webhook seen, for stats after it moved elsewhere (metrics keep counters monotone while this process lives). */
  readonly stats = new Map<string, WebhookStats>();

  constructor(
    private readonly store: ReadRepositories,
    private readonly hooks: WebhookStore,
    private readonly holder: string,
    private readonly leaseMs: number,
    private readonly log: WebhookLog,
  ) {}

  /** One round: `held` becomes what this process holds now. */
  async round(held: Map<string, Held>, events: LeaseEvents): Promise<void> {
    const asked = Date.now();
    const leased = await this.hooks.lease(this.holder, this.leaseMs, NEW_LEASES_PER_ROUND);
    this.leasedUntil = asked + this.leaseMs;
    const epoch = (this.epoch ??= await this.store.feed.epoch());
    const live = await this.hooks.liveKeys([...new Set(leased.map((r) => r.keyId))]);
    const seen = new Set<string>();
    for (const rec of leased) {
      seen.add(rec.id);
      let h = held.get(rec.id);
      if (rec.epoch !== epoch) {
        // The store was rebuilt (another feed): its old positions name nothing here. Start from its newest events.
        const heads = await collectionHeads(this.store, rec.collections);
        await this.hooks.replay(rec.id, epoch, heads);
        this.log.warn({ webhook: rec.id }, "webhooks: the store's feed changed (a rebuilt store); delivery starts from its newest events");
        if (h !== undefined) h.gone = true;
        held.delete(rec.id);
        continue;
      }
      if (h === undefined || h.rec.generation !== rec.generation) {
        if (h !== undefined) h.gone = true;
        const stats = this.stats.get(rec.id) ?? { id: rec.id, lagPositions: 0, lagSeconds: 0, delivered: 0, failed: 0, events: 0 };
        this.stats.set(rec.id, stats);
        h = heldFrom(rec, stats);
        held.set(rec.id, h);
      } else {
        // Same generation: the URL, secrets or collections may have changed; the positions in memory are ahead of the stored ones.
        h.rec = rec;
      }
      if (!live.has(rec.keyId)) {
        events.drop(h, { state: "disabled", reason: `its API key ${rec.keyId} was revoked` });
        continue;
      }
      await this.resolveCollections(h);
      await this.measureLag(h);
    }
    for (const [id, h] of held) {
      if (!seen.has(id)) {
        h.gone = true;
        held.delete(id);
        // Paused or deleted between a delivery and the commit of its position:
        // written still (where the store's lease and generation allow), or a
        // resume would send the delivered batch again.
        events.released(h);
      }
    }
  }

  /** The ids of the webhook's collections the store knows now; a collection that just appeared marks it dirty. */
  async resolveCollections(h: Held): Promise<void> {
    for (const address of h.rec.collections) {
      if (h.ids.has(address)) continue;
      const id = await this.store.collections.collectionId(address);
      if (id === undefined) continue;
      h.ids.set(address, id);
      // A collection that just appeared: its first events may already be committed.
      h.dirty = true;
    }
  }

  async measureLag(h: Held): Promise<void> {
    let lag = 0;
    for (const kind of h.rec.kinds) {
      for (const id of h.ids.values()) lag = Math.max(lag, (await this.store.feed.head(kind, id)) - h.positions[kind]);
    }
    h.lagPositions = lag;
    if (lag > 0) h.behindSince ??= Date.now();
    else h.behindSince = undefined;
  }
}
