import type { WebhookProgress, WebhookStore } from "../../store/ports/webhooks.js";
import { type Held, type Pending, TRIM_EVERY, type WebhookLog } from "./held.js";

// The dispatcher's commit part: what was delivered (positions, attempts,
// new states) written within COMMIT_EVERY_MS, in one transaction for every
// webhook. A receipt written a little later costs at most a duplicate after
// a crash; one transaction per batch would cost a sync of the webhooks'
// store per batch. A commit that fails is merged back and tried again.

/** How long delivered positions may wait to be written, gathered into one transaction. */
const COMMIT_EVERY_MS = 100;

export class Commits {
  /** Webhooks no longer delivered here whose new state (410, failing, key revoked) or last receipt the next commit writes. */
  readonly #dropped = new Set<Held>();
  #committing: Promise<void> | undefined;

  constructor(
    private readonly hooks: WebhookStore,
    private readonly holder: string,
    /** What this process holds now (the dispatcher's map): read at each commit, and a webhook whose lease was lost leaves it. */
    private readonly held: Map<string, Held>,
    private readonly log: WebhookLog,
  ) {}

  /** `h` is no longer held here but has something to write: the next commit writes it. */
  keep(h: Held): void {
    this.#dropped.add(h);
  }

  /** A commit soon (now when `closing`), unless one is already coming. */
  kick(closing = false): void {
    if (this.#committing !== undefined) return;
    this.#committing = new Promise<void>((resolve) => setTimeout(resolve, closing ? 0 : COMMIT_EVERY_MS).unref())
      .then(() => this.commit())
      .catch((err: unknown) => this.log.warn({ err: String(err) }, "webhooks: positions not written; trying again"))
      .finally(() => {
        this.#committing = undefined;
      });
  }

  /** The commit under way, if any. */
  settled(): Promise<void> | undefined {
    return this.#committing;
  }

  /** Writes every held webhook's pending positions, attempts and states in one transaction. */
  async commit(): Promise<void> {
    const progress: WebhookProgress[] = [];
    const taken: [Held, Pending][] = [];
    // Webhooks no longer held that still have something to write (a 410, failing, a revoked key, a
    // receipt that came after a pause): each its own entry, as the same id held again (a new generation) is another.
    const candidates = [...this.held.values(), ...this.#dropped];
    this.#dropped.clear();
    for (const h of candidates) {
      const p = h.pending;
      if (p.positions === undefined && p.attempts.length === 0 && p.state === undefined) continue;
      taken.push([h, p]);
      h.pending = { attempts: [] };
      h.untrimmed += p.attempts.length;
      const trim = h.untrimmed >= TRIM_EVERY;
      if (trim) h.untrimmed = 0;
      progress.push({
        id: h.rec.id,
        generation: h.rec.generation,
        attempts: p.attempts,
        ...(p.positions ? { positions: p.positions } : {}),
        ...(p.state ? { state: p.state } : {}),
        ...(trim ? { trim } : {}),
      });
    }
    if (progress.length === 0) return;
    try {
      const lost = await this.hooks.commit(this.holder, progress);
      for (const id of lost) {
        const h = this.held.get(id);
        if (h !== undefined) {
          h.gone = true;
          this.held.delete(id);
        }
        this.log.warn({ webhook: id }, "webhooks: lease lost (another process holds it now); its last batch may be sent again");
      }
    } catch (err) {
      // Not written: merged back so the next commit writes it (newer positions win).
      for (const [h, p] of taken) {
        h.pending = {
          attempts: [...p.attempts, ...h.pending.attempts],
          ...(h.pending.positions ?? p.positions ? { positions: (h.pending.positions ?? p.positions)! } : {}),
          ...(h.pending.state ?? p.state ? { state: (h.pending.state ?? p.state)! } : {}),
        };
        if (this.held.get(h.rec.id) !== h) this.#dropped.add(h);
      }
      throw err;
    }
  }
}
