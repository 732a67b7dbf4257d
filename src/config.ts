import { availableParallelism } from "node:os";

// Server configuration, validated once at startup. The CLI layer fills the
// flags from the command line, then the environment (MARKETDATA_DB, PORT,
// HOST, CACHE_MB, WORKERS, LOG_LEVEL), then defaults; nothing below it reads
// process.env.

export const DEFAULT_DB = "data/marketdata.sqlite";
export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_CACHE_MB = 64;
export const DEFAULT_LOG_LEVEL = "info";
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
const MAX_WORKERS = 64;

export interface ServeConfig {
  db: string;
  port: number;
  host: string;
  /** Response cache size; 0 turns it off. */
  cacheMb: number;
  /** Processes serving the port (node:cluster); 1 serves from this process. */
  workers: number;
  logLevel: LogLevel;
}

export class ConfigError extends Error {}

export interface ServeFlags {
  db?: string | undefined;
  port?: string | undefined;
  host?: string | undefined;
  cacheMb?: string | undefined;
  workers?: string | undefined;
  logLevel?: string | undefined;
}

export function defaultWorkers(): number {
  return availableParallelism();
}

function wholeNumber(text: string, name: string, min: number, max: number): number {
  if (!/^[0-9]{1,9}$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return Number(text);
}

export function resolveServeConfig(flags: ServeFlags): ServeConfig {
  const db = flags.db ?? DEFAULT_DB;
  const host = flags.host ?? DEFAULT_HOST;
  if (db.trim() === "") throw new ConfigError("--db (MARKETDATA_DB) must not be empty");
  if (host.trim() === "") throw new ConfigError("--host (HOST) must not be empty");
  const logLevel = (flags.logLevel ?? DEFAULT_LOG_LEVEL).toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`--log-level (LOG_LEVEL) must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(flags.logLevel)}`);
  }
  return {
    db,
    host,
    port: wholeNumber(flags.port ?? String(DEFAULT_PORT), "--port (PORT)", 0, 65535),
    cacheMb: wholeNumber(flags.cacheMb ?? String(DEFAULT_CACHE_MB), "--cache-mb (CACHE_MB)", 0, 1_000_000),
    workers: wholeNumber(flags.workers ?? String(defaultWorkers()), "--workers (WORKERS)", 1, MAX_WORKERS),
    logLevel: logLevel as LogLevel,
  };
}
