import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { ServeConfig } from "../config.js";
import { openKeyAdmin, openWritableStore, refusePostgres } from "../store/open.js";
import { runDemo } from "./demo.js";
import { serveUntilSignalled } from "./serve.js";

// `npm start`: on the first run build the demo store and a demo key, then
// serve, printing the key and ready-to-paste curl lines.

export function demoKeyPath(dbPath: string): string {
  return `${dbPath}.demo-key`;
}

export async function runStart(config: ServeConfig, demoScale = "default"): Promise<void> {
  refusePostgres(config.db);
  const keyFile = demoKeyPath(config.db);
  if (!existsSync(config.db)) {
    process.stderr.write(`No store at ${config.db}: building the demo store (done once; later starts reuse it).\n`);
    await runDemo(config.db, "1", demoScale);
  }
  let key = existsSync(keyFile) ? readFileSync(keyFile, "utf8").trim() : undefined;
  let address: string | undefined;
  const store = await openWritableStore(config.db);
  try {
    address = await store.largestCollection();
  } finally {
    await store.close();
  }
  if (key === undefined) {
    const admin = await openKeyAdmin(config.db);
    try {
      if ((await admin.list()).length === 0) {
        key = (await admin.create("demo")).key;
        // Kept beside the store (git-ignored, owner-only) so later starts can print it.
        writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
      }
    } finally {
      await admin.close();
    }
  }
  await serveUntilSignalled(config, (url) => printWelcome(url, address, key));
}

function printWelcome(url: string, address: string | undefined, key: string | undefined): void {
  const lines = [""];
  if (key) {
    lines.push(`Demo API key: ${key}`, "", "Try:");
    const k = `-H "x-api-key: ${key}"`;
    const c = address ?? "0x...";
    for (const path of [
      `/v1/asset/appraisals?contractAddress=${c}&limit=3`,
      `/v1/asset/rarity?contractAddress=${c}&limit=3`,
      `/v1/collection/stats?contractAddress=${c}`,
      `/v1/asset/sales?contractAddress=${c}&limit=3`,
      `/v1/asset/listings?contractAddress=${c}&status=CREATED&limit=3`,
      `/v1/collection/influencers?contractAddress=${c}&limit=3`,
      `/v1/collection/tweets?contractAddress=${c}&limit=3`,
      `/v1/collection/scores?contractAddress=${c}`,
    ]) {
      lines.push(`  curl -s '${url}${path}' ${k}`);
    }
  } else {
    lines.push(`Issue an API key with: npx marketdata keys create --db <store> --name <who>`);
  }
  lines.push("");
  process.stdout.write(`${lines.join("\n")}\n`);
}
