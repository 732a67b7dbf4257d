import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { API_KEY_HEADER, type ErrorLogger, type KeyVerifier, publicError, requireApiKey } from "../policy/guards.js";
import { PUBLIC_SERVICE_NAMES } from "../policy/public-services.js";
import { NOT_ADMIN_KEY, READ_ONLY_KEY } from "../policy/admission.js";
import { mayIngest } from "../../store/ports/keys.js";
import { IngestService } from "../../../gen/marketdata/v1/ingest_service_pb.js";
import { WebhookService } from "../../../gen/marketdata/v1/webhook_service_pb.js";
import type { StreamOutcome } from "../stream/pipeline.js";

/**
 * The request's own logger (bound to its request id), set by the transport
 * for each call so that interceptors and handlers log in its context.
 */
export const requestLogger = createContextKey<ErrorLogger | undefined>(undefined, { description: "request logger" });

/** A server stream's count of messages sent, set by the transport for its log line (stream/pipeline.ts streamOutcomes). */
export const streamOutcome = createContextKey<StreamOutcome | undefined>(undefined, { description: "a stream's messages sent" });

/** The interceptors of every RPC path, in order: masking outermost, so auth failures pass through it. */
export function rpcInterceptors(keys: KeyVerifier, log: ErrorLogger): Interceptor[] {
  return [maskInternalErrors(log), apiKeyInterceptor(keys), countStreamMessages];
}

/** Counts the messages a server stream hands to connect-node (Connect and gRPC-Web feeds), for its request log line. */
const countStreamMessages: Interceptor = (next) => async (req) => {
  const res = await next(req);
  const outcome = req.contextValues.get(streamOutcome);
  if (!res.stream || outcome === undefined) return res;
  return { ...res, message: counted(res.message, outcome) };
};

async function* counted<T>(messages: AsyncIterable<T>, outcome: StreamOutcome): AsyncIterable<T> {
  for await (const m of messages) {
    outcome.messages++;
    yield m;
  }
}

/**
 * Refuses any call without a valid, unrevoked x-api-key before the service
 * is reached (health and reflection excepted), and a write with a key that
 * may only read. The gate (gate.ts) admits every call first; this holds
 * wherever the router is mounted without it.
 */
export function apiKeyInterceptor(keys: KeyVerifier): Interceptor {
  return (next) => async (req) => {
    if (!PUBLIC_SERVICE_NAMES.has(req.service.typeName)) {
      const grant = await requireApiKey(keys, req.header.get(API_KEY_HEADER));
      if (req.service.typeName === IngestService.typeName && !mayIngest(grant.scope)) throw READ_ONLY_KEY;
      if (req.service.typeName === WebhookService.typeName && grant.scope !== "admin") throw NOT_ADMIN_KEY;
    }
    return next(req);
  };
}

/** Masks unexpected errors (guards.publicError), logging them with the request's logger. */
export function maskInternalErrors(fallbackLog: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      throw publicError(err, req.contextValues.get(requestLogger) ?? fallbackLog, req.url);
    }
  };
}
