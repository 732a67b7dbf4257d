// Server configuration: read once at startup from flags, then environment,
// then defaults; validated here so nothing downstream reads process.env.

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

export function resolveServeConfig(flags: ServeFlags, env: NodeJS.ProcessEnv): ServeConfig {
  const db = flags.db ?? env.MARKETDATA_DB ?? DEFAULT_DB;
  const portText = flags.port ?? env.PORT ?? String(DEFAULT_PORT);
  const host = flags.host ?? env.HOST ?? DEFAULT_HOST;
  if (db.trim() === "") throw new ConfigError("--db (MARKETDATA_DB) must not be empty");
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) > 65535) {
    throw new ConfigError(`--port (PORT) must be an integer from 0 to 65535, got ${JSON.stringify(portText)}`);
  }
  if (host.trim() === "") throw new ConfigError("--host (HOST) must not be empty");
  return { db, port: Number(portText), host };
}
