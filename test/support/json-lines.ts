import { spawn, type SpawnOptions } from "node:child_process";
import type { Readable } from "node:stream";

/** The JSON lines a child process writes, parsed into the returned array as they arrive. */
export function jsonLines<T>(stream: Readable): T[] {
  const lines: T[] = [];
  let buffer = "";
  stream.on("data", (d: Buffer) => {
    buffer += d.toString();
    for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
      lines.push(JSON.parse(buffer.slice(0, i)) as T);
      buffer = buffer.slice(i + 1);
    }
  });
  return lines;
}

/**
 * Runs a program to its end and resolves with the JSON lines it printed;
 * rejects, with its stderr, when it exits non-zero, or with what it printed
 * when that is not JSON lines. Read at "close", not "exit": the pipes may
 * still hold output when the process has exited.
 */
export function runJsonLines(command: string, args: string[], options: SpawnOptions = {}): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, options);
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.once("close", (code) => {
      if (code !== 0) return reject(new Error(`${command} exited ${code}: ${stderr}`));
      try {
        resolve(stdout.trim().split("\n").map((l) => JSON.parse(l) as unknown));
      } catch (err) {
        reject(new Error(`${command} printed what is not JSON lines (${String(err)}): ${stdout.slice(0, 200)}…`));
      }
    });
  });
}
