import { createWriteStream } from "node:fs";
import { once } from "node:events";
import { Random } from "../src/demo/random.js";

// The generated collection the stats and engine benchmarks import: sales
// over two years on six marketplaces, prices heavy-tailed.

export const YEAR = 365 * 86400;
export const MARKETPLACES = ["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2", "SUDOSWAP", "OTHER"];

/**
 * n sales on six marketplaces, in time order from `start` over `span`
 * seconds (by default two years from 2022-01-01), as NDJSON lines; every
 * 100th sale is of asset 0 (10,000 of 1M). Prices are heavy-tailed at the
 * bottom (a fifth under a tenth of the median: flagged as outliers,
 * docs/wash-trades.md), or with `narrow`, 5 to 15 ETH (none).
 */
export function* saleLines(n: number, seed: number, address: string, time: { start?: number; span?: number; narrow?: boolean } = {}): Generator<string> {
  const rnd = new Random(seed);
  const wallets = Array.from({ length: 2000 }, () => `0x${rnd.hex(40)}`);
  const start = time.start ?? 1_640_995_200;
  const step = (time.span ?? 2 * YEAR) / n;
  for (let i = 0; i < n; i++) {
    const u = rnd.next();
    const price = BigInt(Math.round((time.narrow === true ? 5 + u * 10 : 0.5 + u ** 3 * 80) * 1e6)) * 10n ** 12n;
    yield JSON.stringify({
      hash: `0x${rnd.hex(64)}`,
      from: rnd.pick(wallets),
      to: rnd.pick(wallets),
      contractAddress: address,
      assetId: i % 100 === 0 ? "0" : String(rnd.int(1, 9999)),
      timestamp: Math.floor(start + i * step),
      block: 14_000_000 + i,
      price: price.toString(),
      amountReceived: ((price * 975n) / 1000n).toString(),
      currency: "ETH",
      marketplace: rnd.pick(MARKETPLACES),
    });
  }
}

/**
 * n tokens (ids 1..n) with up to eight traits of skewed frequency, as
 * NDJSON lines: bench:derive's and bench:ingest's 10,000-token collection.
 */
export function* tokenLines(n: number, address: string): Generator<string> {
  const rnd = new Random(5);
  const types = ["background", "fur", "eyes", "mouth", "hat", "clothes", "earring", "accessory"];
  for (let i = 1; i <= n; i++) {
    const attributes = types
      .filter(() => rnd.next() < 0.8)
      .map((t) => ({ trait_type: t, value: `${t}-${Math.floor(rnd.next() ** 2 * 30)}` }));
    yield JSON.stringify({ contractAddress: address, assetId: String(i), attributes });
  }
}

/** NDJSON of n sales (saleLines) in a file. */
export async function writeSales(path: string, n: number, seed: number, address: string): Promise<void> {
  await writeLines(path, saleLines(n, seed, address));
}

/** Lines written to a file, one per line. */
export async function writeLines(path: string, lines: Iterable<string>): Promise<void> {
  const out = createWriteStream(path);
  for (const line of lines) {
    if (!out.write(`${line}\n`)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");
}

/** n listings of tokens 1..9999 over two years from 2022-01-01, each its own marketplace id; a fifth of them cancelled a day later. */
export function* listingLines(n: number, seed: number, address: string): Generator<string> {
  const rnd = new Random(seed);
  const step = (2 * YEAR) / n;
  for (let i = 0; i < n; i++) {
    const createdAt = Math.floor(1_640_995_200 + i * step);
    const cancelled = rnd.next() < 0.2;
    yield JSON.stringify({
      marketplaceId: String(1_000_000 + i),
      marketplace: rnd.pick(MARKETPLACES),
      contractAddress: address,
      assetId: String(rnd.int(1, 9999)),
      createdAt,
      lastUpdatedAt: cancelled ? createdAt + 86_400 : createdAt,
      price: (BigInt(Math.round((0.5 + rnd.next() ** 3 * 80) * 1e6)) * 10n ** 12n).toString(),
      currency: "ETH",
      status: cancelled ? "CANCELLED" : "CREATED",
    });
  }
}

/**
 * Transfers n, from the `first`th of a history in which each of `tokens`
 * tokens is minted, then moves once a step between 500 wallets (every
 * token's transfers follow each other: balances and owners move on each).
 */
export function* transferLines(n: number, first: number, tokens: number, address: string): Generator<string> {
  const wallet = (w: number) => `0x${w.toString(16).padStart(40, "0")}`;
  for (let i = first; i < first + n; i++) {
    const step = Math.floor(i / tokens);
    const token = i % tokens;
    yield JSON.stringify({
      hash: `0x${(i + 1).toString(16).padStart(64, "0")}`, logIndex: 0, from: step === 0 ? wallet(0) : wallet(1 + ((token + step - 1) % 500)),
      to: wallet(1 + ((token + step) % 500)), contractAddress: address, assetId: String(token), timestamp: 1_700_000_000 + i, block: 1000 + i,
    });
  }
}
