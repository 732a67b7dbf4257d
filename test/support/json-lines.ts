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
