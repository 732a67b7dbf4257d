import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { ReadRepositories, WebhookStore } from "../../store/ports.js";
import type { WebhookDeps } from "../services.js";
import { WebhookAdmin } from "./admin.js";
import { DeliveryClient } from "./delivery.js";
import { WebhookDispatcher } from "./dispatcher.js";

// A server's webhooks: their administration (WebhookService) and, unless
// turned off, this process's dispatcher, over the webhooks' store the
// composition root opened.

export interface WebhookSettings {
  /** Deliver from this process (false: --no-webhooks; administration still answers). */
  deliver: boolean;
  /** --allow-private-webhooks: http, loopback and private destinations. */
  allowPrivate: boolean;
  retryForMs: number;
  concurrency: number;
  perDestination: number;
  timeoutMs: number;
  /** Extra certificate authorities for receivers (PEM). */
  ca?: string | undefined;
  /** Tests: faster polls and leases. */
  pollMs?: number;
  leaseMs?: number;
  leaseEveryMs?: number;
  batchSize?: number;
}

export interface WebhookRuntime extends WebhookDeps {
  readonly dispatcher: WebhookDispatcher | undefined;
  /** Stops delivering (positions written, leases given back) and closes the webhooks' store. */
  close(): Promise<void>;
}

export function startWebhooks(store: ReadRepositories, hooks: WebhookStore, settings: WebhookSettings, log: Pick<Logger, "warn" | "info">): WebhookRuntime {
  const policy = { allowPrivate: settings.allowPrivate };
  const admin = new WebhookAdmin(store, hooks, policy);
  const dispatcher = settings.deliver
    ? new WebhookDispatcher(store, hooks, {
        holder: `${hostname()}:${process.pid}:${randomBytes(4).toString("hex")}`,
        client: new DeliveryClient({ policy, timeoutMs: settings.timeoutMs, ca: settings.ca }),
        log,
        retryForMs: settings.retryForMs,
        attemptMs: settings.timeoutMs,
        concurrency: settings.concurrency,
        perDestination: settings.perDestination,
        ...(settings.pollMs === undefined ? {} : { pollMs: settings.pollMs }),
        ...(settings.leaseMs === undefined ? {} : { leaseMs: settings.leaseMs }),
        ...(settings.leaseEveryMs === undefined ? {} : { leaseEveryMs: settings.leaseEveryMs }),
        ...(settings.batchSize === undefined ? {} : { batchSize: settings.batchSize }),
      })
    : undefined;
  dispatcher?.start();
  return {
    admin,
    dispatcher,
    stats: () => dispatcher?.stats() ?? [],
    poke: (collections) => dispatcher?.poke(collections),
    close: async () => {
      await dispatcher?.close();
      await hooks.close();
    },
  };
}
