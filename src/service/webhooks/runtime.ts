import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { ReadRepositories } from "../../store/ports/reads.js";
import type { WebhookStore } from "../../store/ports/webhooks.js";
import type { WebhookDeps } from "../services.js";
import { WebhookAdmin } from "./admin.js";
import { type DispatcherThread, startDispatcherThread } from "./dispatcher-thread.js";
import type { WebhookLog } from "./dispatcher.js";
import type { WebhookSettings } from "../../config/serve.js";

export type { WebhookSettings };

// A server's webhooks: their administration (WebhookService) and, unless
// turned off, this process's deliveries, over the webhooks' store the
// composition root opened.


export interface WebhookRuntime extends WebhookDeps {
  /** This process's deliveries (a worker thread); undefined with --no-webhooks. */
  readonly dispatcher: DispatcherThread | undefined;
  /** Stops delivering (positions written, leases given back) and closes the webhooks' store. */
  close(): Promise<void>;
}

/**
 * Administration over `hooks` (the server's thread: WebhookService), and
 * deliveries from a worker thread of their own on `db` (dispatcher-thread.ts).
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
    poke: (collections) => dispatcher?.poke(collections),
    close: () => (closing ??= (async () => {
      await dispatcher?.close();
      await hooks.close();
    })()),
  };
}
