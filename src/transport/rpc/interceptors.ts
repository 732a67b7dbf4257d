import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { API_KEY_HEADER, type ErrorLogger, type KeyVerifier, publicError, requireApiKey } from "../policy/guards.js";
import { PUBLIC_SERVICE_NAMES } from "../policy/public-services.js";

/**
 * The request's own logger (bound to its request id), set by the transport
 * for each call so that interceptors and handlers log in its context.
 */
export const requestLogger = createContextKey<ErrorLogger | undefined>(undefined, { description: "request logger" });

/** The interceptors of every RPC path, in order: masking outermost, so auth failures pass through it. */
export function rpcInterceptors(keys: KeyVerifier, log: ErrorLogger): Interceptor[] {
  return [maskInternalErrors(log), apiKeyInterceptor(keys)];
}

/** Refuses any call without a valid, unrevoked x-api-key before the service is reached (health and reflection excepted). */
export function apiKeyInterceptor(keys: KeyVerifier): Interceptor {
  return (next) => async (req) => {
    if (!PUBLIC_SERVICE_NAMES.has(req.service.typeName)) await requireApiKey(keys, req.header.get(API_KEY_HEADER));
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
