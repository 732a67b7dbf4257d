import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { ServeConfig } from "../config/serve.js";
import { openKeyAdmin, openReadRepositories, openWritableStore, refusePostgres } from "../store/open.js";
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
  const sale = address === undefined ? undefined : await exampleSale(config.db, address);
  await serveUntilSignalled(config, (url) => process.stdout.write(`${welcome(url, config.db, address, key, sale)}\n`));
}

/** Where the printed sale stands: its token's owner (its seller) and the block after the collection's newest sale or transfer (so that it moves the owner). */
export interface ExampleSale {
  seller: string;
  block: number;
}

/** The printed ingest example's token 1 as the store holds it (docs: "the printed ingest example sells at the next block and moves the owner"). */
async function exampleSale(db: string, address: string): Promise<ExampleSale | undefined> {
  const repos = await openReadRepositories(db, { poolSize: 1 });
  try {
    const id = await repos.collections.collectionId(address);
    if (id === undefined) return undefined;
    const first = { limit: 1, after: null };
    const [token] = (await repos.tokens.tokensPage({ collectionId: id, assetId: "1", sort: "id" }, first)).rows;
    const [sale] = (await repos.sales.salesPage(id, {}, first)).rows;
    const [transfer] = (await repos.transfers.transfersPage(id, first)).rows;
    return { seller: token?.owner || `0x${"1".repeat(40)}`, block: Math.max(sale?.block ?? 0, transfer?.block ?? 0) + 1 };
  } finally {
    await repos.close();
  }
}

/**
 * An example of each GET endpoint (its query; $C: the collection shown),
 * by path: what `npm start` prints, one ready-to-paste line each. The
 * start test holds it to every GET rule of the contract.
 */
export const READ_EXAMPLES: Record<string, string> = {
  "/v1/asset/appraisals": "contractAddress=$C&limit=3",
  "/v1/asset/rarity": "contractAddress=$C&limit=3",
  "/v1/collection/stats": "contractAddress=$C",
  "/v1/asset/sales": "contractAddress=$C&limit=3",
  "/v1/asset/listings": "contractAddress=$C&status=CREATED&limit=3",
  "/v1/collection/influencers": "contractAddress=$C&limit=3",
  "/v1/collection/tweets": "contractAddress=$C&limit=3",
  "/v1/collection/scores": "contractAddress=$C",
  "/v1/collection/floor": "contractAddress=$C",
  "/v1/collection/holders": "contractAddress=$C&limit=3",
  "/v1/collection/stats/series": "contractAddress=$C&interval=week&limit=3",
  "/v1/collection/candles": "contractAddress=$C&interval=1d&limit=3",
  "/v1/asset/tokens": "contractAddress=$C&sort=price&limit=3",
  "/v1/asset/owners": "contractAddress=$C&assetId=1",
  "/v1/collection/traits": "contractAddress=$C",
  "/v1/collection/market": "contractAddress=$C",
  "/v1/asset/offers": "contractAddress=$C&limit=3",
  "/v1/collections": "sort=volume7d&limit=3",
  "/v1/collection/activity": "contractAddress=$C&types=sale,transfer&limit=3",
};

/** The live feeds: streamed until Ctrl-C. */
export const STREAM_EXAMPLES: Record<string, string> = {
  "/v1/asset/sales/stream": "contractAddress=$C",
  "/v1/asset/listings/stream": "contractAddress=$C",
  "/v1/asset/offers/stream": "contractAddress=$C",
  "/v1/collection/activity/stream": "contractAddress=$C",
};

/** What `npm start` prints once it serves: the key, then shell lines to paste, every one runnable as it stands. */
export function welcome(url: string, db: string, address: string | undefined, key: string | undefined, at?: ExampleSale): string {
  if (!key) return `\nIssue an API key with: npx marketdata keys create --db ${shellQuote(db)} --name <who>\n`;
  const c = address ?? "0x0000000000000000000000000000000000000000";
  const get = (path: string, query: string) => `  curl -s "$URL${path}?${query}" -H "x-api-key: $KEY"`;
  // Token 1 sold by its owner at the next block: the sale moves it to its buyer, as a new one would.
  const from = at?.seller ?? `0x${"1".repeat(40)}`;
  const sale = {
    hash: `0x${randomBytes(32).toString("hex")}`,
    from,
    to: from === `0x${"2".repeat(40)}` ? `0x${"3".repeat(40)}` : `0x${"2".repeat(40)}`,
    contractAddress: c,
    assetId: "1",
    timestamp: Math.floor(Date.now() / 1000),
    block: at?.block ?? 1,
    price: "1000000000000000000",
    amountReceived: "975000000000000000",
    currency: "ETH",
    marketplace: "OPENSEA",
  };
  return [
    "",
    `Demo API key: ${key}`,
    "",
    "Set these in your shell, then paste any line below (documentation: " + `${url}/docs):`,
    `  export URL=${url} KEY=${key} C=${c}`,
    "",
    "Read (every endpoint):",
    ...Object.entries(READ_EXAMPLES).map(([path, query]) => get(path, query)),
    "",
    "Live feeds, as Server-Sent Events (Ctrl-C stops; -N: each event as it comes):",
    ...Object.entries(STREAM_EXAMPLES).map(([path, query]) => get(path, query).replace("curl -s ", "curl -sN ")),
    "",
    "Write a sale through the ingest API, with a key of the ingest scope (then watch it arrive on the feed; token 1 is the buyer's):",
    `  export INGEST_KEY=$(npx marketdata keys create --db ${shellQuote(db)} --name indexer --scope ingest | tail -n 1)`,
    `  echo '${JSON.stringify(sale)}' | curl -s "$URL/v1/ingest/sales" -H "x-api-key: $INGEST_KEY" -H "content-type: application/x-ndjson" --data-binary @-`,
    "",
  ].join("\n");
}

/** `s` as one shell word. */
function shellQuote(s: string): string {
  return /^[\w./-]+$/.test(s) ? s : `'${s.replaceAll("'", "'\\''")}'`;
}
