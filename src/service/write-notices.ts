import type { Kind } from "../domain/kinds/index.js";

// The write notification: what this process just committed through the
// ingest API, a kind and the collections it wrote. The live feeds and the
// webhooks' dispatcher subscribe (the composition root wires them), so that
// their subscribers hear of this process's own commits without waiting for
// their next poll; other processes' commits are found by the polls alone.
// An explicit port rather than a wrapper around the writer: whoever wants
// to hear of writes subscribes here, and the ingest path knows no listener.

export interface WriteNotice {
  readonly kind: Kind;
  /** The collections of the records written (domain/chains.ts collectionRef). */
  readonly collections: ReadonlySet<string>;
}

export type WriteListener = (notice: WriteNotice) => void;

export class WriteNotices {
  readonly #listeners = new Set<WriteListener>();

  /** Calls `listener` after each commit that changed something; returns the unsubscribe. */
  subscribe(listener: WriteListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells every listener; one that throws does not keep the others from hearing, nor fail the write. */
  publish(notice: WriteNotice): void {
    for (const listener of this.#listeners) {
      try {
        listener(notice);
      } catch {
        // A listener's failure is its own: the write is committed and answered.
      }
    }
  }
}
