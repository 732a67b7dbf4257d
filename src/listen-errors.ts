import { ConfigError } from "./config/checks.js";

// A listener that cannot start (the API port, --metrics-port), said as the
// operator can fix it, naming the flags that choose it; anything else as it is.

export interface ListenerFlags {
  port: string;
  host: string;
}

export const API_LISTENER: ListenerFlags = { port: "--port N, or PORT=N for npm start", host: "--host (HOST)" };
export const METRICS_LISTENER: ListenerFlags = { port: "--metrics-port N (METRICS_PORT)", host: "--metrics-host (METRICS_HOST)" };

export function listenError(err: unknown, host: string, port: number, flags: ListenerFlags): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "EADDRINUSE") return new ConfigError(`port ${port} on ${host} is already in use (another server?): choose another with ${flags.port}`);
  if (code === "EACCES") return new ConfigError(`port ${port} on ${host} needs privileges this process lacks: choose one above 1023 with ${flags.port}`);
  if (code === "EADDRNOTAVAIL") return new ConfigError(`${host} is not an address of this machine: choose another with ${flags.host}`);
  // getaddrinfo: no such name (256.1.1.1 is no address, so it is looked up as one).
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EAI_NONAME") {
    return new ConfigError(`${host} is neither an address of this machine nor a name that resolves: choose another with ${flags.host}`);
  }
  return err;
}
