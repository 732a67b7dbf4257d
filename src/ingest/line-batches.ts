import { isUtf8 } from "node:buffer";

// NDJSON lines read a chunk at a time. readline hands over one line per
// event and one promise per line to an async iterator: on a 1M-sale import
// that was about a tenth of the CLI's time (bench:import). Here a chunk's
// complete lines come out as one array, split with indexOf.
//
// Lines are checked to be UTF-8 before they are decoded: a decoder would
// turn a broken sequence into U+FFFD and the record would be stored so. A
// chunk's complete lines are checked at once (simdutf: gigabytes a second);
// only when they hold a broken sequence are its lines checked one by one,
// and those that are not UTF-8 come out as NotUtf8, for the importer to
// reject by number.

/** A line that is not UTF-8 text: rejected, never decoded. */
export class NotUtf8 {
  constructor(readonly bytes: number) {}
}

export type Line = string | NotUtf8;

const NL = 0x0a;

/**
 * The lines of `input` in batches, one per chunk read: split on "\n", a
 * trailing "\r" dropped (CRLF files), the last line kept even without a
 * final newline. Multi-byte characters split across chunks are decoded whole.
 */
export async function* lineBatches(input: AsyncIterable<Buffer | string>): AsyncGenerator<Line[]> {
  // The bytes after the last newline seen, in the pieces they came in (a long line spans chunks).
  let rest: Buffer[] = [];
  for await (const chunk of input) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const last = buf.lastIndexOf(NL);
    if (last < 0) {
      rest.push(buf);
      continue;
    }
    const complete = rest.length === 0 ? buf.subarray(0, last) : Buffer.concat([...rest, buf.subarray(0, last)]);
    rest = last + 1 < buf.length ? [buf.subarray(last + 1)] : [];
    yield splitLines(complete);
  }
  const tail = Buffer.concat(rest);
  if (tail.length > 0) yield splitLines(tail);
}

/** The lines of `bytes` (every one complete; no newline after the last). */
export function splitLines(bytes: Buffer): Line[] {
  const lines: Line[] = [];
  if (isUtf8(bytes)) {
    const text = bytes.toString("utf8");
    let start = 0;
    for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", start)) {
      lines.push(withoutCr(text.slice(start, nl)));
      start = nl + 1;
    }
    lines.push(withoutCr(text.slice(start)));
    return lines;
  }
  let start = 0;
  for (;;) {
    const nl = bytes.indexOf(NL, start);
    const line = bytes.subarray(start, nl < 0 ? bytes.length : nl);
    lines.push(isUtf8(line) ? withoutCr(line.toString("utf8")) : new NotUtf8(line.length));
    if (nl < 0) return lines;
    start = nl + 1;
  }
}

const withoutCr = (line: string) => (line.endsWith("\r") ? line.slice(0, -1) : line);
