// How deep JSON text nests, found from the text before JSON.parse builds it.
// JSON.parse of a line nested a million levels deep held the event loop
// hundreds of times as long as a flat line of that size, and any recursive
// walk of what it builds exhausts the stack; the scan costs about as much
// as reading the text once (bench:hardening -- --parts bad).

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_OBJECT = 123;
const OPEN_ARRAY = 91;
const CLOSE_OBJECT = 125;
const CLOSE_ARRAY = 93;

/**
 * Where `text` nests deeper than `maxDepth` objects and arrays (the
 * outermost is depth 1), if it does: the top-level field holding that
 * value (the last string at depth 1 before it: its key), or "record" when
 * there is none. Brackets inside strings do not count; strings are skipped
 * with indexOf. Text that is not JSON is left to JSON.parse to describe.
 */
export function deepFieldOfText(text: string, maxDepth: number): string | undefined {
  let depth = 0;
  let keyStart = -1;
  let keyEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = i;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end < 0) return undefined;
        // Escaped when an odd number of backslashes precede it.
        let k = end - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
      }
      if (depth === 1) {
        keyStart = i;
        keyEnd = end;
      }
      i = end;
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > maxDepth) return keyStart < 0 ? "record" : fieldName(text.slice(keyStart, keyEnd + 1));
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return undefined;
}

function fieldName(quoted: string): string {
  try {
    return String(JSON.parse(quoted));
  } catch {
    return "record";
  }
}
