import { parentPort, workerData } from "node:worker_threads";
import { openReadRepositories, openWebhookStore } from "../store/open.js";
import { DeliveryClient } from "../service/webhooks/delivery.js";
import { WebhookDispatcher } from "../service/webhooks/dispatcher.js";
import type { DispatcherThreadData, DispatcherThreadMessage, DispatcherThreadReply } from "./webhooks-thread.js";

// The worker thread that delivers a server process's webhooks
// (webhooks-thread.ts starts it): reads of the feeds, the batches' JSON,
// their signatures and their HTTPS requests run here, on an event loop of
// their own, so a burst of deliveries never holds an ingest request or a
// read behind it in the server's thread. Its own connections to the store.

const port = parentPort!;
const data = workerData as DispatcherThreadData;
const log = {
  warn: (obj: object, msg: string) => port.postMessage({ type: "log", level: "warn", obj, msg } satisfies DispatcherThreadReply),
  info: (obj: object, msg: string) => port.postMessage({ type: "log", level: "info", obj, msg } satisfies DispatcherThreadReply),
};
const store = await openReadRepositories(data.db, { poolSize: 4 });
const hooks = await openWebhookStore(data.db);
const s = data.settings;
const policy = { allowPrivate: s.allowPrivate };
const dispatcher = new WebhookDispatcher(store, hooks, {
  holder: data.holder,
  client: new DeliveryClient({ policy, timeoutMs: s.timeoutMs, ca: s.ca }),
  log,
  retryForMs: s.retryForMs,
  attemptMs: s.timeoutMs,
  concurrency: s.concurrency,
  perDestination: s.perDestination,
  ...(s.pollMs === undefined ? {} : { pollMs: s.pollMs }),
  ...(s.leaseMs === undefined ? {} : { leaseMs: s.leaseMs }),
  ...(s.leaseEveryMs === undefined ? {} : { leaseEveryMs: s.leaseEveryMs }),
  ...(s.batchSize === undefined ? {} : { batchSize: s.batchSize }),
});
dispatcher.start();
// The figures for metrics and GetWebhook, a second old at most.
const stats = setInterval(() => port.postMessage({ type: "stats", stats: dispatcher.stats() } satisfies DispatcherThreadReply), 1000);
port.postMessage({ type: "ready" } satisfies DispatcherThreadReply);

port.on("message", (m: DispatcherThreadMessage) => {
  if (m === "close") {
    clearInterval(stats);
    void (async () => {
      await dispatcher.close();
      await hooks.close();
      await store.close();
      port.close();
    })();
    return;
  }
  dispatcher.poke(new Set(m.poke));
});
