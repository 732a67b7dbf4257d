// npm run bench:import [-- --rows N]: import throughput of sales NDJSON, in
// rows/s, through the real CLI path (file read, checks, upserts, commit) into
// a fresh store; then a second run of the same file (all unchanged).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Random } from "../demo/random.js";

const { values } = parseArgs({ options: { rows: { type: "string", default: "200000" }, help: { type: "boolean", short: "h" } } });
if (values.help) {
  console.log("usage: npm run bench:import [-- --rows N]   (default 200000 sales)");
  process.exit(0);
}
const rows = Number(values.rows);
const dir = mkdtempSync(join(tmpdir(), "marketdata-bench-import-"));
const bin = fileURLToPath(new URL("../bin/marketdata.js", import.meta.url));
try {
  const rnd = new Random(42);
  const collection = `0x${rnd.hex(40)}`;
  const wallets = Array.from({ length: 2000 }, () => `0x${rnd.hex(40)}`);
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) {
    const price = BigInt(Math.round((0.5 + rnd.next() * 40) * 1e6)) * 10n ** 12n;
    lines.push(
      JSON.stringify({
        hash: `0x${rnd.hex(64)}`,
        from: rnd.pick(wallets),
        to: rnd.pick(wallets),
        contractAddress: collection,
        assetId: String(rnd.int(0, 9999)),
        timestamp: 1_700_000_000 + i * 30,
        block: 18_000_000 + i * 2,
        price: price.toString(),
        amountReceived: ((price * 975n) / 1000n).toString(),
        currency: "ETH",
        marketplace: rnd.pick(["OPENSEA", "BLUR", "LOOKSRARE", "X2Y2", "SUDOSWAP", "OTHER"]),
      }),
    );
  }
  const file = join(dir, "sales.ndjson");
  writeFileSync(file, `${lines.join("\n")}\n`);
  const db = join(dir, "bench.sqlite");
  for (const label of ["fresh store", "same file again"]) {
    const r = spawnSync(process.execPath, [bin, "import", "--db", db, "sales", file], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(r.stderr);
    const rate = r.stderr.match(/\((\d+) rows\/s\)/)?.[1];
    console.log(`${label.padEnd(16)} ${rows} sales: ${rate} rows/s   (${r.stderr.trim().split("\n").pop()})`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
