import { create } from "@bufbuild/protobuf";
import { Code, type ConnectRouter, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import type { PublicGuard } from "../policy/admission.js";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
} from "../../../gen/health/v1/health_pb.js";

// Health for load balancers and orchestrators, without an API key:
// - GET /healthz: the process is alive and its event loop answers;
// - GET /readyz: ready for traffic (store readable, schema current, not
//   shutting down); 503 from the moment shutdown starts, so that load
//   balancers drain this server before it stops accepting; 200 with status
//   "degraded" while it serves without something it depends on (Redis);
// - grpc.health.v1.Health (Check, Watch, List) on every RPC protocol, per
//   service ("" is the whole server), with the same readiness.
// All of them answer without a key but within the caller's address limit,
// and readiness is checked against the store at most once a second.

export interface Readiness {
  /** Undefined when ready; otherwise why not. */
  notReadyReason(): string | undefined | Promise<string | undefined>;
  /** Serving, but with something it depends on failing (a shared rate-limit store); undefined when not. */
  degradedReason?(): string | undefined;
}

/** How long a readiness answer is reused: probes and Health calls cost the store at most one check per second. */
export const READINESS_TTL_MS = 1000;

/**
 * Reuses `check`'s answer for READINESS_TTL_MS (one check in flight at a
 * time, whoever asks); `shuttingDown` is read on every call, so draining is
 * never reported late.
 */
export function cachedReadiness(
  check: () => Promise<string | undefined>,
  lifecycle: Lifecycle,
  degraded?: () => string | undefined,
  now: () => number = performance.now.bind(performance),
): Readiness {
  let last: { at: number; answer: Promise<string | undefined> } | undefined;
  return {
    notReadyReason() {
      if (lifecycle.shuttingDown) return "shutting down";
      const t = now();
      if (last === undefined || t - last.at >= READINESS_TTL_MS) last = { at: t, answer: check() };
      return last.answer;
    },
    ...(degraded === undefined ? {} : { degradedReason: degraded }),
  };
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


export function registerHealthEndpoints(app: FastifyInstance, readiness: Readiness, guard: PublicGuard): void {
  app.get("/healthz", { onRequest: guard }, (_request, reply) => reply.header("cache-control", "no-store").send({ status: "ok" }));
  app.get("/readyz", { onRequest: guard }, async (_request, reply) => {
    const reason = await readiness.notReadyReason();
    const degraded = reason === undefined ? readiness.degradedReason?.() : undefined;
    return reply
      .code(reason === undefined ? 200 : 503)
      .header("cache-control", "no-store")
      .send(
        reason !== undefined
          ? { status: "not ready", reason }
          : degraded !== undefined
            ? { status: "degraded", reason: degraded }
            : { status: "ready" },
      );
  });
}
