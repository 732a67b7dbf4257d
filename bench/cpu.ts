import { readdirSync, readFileSync } from "node:fs";

// Where a load round's CPU went, from /proc (Linux): the CPU time of process
// trees (a server and its workers; a PostgreSQL postmaster and its backends)
// and of single processes (the load generator), and the machine's busy share;
// and a process tree's memory (bench:soak).
// On a 2-core machine this says what one more server could use, which a
// throughput ratio alone cannot.

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

interface Proc {
  ppid: number;
  ticks: number;
}

function processes(): Map<number, Proc> {
  const out = new Map<number, Proc>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command may hold spaces and parentheses: fields start after the last ")".
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) });
    } catch {
      // The process ended while /proc was read.
    }
  }
  return out;
}

/** The pids `roots` and, with `tree`, every descendant of them. */
function members(procs: Map<number, Proc>, roots: number[], tree: boolean): Set<number> {
  const children = new Map<number, number[]>();
  if (tree) for (const [pid, p] of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  const seen = new Set<number>();
  const stack = [...roots];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return seen;
}

/** CPU seconds used so far by each group: `tree` counts every descendant of the root pids. */
export function cpuSeconds(groups: Record<string, { pids: number[]; tree: boolean }>): Record<string, number> {
  const procs = processes();
  const result: Record<string, number> = {};
  for (const [name, g] of Object.entries(groups)) {
    let ticks = 0;
    for (const pid of members(procs, g.pids, g.tree)) ticks += procs.get(pid)?.ticks ?? 0;
    result[name] = ticks / TICKS_PER_SECOND;
  }
  return result;
}

/** The resident set of `pid` and every process under it, and of it the file-backed pages (mapped files), MB. */
export function treeMemoryMb(pid: number): { rss: number; file: number } {
  let kb = 0;
  let fileKb = 0;
  for (const p of members(processes(), [pid], true)) {
    try {
      const status = readFileSync(`/proc/${p}/status`, "utf8");
      kb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      fileKb += Number(/RssFile:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // The process ended while /proc was read.
    }
  }
  return { rss: kb / 1024, file: fileKb / 1024 };
}

/** Busy and total CPU seconds of the whole machine so far (all cores). */
export function machineSeconds(): { busy: number; total: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  const idle = v[3]! + (v[4] ?? 0);
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

/** Runs `work` and returns its result with the CPU seconds each group and the machine spent meanwhile. */
export async function measureCpu<T>(
  groups: Record<string, { pids: number[]; tree: boolean }>,
  work: () => Promise<T>,
): Promise<{ result: T; cpu: Record<string, number>; machine: { busy: number; total: number } }> {
  const before = cpuSeconds(groups);
  const m0 = machineSeconds();
  const result = await work();
  const after = cpuSeconds(groups);
  const m1 = machineSeconds();
  const cpu: Record<string, number> = {};
  for (const k of Object.keys(groups)) cpu[k] = after[k]! - before[k]!;
  return { result, cpu, machine: { busy: m1.busy - m0.busy, total: m1.total - m0.total } };
}
