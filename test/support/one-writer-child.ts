import { oneSqliteWriter } from "../../src/store/sqlite/one-writer.js";
import { handlerFor } from "../../src/domain/kinds/index.js";

// A process that writes one batch of sales to the SQLite store named by its
// argument through the elected writer (one-writer.test.ts), says so on
// stdout, then waits to be killed: while it lives, it may be the file's writer.

const path = process.argv[2]!;
const from = Number(process.argv[3] ?? 0);
const check = handlerFor("sales", { latestTime: Number.MAX_SAFE_INTEGER });
const batch = Array.from({ length: 50 }, (_, k) => {
  const i = from + k;
  return check.check({
    hash: `0x${i.toString(16).padStart(64, "0")}`, from: `0x${"1".repeat(40)}`, to: `0x${"2".repeat(40)}`,
    contractAddress: `0x${"a".repeat(40)}`, assetId: String(i % 500), timestamp: 1_700_000_000 + i, block: 18_000_000 + i,
    price: "1000", amountReceived: "900", currency: "ETH", marketplace: "BLUR",
  }, []) as Record<string, unknown>;
});
const writer = oneSqliteWriter(path);
const counts = await writer.write("sales", batch);
process.stdout.write(`${JSON.stringify(counts)}\n`);
setInterval(() => {}, 1000);
