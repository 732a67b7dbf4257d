// What the CLI prints of text it did not write (a webhook receiver's answer,
// a URL, a reason): control characters, C1 controls and the bidirectional
// overrides are shown as escapes, so that such text can neither recolour or
// clear the operator's terminal nor fake lines or reorder what is shown. The
// stores and the RPC keep the bytes as they came.

// eslint-disable-next-line no-control-regex
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function terminalText(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}
