import type { DeriveRepository, SaleForModel } from "../store/ports/derive.js";
import { derivedAppraisals, feedSales, fitCollection, type FittedCollection, rarityRows } from "./derive.js";
import { DEFAULTS } from "../config/settings.js";
import { latestTimeAllowed } from "../domain/formats.js";

// derive in the background (issue 21, item 4): after ingest wrote a
// collection's sales, listings or tokens, its appraisals and rarity are
// brought up to date. A collection's first refresh is a full derive; its
// fit (the model's pass over every sale, the rarity) is then kept, and the
// sales written since are fed to it: the model is incremental
// (appraisal.ts), so feeding only the new seconds leaves exactly the model a
// full derive would build, at a small part of its cost (bench:ingest --
// --parts freshness).
//
// A live feed is not quite in time order: writers a few blocks apart send
// sales of seconds the model has already passed. The model takes sales in
// time order only, so a sale up to LATE_SECONDS late is fed as of the
// model's last second (its time off by that much at most, until the next
// full fit); anything else the model cannot take that way is fitted again
// in full: changed tokens, a changed sale, a sale older than that.
//
// Sales dated past the clock (by more than the allowed skew) are left out,
// as derive leaves them out: refused on ingest and import now, one stored
// before would otherwise be the model's last second for ever, every later
// sale "late" and every refresh a full fit.

/** How late a sale may come and still be fed to the kept model (as of its last second). */
export const LATE_SECONDS = 120;

export interface RefreshResult {
  contractAddress: string;
  mode: "full" | "incremental";
  /** Sales the model has seen, and how many of them this refresh fed. */
  sales: number;
  fed: number;
  ms: number;
}

/** Fits kept, at most: each holds a collection's model and tokens. */
const KEPT_FITS = 16;

export class DerivedRefresher {
  readonly #store: DeriveRepository;
  readonly #fits = new Map<string, FittedCollection>();
  /** Per kept fit: the sales it was fed of its last LATE_SECONDS. */
  readonly #recent = new Map<string, RecentSales>();
  readonly #skew: number;
  readonly #now: () => number;

  constructor(store: DeriveRepository, options: { maxClockSkewSeconds?: number; now?: () => number } = {}) {
    this.#store = store;
    this.#skew = options.maxClockSkewSeconds ?? DEFAULTS.maxClockSkew;
    this.#now = options.now ?? Date.now;
  }

  /** Brings `address`'s derived rows up to date with the store; `refit`: its tokens or earlier sales changed. */
  async refresh(address: string, refit = false): Promise<RefreshResult> {
    const started = performance.now();
    let fit = refit ? undefined : this.#fits.get(address);
    let fed = 0;
    let ownersMoved = false;
    const until = latestTimeAllowed(this.#skew, this.#now());
    if (fit !== undefined) {
      const kept = this.#recent.get(address)!;
      const last = fit.pass.lastTimestamp;
      const from = Number.isFinite(last) ? last - LATE_SECONDS : -1;
      const { sales, total } = await this.#store.salesSince(fit.collectionId, from, until);
      const unseen = kept.unseen(sales);
      // Any other sale than these was added or changed behind the fit's back.
      if (fit.pass.observed + unseen.length !== total) fit = undefined;
      else {
        // Late sales first, as of the model's last second; then the later seconds, in order.
        feedSales(fit, unseen.map((s) => (s.timestamp < last ? { ...s, timestamp: last } : s)).sort((a, b) => a.timestamp - b.timestamp));
        kept.fed(unseen, fit.pass.lastTimestamp - LATE_SECONDS);
        fed = unseen.length;
        // A token without an owner of its own shows its last buyer in rarity.
        const ownerless = new Set(fit.tokens.filter((t) => t.currentOwner === "").map((t) => t.assetId));
        ownersMoved = unseen.some((s) => ownerless.has(s.assetId));
      }
    }
    const mode = fit === undefined ? "full" : "incremental";
    if (fit === undefined) {
      const fitted = await fitCollection(this.#store, address, until);
      fit = fitted.fitted;
      fed = fit.pass.observed;
      ownersMoved = true;
      const recent = new RecentSales();
      recent.fed(fitted.sales.filter((s) => s.timestamp > fit!.pass.lastTimestamp - LATE_SECONDS), fit.pass.lastTimestamp - LATE_SECONDS);
      this.#recent.set(address, recent);
    }
    // Most recently refreshed last: the first is the one to let go.
    this.#fits.delete(address);
    this.#fits.set(address, fit);
    if (this.#fits.size > KEPT_FITS) {
      const oldest = this.#fits.keys().next().value!;
      this.#fits.delete(oldest);
      this.#recent.delete(oldest);
    }
    const rarity = ownersMoved ? rarityRows(fit) : undefined;
    const appraisals = await derivedAppraisals(this.#store, fit);
    await this.#store.replaceDerived(fit.collectionId, { ...(rarity === undefined ? {} : { rarity }), appraisals });
    return { contractAddress: address, mode, sales: fit.pass.observed, fed, ms: performance.now() - started };
  }
}

/**
 * The sales a fit was fed whose seconds are within LATE_SECONDS of its last
 * (a multiset: two sales alike in every field the model reads are two), so
 * that of the sales the store holds in that span, those not yet fed are
 * told apart.
 */
class RecentSales {
  readonly #counts = new Map<string, number>();
  /** Fed order: [timestamp, key], pruned from the front. */
  readonly #order: [number, string][] = [];
  #head = 0;

  /** Of `sales` (every sale the store holds after some second), those never fed. */
  unseen(sales: readonly SaleForModel[]): SaleForModel[] {
    const left = new Map(this.#counts);
    return sales.filter((s) => {
      const k = keyOf(s);
      const n = left.get(k) ?? 0;
      if (n === 0) return true;
      left.set(k, n - 1);
      return false;
    });
  }

  /** Remembers `sales` as fed, and forgets those of seconds up to `before`, which no later read returns. */
  fed(sales: readonly SaleForModel[], before: number): void {
    for (const s of sales) {
      const k = keyOf(s);
      this.#counts.set(k, (this.#counts.get(k) ?? 0) + 1);
      this.#order.push([s.timestamp, k]);
    }
    while (this.#head < this.#order.length && this.#order[this.#head]![0] <= before) {
      const k = this.#order[this.#head++]![1];
      const n = this.#counts.get(k)! - 1;
      if (n === 0) this.#counts.delete(k);
      else this.#counts.set(k, n);
    }
    if (this.#head > 4096 && this.#head * 2 > this.#order.length) {
      this.#order.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

const keyOf = (s: SaleForModel) => `${s.assetId} ${s.timestamp} ${s.price} ${s.buyer}`;
