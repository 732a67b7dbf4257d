import type { FastifyInstance } from "fastify";
import type { ServeConfig } from "../config.js";
import { buildServer } from "../server.js";
import { ApiKeyVerifier } from "../store/api-keys.js";
import { openReadOnly } from "../store/database.js";
import { ReadStore } from "../store/read-store.js";

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  /** Stops accepting connections, lets requests in flight finish, closes the store. */
  close(): Promise<void>;
}

export async function startServer(config: ServeConfig): Promise<RunningServer> {
  const db = openReadOnly(config.db);
  const app = await buildServer({
    store: new ReadStore(db),
    keys: new ApiKeyVerifier(db),
    logger: { level: "info" },
  });
  try {
    const url = await app.listen({ port: config.port, host: config.host });
    return {
      app,
      url,
      close: async () => {
        await app.close();
        db.close();
      },
    };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Serves until SIGINT or SIGTERM, then shuts down gracefully. */
export async function serveUntilSignalled(config: ServeConfig, onReady?: (url: string) => void): Promise<void> {
  const server = await startServer(config);
  onReady?.(server.url);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      server.app.log.info({ signal }, "shutting down: finishing requests in flight");
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      server.close().then(resolve, (err) => {
        server.app.log.error({ err }, "error during shutdown");
        process.exitCode = 1;
        resolve();
      });
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
