import { Code, ConnectError } from "@connectrpc/connect";
import { INVALID_KEY, type KeyGrant, type KeyVerifier } from "./guards.js";

// A request's key is checked when it arrives; a live feed or an ingest
// stream lasts. So that revoking a key stops what it holds open, the calls
// that last hold their key here for as long as they are open, and while any
// does, the keys' version is read every KEY_RECHECK_MS (KeyChanges, the cache's DataVersionWatch:
// shared memory on SQLite, one row on PostgreSQL, and shared with the
// requests of the same turn). When the keys changed (created, revoked,
// updated), each held key is looked up again; the holders of one found
// revoked are told, so that their calls end `unauthenticated` within about
// KEY_RECHECK_MS plus one lookup. Nothing is read while nothing is held.

/**
 * What HeldKeys needs of the store's version (cache/freshness.ts
 * DataVersionWatch has it): a listener for changes to the keys, and a read
 * of the version now. Declared here, the policy's own need, so that policy/
 * takes nothing from the cache above it.
 */
export interface KeyChanges {
  onKeysChange(listener: () => void): void;
  check(): unknown;
}

/** Holds a long-lived call's key while it is open (HeldKeys, wired by the composition root); returns the release. */
export type HoldKey = (key: string, grant: KeyGrant) => () => void;

/** How often the keys' version is read while a long-lived call is open. */
export const KEY_RECHECK_MS = 250;

/** The error a call held open by a key that was revoked since ends with. */
export const KEY_REVOKED = new ConnectError(`${INVALID_KEY}: the key was revoked while this call was open`, Code.Unauthenticated);

export class HeldKeys {
  readonly #keys: KeyVerifier;
  readonly #watch: KeyChanges;
  readonly #everyMs: number;
  /** Held keys: the grant each was admitted with, and the calls holding it. */
  readonly #held = new Map<string, { grantId: number; holders: Set<() => void> }>();
  #changed = false;
  #checking = false;
  #timer: NodeJS.Timeout | undefined;
  /** Keys found revoked while held (read by tests and the metrics). */
  revoked = 0;

  constructor(keys: KeyVerifier, watch: KeyChanges, everyMs = KEY_RECHECK_MS) {
    this.#keys = keys;
    this.#watch = watch;
    this.#everyMs = everyMs;
    watch.onKeysChange(() => {
      this.#changed = true;
    });
  }

  /**
   * Holds `key` (admitted with grant `grantId`) for a call that lasts;
   * `onRevoked` is called once should the key be revoked while held. Returns
   * the release, to call when the call ends (safe to call twice).
   */
  hold(key: string, grantId: number, onRevoked: () => void): () => void {
    let entry = this.#held.get(key);
    if (entry === undefined) this.#held.set(key, (entry = { grantId, holders: new Set() }));
    const holder = () => onRevoked();
    entry.holders.add(holder);
    this.#timer ??= setInterval(() => void this.#check(), this.#everyMs).unref();
    return () => {
      const e = this.#held.get(key);
      if (e === undefined || !e.holders.delete(holder)) return;
      if (e.holders.size === 0) this.#held.delete(key);
      if (this.#held.size === 0) this.#stop();
    };
  }

  /** The number of calls holding keys now. */
  get holders(): number {
    let n = 0;
    for (const e of this.#held.values()) n += e.holders.size;
    return n;
  }

  #stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  async #check(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      // Reads the keys' version (the listener above marks a change).
      await this.#watch.check();
      if (!this.#changed) return;
      this.#changed = false;
      for (const [key, entry] of [...this.#held]) {
        let grant;
        try {
          grant = await this.#keys.lookup(key);
        } catch {
          // The store is unreachable: looked up again at the next check.
          this.#changed = true;
          continue;
        }
        if (grant !== undefined && grant.id === entry.grantId) continue;
        if (this.#held.get(key) !== entry) continue;
        this.#held.delete(key);
        this.revoked++;
        for (const holder of entry.holders) holder();
      }
      if (this.#held.size === 0) this.#stop();
    } catch {
      // The version could not be read: the next check reads it again.
    } finally {
      this.#checking = false;
    }
  }
}
