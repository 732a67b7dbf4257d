import { create } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
} from "../../gen/health/v1/health_pb.js";

// Health for load balancers and orchestrators, without an API key:
// - GET /healthz: the process is alive and its event loop answers;
// - GET /readyz: ready for traffic (store readable, schema current, not
//   shutting down); 503 from the moment shutdown starts, so that load
//   balancers drain this server before it stops accepting;
// - grpc.health.v1.Health (Check, Watch, List) on every RPC protocol, per
//   service ("" is the whole server), with the same readiness.

export interface Readiness {
  /** Undefined when ready; otherwise why not. */
  notReadyReason(): string | undefined | Promise<string | undefined>;
}

/** Shutdown as an event: admission, readiness and health watchers follow it. */
export class Lifecycle {
  #shuttingDown = false;
  readonly #listeners = new Set<() => void>();

  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const l of this.#listeners) l();
  }

  /** Calls `listener` at shutdown; returns the function that unsubscribes. */
  onShutdown(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

/** How often Watch re-checks readiness that can change without a shutdown (a store migrated under the server). */
const WATCH_POLL_MS = 5000;

export function healthRoutes(router: ConnectRouter, services: readonly string[], readiness: Readiness, lifecycle: Lifecycle): void {
  const known = new Set(["", ...services]);
  const status = async (service: string): Promise<Status> => {
    if (!known.has(service)) return Status.SERVICE_UNKNOWN;
    return (await readiness.notReadyReason()) === undefined ? Status.SERVING : Status.NOT_SERVING;
  };
  router.service(Health, {
    async check(req) {
      const s = await status(req.service);
      if (s === Status.SERVICE_UNKNOWN) throw new ConnectError(`unknown service ${JSON.stringify(req.service.slice(0, 100))}`, Code.NotFound);
      return { status: s };
    },
    async list() {
      const entries = await Promise.all([...known].map(async (s) => [s, create(HealthCheckResponseSchema, { status: await status(s) })]));
      return create(HealthListResponseSchema, { statuses: Object.fromEntries(entries) });
    },
    async *watch(req, context) {
      // The current status at once, then each change, until the caller leaves or the server stops.
      let last: Status | undefined;
      let wake: (() => void) | undefined;
      const unsubscribe = lifecycle.onShutdown(() => wake?.());
      const onAbort = () => wake?.();
      context.signal.addEventListener("abort", onAbort);
      try {
        while (!context.signal.aborted) {
          const s = await status(req.service);
          if (s !== last) {
            last = s;
            yield { status: s };
          }
          // A stream cannot outlive the shutdown deadline: it ends once NOT_SERVING was sent.
          if (lifecycle.shuttingDown) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, WATCH_POLL_MS);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
      } finally {
        unsubscribe();
        context.signal.removeEventListener("abort", onAbort);
      }
    },
  });
}

/** GET /metrics in Prometheus' text format, without an API key (bind it to a private port with --metrics-port). */
export function registerMetricsEndpoint(app: FastifyInstance, metrics: { registry: { contentType: string; metrics(): Promise<string> } }): void {
  app.get("/metrics", async (_request, reply) =>
    reply.header("cache-control", "no-store").type(metrics.registry.contentType).send(await metrics.registry.metrics()),
  );
}

export function registerHealthEndpoints(app: FastifyInstance, readiness: Readiness): void {
  app.get("/healthz", (_request, reply) => reply.header("cache-control", "no-store").send({ status: "ok" }));
  app.get("/readyz", async (_request, reply) => {
    const reason = await readiness.notReadyReason();
    return reply
      .code(reason === undefined ? 200 : 503)
      .header("cache-control", "no-store")
      .send(reason === undefined ? { status: "ready" } : { status: "not ready", reason });
  });
}
