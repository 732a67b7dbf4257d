// Server configuration, validated once at startup. The CLI layer fills the
// flags from the command line, then MARKETDATA_DB / PORT / HOST, then
// defaults; nothing below it reads process.env.

export const DEFAULT_DB = "data/marketdata.sqlite";
export const DEFAULT_PORT = 8080;
export const DEFAULT_HOST = "127.0.0.1";

export interface ServeConfig {
  db: string;
  port: number;
  host: string;
}

export class ConfigError extends Error {}

export interface ServeFlags {
  db?: string | undefined;
  port?: string | undefined;
  host?: string | undefined;
}

export function resolveServeConfig(flags: ServeFlags): ServeConfig {
  const db = flags.db ?? DEFAULT_DB;
  const portText = flags.port ?? String(DEFAULT_PORT);
  const host = flags.host ?? DEFAULT_HOST;
  if (db.trim() === "") throw new ConfigError("--db (MARKETDATA_DB) must not be empty");
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new ConfigError(`--port (PORT) must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`);
  }
  if (host.trim() === "") throw new ConfigError("--host (HOST) must not be empty");
  return { db, port: Number(portText), host };
}
