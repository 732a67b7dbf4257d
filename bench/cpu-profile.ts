import { log } from "./harness.js";

// Reading a V8 CPU profile (node --cpu-prof) of a server: where its time went, per unit of work.

export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name and place), in µs per unit of work (a request, an event), busiest first, then per place. */
export function reportProfile(p: CpuProfile, units: number, unit: string, top: number): void {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const groups = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]!)!;
    const us = p.timeDeltas[i] ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    busy += us;
    const place = url === "" ? "" : ` ${url.replace(/^.*\/(node_modules|src|dist)\//, "$1/")}:${lineNumber + 1}`;
    const name = `${functionName || "(anonymous)"}${place}`;
    self.set(name, (self.get(name) ?? 0) + us);
    const group = groupOf(url, functionName);
    groups.set(group, (groups.get(group) ?? 0) + us);
  }
  log(`busy ${(busy / units).toFixed(1)} µs per ${unit}, idle ${((idle / (busy + idle)) * 100).toFixed(0)}% of the profile\n`);
  log(`| function (self time) | µs/${unit} | share of busy |`);
  log("|---|---|---|");
  for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    log(`| ${name} | ${(us / units).toFixed(2)} | ${((us / busy) * 100).toFixed(1)}% |`);
  }
  log(`\n| where (self time) | µs/${unit} | share of busy |`);
  log("|---|---|---|");
  for (const [name, us] of [...groups].sort((a, b) => b[1] - a[1])) {
    log(`| ${name} | ${(us / units).toFixed(2)} | ${((us / busy) * 100).toFixed(1)}% |`);
  }
}

/** A function's place, coarsely: this project's folder, a package, Node's own JavaScript, or native code. */
function groupOf(url: string, functionName: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1]!;
  const own = /\/(?:src|dist\/src)\/((?:[^/]+\/)?)/.exec(url);
  if (own !== null) return `src/${own[1]}`;
  if (url.startsWith("node:")) return "node (JavaScript)";
  if (url === "") return /^\(/.test(functionName) ? functionName : `native: ${functionName}`;
  return "other";
}
