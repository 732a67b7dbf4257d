import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

export interface KeyVerifier {
  isValid(key: string): boolean;
}

export interface ErrorLogger {
  error(obj: object, msg: string): void;
}

export const API_KEY_HEADER = "x-api-key";

/**
 * Refuses any call without a valid, unrevoked x-api-key before the service
 * (and so the store's data) is reached. Guards REST too, which is routed
 * through the same interceptors.
 */
export function apiKeyInterceptor(keys: KeyVerifier): Interceptor {
  return (next) => async (req) => {
    const key = req.header.get(API_KEY_HEADER);
    if (!key) {
      throw new ConnectError(`missing API key: send it in the ${API_KEY_HEADER} header`, Code.Unauthenticated);
    }
    if (!keys.isValid(key)) {
      throw new ConnectError("invalid or revoked API key", Code.Unauthenticated);
    }
    return next(req);
  };
}

/**
 * Logs unexpected errors and replaces them with a bare internal error, so SQL,
 * stack traces and file paths never reach a caller.
 */
export function maskInternalErrors(log: ErrorLogger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof ConnectError && err.code !== Code.Internal && err.code !== Code.Unknown) throw err;
      log.error({ err, procedure: req.url }, "internal error");
      throw new ConnectError("internal error", Code.Internal);
    }
  };
}
