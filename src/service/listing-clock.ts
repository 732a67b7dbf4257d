import type { Logger } from "pino";
import { StoreReadOnlyError, StoreUnavailableError } from "../store/ports/errors.js";
import type { IngestWriter } from "../store/ports/writes.js";

// The listing clock (decisions.md, "Listings as orders"): a listing lapses
// at its expiry by the clock, and every commit marks those that came due
// (store/shared/listing-orders.ts). When nothing else is written, this
// commits an empty batch of listings every `everyMs`, so that a lapse is
// answered within that time whatever the traffic: the floor, the token's
// ask, the collections list, the caches, the listings feed and the
// webhooks follow it as any write's.
//
// One tick at a time: a commit still waiting (the store's write lock held
// by an import) is not queued behind again. A store this server may not
// write (a read-only file, a replica) stops the clock: the server that
// writes it keeps the time.

export class ListingClock {
  readonly #timer: NodeJS.Timeout;
  #ticking: Promise<void> | undefined;
  #stopped = false;
  #warned = false;

  constructor(
    private readonly writer: IngestWriter,
    everyMs: number,
    private readonly logger: Logger,
  ) {
    this.#timer = setInterval(() => {
      this.#ticking ??= this.#tick().finally(() => (this.#ticking = undefined));
    }, everyMs);
    // A clock alone keeps no process alive.
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return;
    try {
      await this.writer.write("listings", []);
      this.#warned = false;
    } catch (err) {
      if (err instanceof StoreReadOnlyError) {
        this.logger.info({ err: err.message }, "listing clock stopped: this server does not write its store (the writing server lapses listings)");
        this.stop();
      } else if (!this.#warned) {
        // Said once until a tick succeeds again: an unavailable store is retried at the next tick.
        this.#warned = true;
        this.logger[err instanceof StoreUnavailableError ? "info" : "warn"]({ err: err instanceof Error ? err.message : String(err) }, "listing clock: commit failed; retried at the next tick");
      }
    }
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
  }

  /** Stops the clock and waits for a tick under way (before the writer closes). */
  async close(): Promise<void> {
    this.stop();
    await this.#ticking;
  }
}
