import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { ReadRepositories } from "../store/ports/reads.js";
import type { WebhookStore } from "../store/ports/webhooks.js";
import { WebhookAdmin } from "../service/webhooks/admin.js";
import type { WebhookDeps } from "../service/webhooks/webhook-service.js";
import { type DispatcherThread, startDispatcherThread } from "./webhooks-thread.js";
import type { WebhookLog } from "../service/webhooks/held.js";
import type { WriteNotice } from "../service/write-notices.js";
import { isFeedKind } from "../domain/kinds/index.js";
import type { WebhookSettings } from "../config/serve.js";

// A server's webhooks, composed: their administration (WebhookService) and,
// unless turned off, this process's deliveries in a worker thread of their
// own (webhooks-thread.ts starts it, webhooks-worker.ts is its composition
// root), over the webhooks' store the server's composition root opened.

export interface WebhookRuntime extends WebhookDeps {
  /** A commit of this process (write-notices.ts): the webhooks of its collections read now, not at the next poll. */
  onWrite(notice: WriteNotice): void;
  /** This process's deliveries (a worker thread); undefined with --no-webhooks. */
  readonly dispatcher: DispatcherThread | undefined;
  /** Stops delivering (positions written, leases given back) and closes the webhooks' store. */
  close(): Promise<void>;
}

/**
 * Administration over `hooks` (the server's thread: WebhookService), and
 * deliveries from a worker thread of their own on `db` (webhooks-thread.ts).
 */
export function startWebhooks(db: string, store: ReadRepositories, hooks: WebhookStore, settings: WebhookSettings, log: WebhookLog): WebhookRuntime {
  const admin = new WebhookAdmin(store, hooks, { allowPrivate: settings.allowPrivate });
  const dispatcher = settings.deliver
    ? startDispatcherThread({ db, holder: `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`, settings }, log)
    : undefined;
  let closing: Promise<void> | undefined;
  return {
    admin,
    dispatcher,
    stats: () => dispatcher?.stats() ?? [],
    onWrite: (notice) => {
      if (isFeedKind(notice.kind)) dispatcher?.poke(notice.collections);
    },
    close: () => (closing ??= (async () => {
      await dispatcher?.close();
      await hooks.close();
    })()),
  };
}
